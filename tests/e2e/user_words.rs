//! What the user said survives every compaction, verbatim, and `/pin`
//! (issue 57, docs/compaction.md#what-the-user-said): batch runs against
//! the fake with a summarizer that keeps nothing, asserting on what the
//! model received after each compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{FORGETFUL_SUMMARY, FakeServer, RecordedRequest, Reply, TestEnv};
use serde_json::{Value, json};

use crate::compaction::{
    Batch, SUMMARY_HEADING, batch, compactions, convo, env_with, export, openai, windowed,
};

const HEADING: &str = "## What the user said";

/// The fake with a `window`-token window whose summarizer keeps nothing,
/// whose model reads `big-N.txt` when a line asks it to and calls
/// `recall` for `lookup: WORD`, and otherwise answers "ok".
fn forgetful_server(window: u64) -> FakeServer {
    let server = FakeServer::start();
    server.set_context_window(Some(window));
    server.set_responder(|r: &RecordedRequest| {
        if r.is_summarizer() {
            return Some(Reply::text(FORGETFUL_SUMMARY));
        }
        let last = r.messages().last().cloned().unwrap_or_default();
        let text = last["content"].as_str().unwrap_or_default().to_owned();
        if last["role"] != "user" {
            return None;
        }
        if let Some(n) = text.strip_prefix("please read big file ") {
            return Some(Reply::tool_call(
                "read_file",
                json!({"path": format!("big-{n}.txt")}),
            ));
        }
        text.strip_prefix("lookup: ")
            .map(|w| Reply::tool_call("recall", json!({"query": w})))
    });
    server
}

/// The requests the agent sent right after each compaction, in order
/// (the first non-summarizer request after each run of summarizer ones).
fn after_each_compaction(server: &FakeServer) -> Vec<RecordedRequest> {
    let all = server.chat_requests();
    let mut out = Vec::new();
    let mut pending = false;
    for r in all {
        if r.is_summarizer() {
            pending = true;
        } else if pending {
            out.push(r);
            pending = false;
        }
    }
    out
}

/// The `seq` of the user message `text` in the session's records.
fn seq_of(records: &[Value], text: &str) -> u64 {
    records
        .iter()
        .find(|r| r["type"] == "message" && r["role"] == "user" && r["content"] == text)
        .unwrap_or_else(|| panic!("no user message {text:?}"))["seq"]
        .as_u64()
        .unwrap()
}

/// Between two compactions every request extends the previous one byte
/// for byte: same system prompt, the earlier messages as a prefix.
fn assert_append_only(server: &FakeServer) -> usize {
    let mut checked = 0;
    let mut prev: Option<RecordedRequest> = None;
    for r in server.chat_requests() {
        if r.is_summarizer() {
            prev = None;
            continue;
        }
        if let Some(a) = &prev {
            assert_eq!(a.system_text(), r.system_text(), "the prefix changed");
            let (ma, mb) = (convo(a), convo(&r));
            assert!(mb.len() > ma.len());
            assert_eq!(mb[..ma.len()], ma[..], "a request is not append-only");
            checked += 1;
        }
        prev = Some(r);
    }
    checked
}

fn unrelated(n: usize) -> String {
    format!(
        "note {n:02}: the weather log shows nothing unusual on day {n}, carry on with the routine checks"
    )
}

fn ok(run: &Batch) {
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
}

