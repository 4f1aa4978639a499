//! Memory mined from past sessions (docs/memory.md#mining) through the
//! real binary against the fake server, whose scripted extractor answers
//! the mining requests: which sessions are mined and how often, what the
//! request holds, `auto`, retries, and that a turn never waits (review:
//! `mining_review.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Stdio;
use std::time::{Duration, Instant};

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::{Fx, run_with_stdin};
use crate::mining_fixture::{OLD, Spec, extractor, mined_text, mx, mx_extracting};
use crate::util::{json_lines, stderr, stdout};

#[test]
fn eligible_sessions_get_one_request_each_and_a_second_start_none() {
    let fx = mx("mine_min_user_messages = 3\n");
    let a = fx.past_session("a", &["alpha one", "alpha two", "alpha three"]);
    fx.past_session("b", &["bravo one", "bravo two", "bravo three"]);
    fx.past_session("short", &["short one", "short two"]);
    fx.write_session(
        "child",
        &Spec {
            users: &["child one", "child two", "child three"],
            parent: Some(&a),
            ..Spec::default()
        },
    );
    // A fork of `a` (its first 6 records copied) that added three messages.
    fx.write_session(
        "fork",
        &Spec {
            users: &[
                "alpha one",
                "alpha two",
                "alpha three",
                "fork one",
                "fork two",
                "fork three",
            ],
            fork: Some((&a, 6)),
            ..Spec::default()
        },
    );
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "hello"]);

    let texts: Vec<String> = fx.miners().iter().map(mined_text).collect();
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert!(texts.iter().any(|t| t.contains("alpha three")));
    assert!(texts.iter().any(|t| t.contains("bravo three")));
    let fork = texts
        .iter()
        .find(|t| t.contains("fork one"))
        .expect("the fork is mined");
    assert!(
        !fork.contains("alpha"),
        "a fork's copied history is not mined: {fork}"
    );
    for t in &texts {
        assert!(!t.contains("short one") && !t.contains("child one"), "{t}");
    }
    // The session `run` itself opened is new, and never mined.
    assert!(texts.iter().all(|t| !t.contains("hello")));

    fx.fake.push(Reply::text("hi again"));
    fx.eonyx_ok(&["run", "hello again"]);
    assert_eq!(fx.miners().len(), 3, "nothing is mined twice");
}