#[test]
fn constraints_decisions_owners_and_that_rule_survive_three_compactions_verbatim() {
    const WINDOW: u64 = 16_384;
    let server = forgetful_server(WINDOW);
    let env = env_with(&windowed(openai(&server), WINDOW, 50.0, 1));
    let big: String = (0..300)
        .map(|i| format!("row {i}: filler data that nobody needs\n"))
        .collect();
    for n in 1..=8 {
        std::fs::write(env.project.join(format!("big-{n}.txt")), &big).unwrap();
    }
    let planted = [
        "Task: build the importer. Constraint: never touch migrations/ and keep it Python 3.9 compatible.",
        "Decision: use Postgres for the cache.",
        "Grace owns the retry budgets task.",
        "Rule: every public function gets a docstring.",
        "Change of plan: use SQLite for the cache, not Postgres.",
        "Omar owns the parser task.",
        "Apply that rule to the fixtures too.",
    ];
    let mut lines = vec![planted[0].to_owned()];
    let mut next_plant = 1;
    let mut read = 0;
    for n in 1..=50 {
        lines.push(unrelated(n));
        if n % 8 == 0 && next_plant < planted.len() {
            lines.push(planted[next_plant].to_owned());
            next_plant += 1;
        }
        if n % 6 == 0 && read < 8 {
            read += 1;
            lines.push(format!("please read big file {read}"));
        }
    }
    for p in &planted[next_plant..] {
        lines.push((*p).to_owned());
    }
    for n in 51..=60 {
        lines.push(unrelated(n));
        if n % 3 == 0 && read < 8 {
            read += 1;
            lines.push(format!("please read big file {read}"));
        }
    }
    let run = batch(&env, &lines, &[], &[]);
    ok(&run);
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert!(comps.len() >= 3, "only {} compactions", comps.len());
    for r in server.chat_requests() {
        assert!(r.prompt_tokens <= WINDOW, "{} tokens", r.prompt_tokens);
    }

    let third = &after_each_compaction(&server)[2];
    let system = third.system_text();
    assert!(system.contains(SUMMARY_HEADING));
    // The summary itself kept nothing: the section is what holds them.
    assert!(
        comps[2]["summary"]
            .as_str()
            .unwrap()
            .starts_with(FORGETFUL_SUMMARY)
    );
    let said = &system[system.find(HEADING).expect("the section")..];
    let boundary = comps[2]["first_kept_seq"].as_u64().unwrap();
    let mut at = Vec::new();
    for p in planted {
        let seq = seq_of(&records, p);
        if seq >= boundary {
            continue;
        }
        let line = format!("[#{seq}] {p}");
        at.push((
            p,
            said.find(&line)
                .unwrap_or_else(|| panic!("{line:?} missing:\n{said}")),
        ));
    }
    assert!(
        at.len() >= 5,
        "most of the planted lines were compacted: {at:?}"
    );
    let pos = |p: &str| at.iter().find(|(q, _)| *q == p).map(|(_, i)| *i);
    if let (Some(old), Some(new)) = (pos(planted[1]), pos(planted[4])) {
        assert!(old < new, "the override comes after what it overrides");
    }
    // Tool output and the files' rows are not in it.
    assert!(!said.contains("filler data"));
    assert!(said.contains("please read big file 1"));
    // JSON events carry the counts.
    let ev = run.of_type("compaction");
    assert!(
        ev.iter()
            .all(|e| e["user_words"]["kept"].as_u64().unwrap() > 0)
    );
    assert!(ev.iter().all(|e| e["user_words"]["left_out"] == 0));
    // Between compactions the requests are append-only.
    assert!(assert_append_only(&server) > 30);
    // Each summarizer was told which user messages eonyx keeps itself.
    for r in server.chat_requests().iter().filter(|r| r.is_summarizer()) {
        let asked = r.messages().last().unwrap()["content"].to_string();
        assert!(asked.contains("verbatim after your summary"), "{asked}");
    }
}

#[test]
fn a_40000_character_paste_keeps_its_start_and_end_and_nothing_overflows() {
    const WINDOW: u64 = 32_768;
    let server = forgetful_server(WINDOW);
    let env = env_with(&windowed(openai(&server), WINDOW, 50.0, 1));
    let mut paste = String::from("PASTE-START ");
    while paste.len() < 19_000 {
        paste.push_str("lorem ipsum dolor sit amet ");
    }
    paste.push_str("PASTE-MIDDLE ");
    while paste.len() < 39_980 {
        paste.push_str("consectetur adipiscing elit ");
    }
    paste.push_str(" PASTE-END");
    let mut lines = vec![paste.clone()];
    lines.extend((1..=30).map(|n| format!("{} {}", unrelated(n), "padding ".repeat(60))));
    let run = batch(&env, &lines, &[], &[]);
    ok(&run);
    for r in server.chat_requests() {
        assert!(r.prompt_tokens <= WINDOW, "{} tokens", r.prompt_tokens);
    }
    let after = after_each_compaction(&server);
    let first = after.first().expect("a compaction");
    let system = first.system_text();
    let said = &system[system.find(HEADING).expect("the section")..];
    assert!(said.contains("[#1] PASTE-START lorem ipsum"), "{said}");
    assert!(said.contains("elit  PASTE-END") || said.contains("PASTE-END"));
    assert!(!said.contains("PASTE-MIDDLE"));
    assert!(
        said.contains("characters of this message cut here; `recall` returns it whole"),
        "{said}"
    );
}