#[test]
fn recent_sessions_wait_and_memory_mine_session_ignores_idle_and_minimum() {
    let fx = Fx::with(|c| c.merge_top_toml("[memory]\nmine_idle_hours = 1\n").unwrap());
    let now = eonyx_core::time::now_rfc3339();
    let recent = fx.write_session(
        "recent",
        &Spec {
            users: &["recent one", "recent two", "recent three"],
            ts: Some(now),
            ..Spec::default()
        },
    );
    let short = fx.past_session("short", &["short only"]);
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "hello"]);
    assert!(
        fx.miners().is_empty(),
        "a recent or short session is not mined"
    );

    let out = fx.eonyx_ok(&["memory", "mine", "--session", &recent]);
    assert_eq!(fx.miners().len(), 1, "{}", stderr(&out));
    fx.eonyx_ok(&["memory", "mine", "--session", &short]);
    assert_eq!(fx.miners().len(), 2);
    assert!(mined_text(&fx.miners()[1]).contains("short only"));
    assert!(
        stderr(&out).contains("mined 1 session(s)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_request_holds_the_users_words_not_context_files_keys_or_long_results() {
    let key = "sk-mining-test-0123456789";
    let fx = Fx::with(|c| {
        c.set("api_key_env", "MINE_TEST_KEY")
            .merge_top_toml("[memory]\nmine_idle_hours = 0\n")
            .unwrap()
    });
    fx.sb
        .write("work/AGENTS.md", "CONTEXT-FILE-RULE: always use tabs.\n");
    fx.eonyx_ok(&["memory", "add", "Staging is read-only"]);
    let long = "R".repeat(1000);
    let tail = format!(
        "{}\n{}\n",
        json!({"type": "message", "seq": 7, "ts": OLD, "role": "assistant", "content": "",
               "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}]}),
        json!({"type": "message", "seq": 8, "ts": OLD, "role": "tool", "tool_call_id": "c1", "content": long}),
    );
    fx.write_session(
        "s",
        &Spec {
            users: &[
                "we use pnpm, never npm",
                &format!("my key is {key}"),
                "thanks",
            ],
            tail: &tail,
            ..Spec::default()
        },
    );
    fx.fake.push(Reply::text("hi"));
    let mut cmd = fx.cmd(&["run", "hello"]);
    cmd.env("MINE_TEST_KEY", key);
    let out = run_with_stdin(cmd, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let miners = fx.miners();
    assert_eq!(miners.len(), 1);
    let body = &miners[0].raw_body;
    let text = mined_text(&miners[0]);
    assert!(text.contains("we use pnpm, never npm"), "{text}");
    assert!(text.contains("tool call read_file"), "{text}");
    assert!(
        text.contains("Staging is read-only"),
        "existing entries are listed: {text}"
    );
    assert!(!body.contains("CONTEXT-FILE-RULE"), "{body}");
    assert!(!body.contains(key), "{body}");
    assert!(text.contains("[redacted: MINE_TEST_KEY]"), "{text}");
    assert!(
        !body.contains(&"R".repeat(301)),
        "a tool result is cut to 300 characters"
    );
    assert!(body.contains(&"R".repeat(300)));
    // Structured output where the server supports it.
    assert_eq!(
        miners[0].body["response_format"]["type"], "json_schema",
        "{body}"
    );
    assert!(
        miners[0]
            .system_text()
            .starts_with(eonyx_core::MINER_SYSTEM_PREFIX)
    );
}

#[test]
fn auto_accepts_at_once_and_the_next_start_announces_each_entry_once() {
    let fx = mx_extracting(
        "mine = \"auto\"\n",
        json!([
            {"text": "The shop deploys with make ship", "scope": "project", "evidence_seq": 1},
        ]),
    );
    let id = fx.past_session("7", &["one", "two", "three"]);
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "hello"]);
    let entries: Value =
        serde_json::from_str(&stdout(&fx.eonyx_ok(&["memory", "--json"]))).unwrap();
    assert_eq!(entries[0]["text"], "The shop deploys with make ship");
    assert_eq!(entries[0]["session"], id.as_str());

    fx.fake.push(Reply::text("hi"));
    let next = stderr(&fx.eonyx_ok(&["run", "again"]));
    let line = next
        .lines()
        .find(|l| l.contains("learned from session"))
        .unwrap_or_else(|| panic!("{next}"));
    assert!(
        line.contains(&id) && line.contains("\"7\"") && line.contains("make ship"),
        "{line}"
    );
    fx.fake.push(Reply::text("hi"));
    let third = stderr(&fx.eonyx_ok(&["run", "once more"]));
    assert!(
        !third.contains("learned from session"),
        "announced once: {third}"
    );
}

#[test]
fn a_turn_started_while_mining_runs_is_sent_before_the_mining_reply_arrives() {
    let fx = mx("");
    fx.fake.set_extractor(|_| {
        Reply::text(r#"{"memories": []}"#).with_delay(Duration::from_millis(2500))
    });
    fx.past_session("a", &["one", "two", "three"]);
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "hello"]);
    let spans = fx.fake.spans();
    let all = fx.fake.requests();
    let miner = spans
        .iter()
        .find(|s| all[s.request].is_miner())
        .expect("a mining request");
    let turn = spans
        .iter()
        .find(|s| !all[s.request].is_miner())
        .expect("the turn's request");
    let mining_reply = miner
        .ended
        .expect("the mining reply ended (within run's 5 s)");
    assert!(
        turn.started < mining_reply,
        "the turn waited for mining: {spans:#?}"
    );
    // It completed, so the session is marked.
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "again"]);
    assert_eq!(fx.miners().len(), 1);
}

#[test]
fn a_reply_that_is_not_json_is_retried_at_a_later_start_then_failed() {
    let fx = mx("");
    fx.fake
        .set_extractor(|_| Reply::text("Sure! The user likes pnpm."));
    fx.past_session("a", &["one", "two", "three"]);
    fx.eonyx_ok(&["memory", "mine"]);
    fx.fake.push(Reply::text("hi"));
    let out = fx.eonyx_ok(&["run", "hello"]);
    assert!(stderr(&out).contains("not tried again"), "{}", stderr(&out));
    assert_eq!(fx.miners().len(), 2, "a foreground mine counts as a start");
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "again"]);
    assert_eq!(fx.miners().len(), 2, "failed: not tried again");
}

#[test]
fn a_missing_mining_model_is_one_warning_never_a_failed_turn_and_retried_later() {
    let fx = mx("");
    fx.fake.set_extractor(|_| {
        Reply::error(
            404,
            r#"{"error": {"message": "model not found", "type": "not_found_error"}}"#,
        )
    });
    fx.past_session("a", &["one", "two", "three"]);
    fx.past_session("b", &["four", "five", "six"]);
    fx.fake.push(Reply::text("the answer"));
    let out = fx.eonyx_ok(&["run", "hello"]);
    assert_eq!(stdout(&out).trim(), "the answer");
    let err = stderr(&out);
    assert_eq!(
        err.matches("memory mining").count(),
        1,
        "one warning: {err}"
    );
    assert_eq!(fx.miners().len(), 1, "the pass stops at a missing model");
    fx.fake.set_extractor(extractor(json!([])));
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "again"]);
    assert_eq!(fx.miners().len(), 3, "both are tried at the next start");
}

#[test]
fn an_open_session_is_never_mined_and_a_project_may_turn_mining_off() {
    let fx = mx("");
    let open = fx.past_session("open", &["open one", "open two", "open three"]);
    fx.past_session("idle", &["idle one", "idle two", "idle three"]);
    // A batch run holding `open` (its stdin stays open).
    let mut holder = fx.cmd(&["-s", &open]);
    holder
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    fx.sb
        .write("work/eonyx.json", r#"{"memory": {"mine": "off"}}"#);
    let mut child = holder.spawn().unwrap();
    let lock = fx.sb.data.join("locks").join(format!("{open}.lock"));
    let pid = child.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&lock).map_or(true, |s| s.trim() != pid) {
        assert!(
            Instant::now() < deadline,
            "the holder never opened the session"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        fx.miners().is_empty(),
        "a project's memory.mine = \"off\" mines nothing"
    );
    fx.sb.write("work/eonyx.json", "{}\n");
    fx.eonyx_ok(&["memory", "mine", "--all"]);
    let texts: Vec<String> = fx.miners().iter().map(mined_text).collect();
    let refused = run_with_stdin(fx.cmd(&["memory", "mine", "--session", &open]), "");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(texts.len(), 1, "{texts:#?}");
    assert!(texts[0].contains("idle one"));
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        stderr(&refused).contains("is open in another eonyx process"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(fx.miners().len(), 1);
}

#[test]
fn a_torn_or_huge_session_is_mined_from_what_reads_within_the_budget() {
    let fx = mx("mine_budget_tokens = 1000\n");
    let mut users: Vec<String> = vec!["FIRST: we use pnpm".into()];
    users.extend((0..300).map(|i| format!("filler message number {i} {}", "x".repeat(100))));
    users.push("LAST: never touch generated/".into());
    let refs: Vec<&str> = users.iter().map(String::as_str).collect();
    fx.write_session(
        "big",
        &Spec {
            users: &refs,
            tail: "not json at all\n{\"type\":\"message\",\"seq\":",
            ..Spec::default()
        },
    );
    fx.eonyx_ok(&["memory", "mine"]);
    let miners = fx.miners();
    assert_eq!(miners.len(), 1);
    let text = mined_text(&miners[0]);
    assert!(
        text.contains("FIRST: we use pnpm") && text.contains("LAST: never touch generated/"),
        "{text}"
    );
    assert!(text.contains("left out to fit the budget"));
    assert!(text.chars().count() < 6000, "{}", text.chars().count());
}

#[test]
fn run_abandons_a_mining_request_still_out_after_five_seconds_unmarked() {
    let fx = mx("");
    fx.fake
        .set_extractor(|_| Reply::text(r#"{"memories": []}"#).with_delay(Duration::from_secs(40)));
    fx.past_session("a", &["one", "two", "three"]);
    fx.fake.push(Reply::text("hi"));
    let out = fx.eonyx_ok(&["run", "hello"]);
    assert_eq!(stdout(&out).trim(), "hi");
    assert_eq!(fx.miners().len(), 1);
    fx.fake.set_extractor(extractor(json!([])));
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "again"]);
    assert_eq!(
        fx.miners().len(),
        2,
        "the abandoned session is mined at the next start"
    );
}

#[test]
fn the_repl_says_how_many_memories_wait_before_its_first_prompt() {
    use crate::agent_repl::{prompt_count, start_repl};
    let fx = mx_extracting(
        "",
        json!([
            {"text": "We use pnpm, never npm", "scope": "project", "evidence_seq": 1},
        ]),
    );
    let id = fx.past_session("a", &["one", "two", "three"]);
    fx.eonyx_ok(&["memory", "mine"]);
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the waiting line", |p| {
        p.contains("1 memory proposed from earlier sessions: /memory review")
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    // The REPL only says it: the proposal still waits, and nothing reached
    // the memory file.
    let waiting = fx.review_json();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["text"], "We use pnpm, never npm");
    assert_eq!(waiting[0]["session"], id.as_str());
    let entries: Value =
        serde_json::from_str(&stdout(&fx.eonyx_ok(&["memory", "--json"]))).unwrap();
    assert_eq!(entries.as_array().map(Vec::len), Some(0), "{entries}");
}

#[test]
fn concurrent_starts_never_mine_one_session_twice_and_status_shows_the_cost() {
    let fx = mx("");
    fx.fake.set_extractor(|_| {
        Reply::text(r#"{"memories": []}"#).with_delay(Duration::from_millis(300))
    });
    for t in ["a", "b", "c"] {
        fx.past_session(t, &["one", "two", "three"]);
    }
    let spawn = || {
        fx.cmd(&["memory", "mine", "--all"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (spawn(), spawn());
    for child in [one, two] {
        let out = crate::agent::wait_output(child, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_eq!(fx.miners().len(), 3, "each session once");

    fx.fake.push(Reply::text("hi"));
    let out = run_with_stdin(fx.cmd(&["--json"]), "hello\n/status\n");
    let status = json_lines(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "status")
        .unwrap();
    assert_eq!(status["mining"]["requests"], 3, "{status}");
    assert!(status["mining"]["prompt_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn what_a_rewind_took_back_never_reaches_the_miner() {
    let fx = mx("");
    let ts = OLD;
    // #5 (user) and #6 (assistant) are rewound by #7; #8 follows the rewind.
    let tail = format!(
        "{}\n{}\n",
        json!({"type": "rewind", "seq": 7, "ts": ts, "to_seq": 4}),
        json!({"type": "message", "seq": 8, "ts": ts, "role": "user", "content": "after the rewind: tests live in tests/"}),
    );
    fx.write_session(
        "rewound",
        &Spec {
            users: &["we use pnpm", "second thing", "RETRACTED: we use npm"],
            tail: &tail,
            ..Spec::default()
        },
    );
    fx.eonyx_ok(&["memory", "mine"]);
    let miners = fx.miners();
    assert_eq!(miners.len(), 1);
    let text = mined_text(&miners[0]);
    assert!(text.contains("we use pnpm"), "{text}");
    assert!(text.contains("after the rewind"), "{text}");
    assert!(!text.contains("RETRACTED"), "{text}");
}

#[test]
fn mining_runs_in_the_background_once_an_acp_session_starts() {
    let fx = mx_extracting(
        "",
        json!([
            {"text": "We use pnpm, never npm", "scope": "project", "evidence_seq": 1},
        ]),
    );
    let id = fx.past_session("acp", &["one", "two", "three"]);
    let (mut c, s) = crate::acp_util::started(&fx);
    crate::agent::wait_for(
        "a mining request after the ACP start",
        Duration::from_secs(60),
        || !fx.miners().is_empty(),
    );
    // A prompt still goes through while (or after) it mines.
    fx.fake.push(Reply::text("hi from acp"));
    let r = c.prompt(&s, "hello");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    crate::agent::wait_for("the proposal", Duration::from_secs(60), || {
        !fx.review_json().is_empty()
    });
    c.finish_ok();
    assert_eq!(fx.miners().len(), 1);
    let waiting = fx.review_json();
    assert_eq!(waiting[0]["session"], id.as_str());
    assert!(mined_text(&fx.miners()[0]).contains("three"));
}