#[test]
fn far_over_the_budget_the_first_and_newest_stay_the_gap_is_named_and_recall_returns_it() {
    const WINDOW: u64 = 16_384;
    let server = forgetful_server(WINDOW);
    let env = env_with(
        &windowed(openai(&server), WINDOW, 50.0, 1)
            .merge_model_toml("compaction.user_words_tokens = 400")
            .unwrap(),
    );
    let first = "first: the task is CODEWORD-ALPHA".to_owned();
    let mut lines = vec![first.clone()];
    lines.extend((2..=150).map(|n| {
        format!(
            "message {n:03} QUOKKA{n:03} {}",
            "the routine status line goes here ".repeat(8)
        )
    }));
    lines.push("lookup: QUOKKA060".to_owned());
    let run = batch(&env, &lines, &[], &[]);
    ok(&run);
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    let last = comps.last().expect("compacted");
    assert!(
        last["user_words"]["left_out"].as_u64().unwrap() > 50,
        "{last}"
    );
    let req = after_each_compaction(&server).pop().unwrap();
    let system = req.system_text();
    let said = &system[system.find(HEADING).unwrap()..];
    assert!(said.contains(&format!("[#1] {first}")), "{said}");
    // The newest compacted message is there, and the gap is named.
    let boundary = last["first_kept_seq"].as_u64().unwrap();
    let newest = records
        .iter()
        .rev()
        .find(|r| {
            r["type"] == "message" && r["role"] == "user" && r["seq"].as_u64().unwrap() < boundary
        })
        .unwrap();
    let newest = format!(
        "[#{}] {}",
        newest["seq"],
        newest["content"].as_str().unwrap()
    );
    assert!(said.contains(&newest), "{newest} missing:\n{said}");
    let gap = said
        .lines()
        .find(|l| l.contains("left out here"))
        .expect("the gap line");
    assert!(gap.contains("(#3–#"), "{gap}");
    assert!(gap.contains("`recall` returns them verbatim"), "{gap}");
    assert!(!said.contains("QUOKKA060"));
    // `recall` returns the left-out message exactly.
    let wanted = lines.iter().find(|l| l.contains("QUOKKA060")).unwrap();
    let result = records.iter().rev().find(|r| r["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    // (Batch input is stored trimmed.)
    assert!(result.contains(wanted.trim_end()), "{result}");
}

/// Requests after each compaction of a batch with pins.
fn pin_env(server: &FakeServer) -> TestEnv {
    env_with(&windowed(openai(server), 8192, 60.0, 1))
}

#[test]
fn a_pin_survives_three_compactions_and_compact_is_listed_and_unpinned_at_the_next() {
    let server = forgetful_server(8192);
    let env = pin_env(&server);
    const PIN: &str = "never touch migrations/ (CODEWORD-PIN)";
    let mut lines = vec![
        "start the work".to_owned(),
        format!("/pin {PIN}"),
        "/pins".to_owned(),
    ];
    lines.extend((1..=30).map(|n| format!("{} {}", unrelated(n), "padding ".repeat(80))));
    lines.push("/compact".to_owned());
    lines.push("after the manual compaction".to_owned());
    lines.push("/unpin 1".to_owned());
    lines.extend((31..=45).map(|n| format!("{} {}", unrelated(n), "padding ".repeat(80))));
    let run = batch(&env, &lines, &[], &[]);
    ok(&run);
    assert!(
        run.stderr().contains(&format!("1. {PIN}")),
        "/pins lists it: {}",
        run.stderr()
    );
    // At once, as a notice, without changing the prefix.
    let pinned_now = server
        .chat_requests()
        .into_iter()
        .find(|r| !r.is_summarizer() && r.user_texts().iter().any(|t| t.contains(PIN)))
        .expect("a request with the notice");
    assert!(
        pinned_now
            .user_texts()
            .contains(&format!("[pinned by the user: {PIN}]"))
    );
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    let manual = comps
        .iter()
        .position(|c| c["trigger"] == "manual")
        .expect("the /compact");
    assert!(manual >= 3, "three automatic compactions first: {comps:?}");
    let unpin_seq = records
        .iter()
        .find(|r| r["type"] == "pin" && r["event"] == "removed")
        .expect("the unpin record")["seq"]
        .as_u64()
        .unwrap();
    let after = after_each_compaction(&server);
    assert_eq!(after.len(), comps.len());
    let line = format!("[pin 1] {PIN}");
    for (c, r) in comps.iter().zip(&after) {
        let has = r.system_text().contains(&line);
        if c["seq"].as_u64().unwrap() < unpin_seq {
            assert!(has, "compaction #{} lost the pin", c["seq"]);
            assert_eq!(c["pins"][0]["text"], PIN);
        } else {
            assert!(!has, "compaction #{} still pins it", c["seq"]);
        }
    }
    assert!(
        comps.last().unwrap()["seq"].as_u64().unwrap() > unpin_seq,
        "a compaction after the unpin"
    );
    // The notices are eonyx's, not what the user said.
    let last_said = comps.last().unwrap()["user_words"]["text"]
        .as_str()
        .unwrap();
    assert!(!last_said.contains("pinned by the user"), "{last_said}");
    assert!(last_said.contains("[#1] start the work"), "{last_said}");
}

#[test]
fn a_rewind_before_the_pin_removes_it_and_a_fork_copies_it() {
    let server = forgetful_server(8192);
    let env = pin_env(&server);
    let lines: Vec<String> = [
        "first line",
        "/pin keep the vendored copy CODEWORD-GONE",
        "/rewind 1",
        "/pins",
        "second line",
        "/pin use tabs CODEWORD-KEPT",
        "third line",
        "/fork",
        "fourth line",
        "/compact",
        "fifth line",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let run = batch(&env, &lines, &[], &[]);
    ok(&run);
    assert!(
        run.stderr().contains("no pins in this session"),
        "{}",
        run.stderr()
    );
    let last = server
        .chat_requests()
        .into_iter()
        .rfind(|r| !r.is_summarizer())
        .unwrap();
    let system = last.system_text();
    // The rewound pin took its number with it.
    assert!(
        system.contains("[pin 1] use tabs CODEWORD-KEPT"),
        "{system}"
    );
    assert!(!system.contains("CODEWORD-GONE"), "{system}");
    // The fork's own file holds a copy of the pin record.
    let sessions: Vec<&Value> = run.of_type("session");
    let fork = sessions.last().unwrap()["id"].as_str().unwrap();
    let records = export(&env, fork);
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "pin" && r["text"] == "use tabs CODEWORD-KEPT")
    );
}

#[test]
fn status_context_effective_and_exports_show_the_section_and_the_pins() {
    let server = forgetful_server(8192);
    let env = pin_env(&server);
    let lines: Vec<String> = [
        "Constraint: CODEWORD-SAID stays in the user's words",
        "/pin CODEWORD-PINNED",
        "second line",
        "third line",
        "/compact",
        "/status",
        "/context",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let run = batch(&env, &lines, &[], &[]);
    ok(&run);
    let status = run.of_type("status");
    let status = status.last().expect("a status event");
    assert_eq!(status["pins"][0]["text"], "CODEWORD-PINNED", "{status}");
    assert!(
        status["last_compaction"]["user_words"]["kept"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let err = run.stderr();
    assert!(err.contains("what the user said: "), "{err}");
    assert!(err.contains("pins: 2. CODEWORD-PINNED") || err.contains("CODEWORD-PINNED"));
    let id = run.session();
    let show = crate::compaction::run_ok(&env, &["sessions", "show", &id, "--effective"], &[]);
    assert!(show.contains(HEADING), "{show}");
    assert!(show.contains("[#1] Constraint: CODEWORD-SAID"), "{show}");
    assert!(show.contains("CODEWORD-PINNED"), "{show}");
    let shown = crate::compaction::run_ok(&env, &["sessions", "show", &id], &[]);
    assert!(shown.contains("pin 1 added"), "{shown}");
    let md = crate::compaction::run_ok(
        &env,
        &["sessions", "export", &id, "--format", "markdown"],
        &[],
    );
    assert!(md.contains("> ## What the user said"), "{md}");
    assert!(md.contains("Pinned 1: CODEWORD-PINNED"), "{md}");
    let html =
        crate::compaction::run_ok(&env, &["sessions", "export", &id, "--format", "html"], &[]);
    assert!(html.contains("What the user said ("), "{html}");
    assert!(html.contains("Pinned by the user"));
    let ctx = crate::compaction::run_ok(&env, &["context", "--json", "-s", &id], &[]);
    let ctx: Value = serde_json::from_str(&ctx).unwrap();
    assert!(ctx["user_words"]["kept"].as_u64().unwrap() >= 1, "{ctx}");
    assert_eq!(ctx["pins"][0]["text"], "CODEWORD-PINNED");
}

#[test]
fn a_goals_first_message_is_kept_and_its_continuations_are_not() {
    use crate::agent::{Fx, code};
    const GOAL: &str = "Make CODEWORD-GOAL parse every fixture";
    let fx = Fx::with(|c| {
        c.merge_model_toml("compaction.keep_turns = 1")
            .unwrap()
            .merge_top_toml("[goals]\nmax_turns = 2")
            .unwrap()
    });
    fx.fake.set_forgetful_summarizer();
    let input = format!("/goal {GOAL}\n/compact\nsomething else\n/compact\nwhere are we?\n");
    let o = fx.run(&["--json"], &input);
    assert_eq!(code(&o), Some(0), "{}", crate::util::stderr(&o));
    let last = fx.agent_requests().pop().unwrap();
    let system = last.system_text();
    let said = &system[system.find(HEADING).expect("the section")..];
    assert!(said.contains(&format!("] {GOAL}")), "{said}");
    assert!(!said.contains("goal continuation"), "{said}");
}

#[test]
fn with_native_compaction_the_section_and_the_pins_follow_the_items() {
    use crate::agent::{Fx, code};
    use eonyx_tests::NativeCompact;
    let fx = Fx::with(|c| {
        c.set("api", "responses")
            .set("compaction_native", "auto")
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap()
    });
    fx.fake.native_compaction(NativeCompact::Works);
    let input =
        "/pin CODEWORD-NPIN\nfirst CODEWORD-NSAID\n/compact\nsecond\n/compact\nwhere are we?\n";
    let o = fx.run(&["--json"], input);
    assert_eq!(code(&o), Some(0), "{}", crate::util::stderr(&o));
    assert_eq!(fx.fake.native_calls().len(), 2);
    let last = fx.agent_requests().pop().unwrap();
    let input = last.input();
    let kept = input
        .iter()
        .position(|i| {
            i["role"] == "user"
                && i["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(HEADING))
        })
        .expect("eonyx's own message after the items");
    let text = input[kept]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("[Kept by eonyx after the compacted part:"),
        "{text}"
    );
    assert!(text.contains("[pin 1] CODEWORD-NPIN"), "{text}");
    assert!(text.contains("] first CODEWORD-NSAID"), "{text}");
    assert!(
        input[..kept].iter().any(|i| i["type"] == "compaction"),
        "the items come first"
    );
    // The provider was not asked to compact eonyx's own message.
    let second_call = fx.fake.native_calls().pop().unwrap();
    assert!(
        !second_call.all_text().contains(HEADING),
        "the section went to the provider"
    );
}
