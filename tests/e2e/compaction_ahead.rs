//! Ahead-of-time compaction (issue 26) through the real binary: the
//! summary is written in the background while a batch waits for its next
//! line, so no turn waits for a summarizer. The fake's summarizer is slow
//! and its timeline says in which order requests started and ended; the
//! tests assert on that order and on what was sent, never on durations.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::time::Duration;

use eonyx_tests::{FakeServer, Paced, RecordedRequest, Span, TestEnv};
use serde_json::Value;

use crate::compaction::*;

const WINDOW: u64 = 8192;

/// The fake with an 8192-token window and the echo summarizer, and an env
/// against it compacting at 60%, summaries written ahead from 50% (the
/// default: ten points below), keeping two turns; `extra` is more model
/// TOML.
fn ahead_setup(extra: &str) -> (FakeServer, TestEnv) {
    let server = summarizing_server(WINDOW);
    let env = env_with(
        &windowed(openai(&server), WINDOW, 60.0, 2)
            .merge_model_toml(extra)
            .unwrap(),
    );
    (server, env)
}

/// Sends code-word lines `n + 1`, `n + 2`, … one a turn, each after the
/// previous turn's answer, until a turn starts writing a summary ahead
/// (before line `limit`); the number of that turn's line.
fn until_draft_starts(run: &mut Paced, n: usize, limit: usize) -> usize {
    for n in n + 1..limit {
        run.send(&codeword_line(n)).unwrap();
        let evs = run.wait_for(ended).unwrap();
        assert_eq!(evs.last().unwrap()["type"], "turn_completed", "{evs:?}");
        if evs.iter().any(is("summary_draft_started")) {
            return n;
        }
    }
    panic!("no summary was started ahead by line {limit}");
}

/// Turn `n`'s line: about 700 characters and a code word to retain.
fn codeword_line(n: usize) -> String {
    format!("{} CODEWORD-T{n:02}", line(n, 700))
}

fn is(t: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == t
}

fn ended(e: &Value) -> bool {
    e["type"] == "turn_completed" || e["type"] == "error"
}

/// Where in the fake's timeline turn `i` was: its line written, its answer
/// read.
struct Turn {
    line: usize,
    answer: usize,
}

/// A `--json` batch fed `lines` one at a time, each after the previous
/// turn's answer and, when a summary started being written after that turn
/// (its `summary_draft_started` comes before the turn's `turn_completed`),
/// after the summary was saved.
fn paced(
    env: &TestEnv,
    server: &FakeServer,
    lines: &[String],
    args: &[&str],
) -> (Vec<Turn>, Vec<Value>) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let mut run = Paced::spawn(&mut cmd(env, &all, &[])).unwrap();
    let mut turns = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let at = server.mark(format!("line {i}"));
        run.send(l).unwrap();
        let evs = run.wait_for(ended).unwrap();
        assert_eq!(evs.last().unwrap()["type"], "turn_completed", "{evs:?}");
        let answer = server.mark(format!("answer {i}"));
        turns.push(Turn { line: at, answer });
        if evs.iter().any(is("summary_draft_started")) {
            run.wait_for(is("summary_draft")).unwrap();
        }
    }
    let (status, stderr, events) = run.finish().unwrap();
    assert!(status.success(), "{stderr}");
    (turns, events)
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

fn drafts(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["type"] == "summary_draft")
        .collect()
}

fn session_of(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "session")
        .and_then(|e| e["id"].as_str())
        .unwrap()
        .to_owned()
}

/// Every agent request carries every code word of the lines sent before
/// it (verbatim or in the summary): nothing compacted is lost.
fn assert_retained(server: &FakeServer, lines: &[String]) {
    let reqs: Vec<RecordedRequest> = agent_requests(server);
    let mut checked = 0;
    for r in &reqs {
        let text = r.all_text();
        let last = r.user_texts().last().cloned().unwrap_or_default();
        let Some(n) = lines.iter().position(|l| *l == last) else {
            continue;
        };
        for l in &lines[..=n] {
            let word = codewords(l).pop().unwrap();
            assert!(text.contains(&word), "{word} lost by request of turn {n}");
        }
        checked += 1;
    }
    assert!(checked >= lines.len(), "{checked} requests checked");
}

fn summarizer_spans(server: &FakeServer) -> Vec<Span> {
    server
        .spans()
        .into_iter()
        .filter(|s| s.summarizer)
        .collect()
}

#[test]
fn a_batch_fed_line_by_line_compacts_ahead_and_no_turn_waits_for_a_summary() {
    let (server, env) = ahead_setup("");
    server.set_summarizer_delay(Duration::from_millis(200));
    let lines: Vec<String> = (1..=30).map(codeword_line).collect();
    let (turns, events) = paced(&env, &server, &lines, &[]);

    let records = export(&env, &session_of(&events));
    let comps = compactions(&records);
    assert!(comps.len() >= 2, "only {} compactions", comps.len());
    let saved = drafts(&records);
    for c in &comps {
        assert_eq!(c["mode"], "ahead", "{c}");
        // From a draft in the file, for the same boundary.
        let d = saved
            .iter()
            .find(|d| d["seq"] == c["draft_seq"])
            .unwrap_or_else(|| panic!("no draft #{} for {c}", c["draft_seq"]));
        assert_eq!(d["first_kept_seq"], c["first_kept_seq"]);
        assert!(d["seq"].as_u64() < c["seq"].as_u64());
    }
    let comp_events = of_type(&events, "compaction");
    assert_eq!(comp_events.len(), comps.len());
    assert!(comp_events.iter().all(|c| c["mode"] == "ahead"));
    assert_eq!(of_type(&events, "summary_draft").len(), saved.len());

    // No summarizer request was in flight between a line being written and
    // that turn's answer (the end of the turn's last request): each ran
    // while the batch waited for input.
    let all = server.spans();
    let spans = summarizer_spans(&server);
    assert!(spans.len() >= comps.len());
    for (i, t) in turns.iter().enumerate() {
        let answered = all
            .iter()
            .filter(|s| !s.summarizer && s.started > t.line && s.started < t.answer)
            .filter_map(|s| s.ended)
            .max()
            .unwrap_or_else(|| panic!("turn {i} sent no request"));
        for s in &spans {
            assert!(s.completed, "{s:?}");
            let overlaps = s.started < answered && s.ended.is_none_or(|e| e > t.line);
            assert!(
                !overlaps,
                "summarizer request {s:?} overlaps turn {i} ({} to {answered})",
                t.line
            );
        }
    }
    // The request after each compaction carries the summary; nothing of
    // the compacted turns was lost.
    assert_retained(&server, &lines);
    assert_eq!(user_messages(&records), lines);
}

#[test]
fn back_to_back_input_still_compacts_synchronously_and_loses_nothing() {
    let (server, env) = ahead_setup("");
    server.set_summarizer_delay(Duration::from_millis(50));
    let lines: Vec<String> = (1..=30).map(codeword_line).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert!(comps.len() >= 2, "only {} compactions", comps.len());
    assert!(
        comps.iter().all(|c| c["mode"] == "shared-prefix"),
        "{comps:?}"
    );
    // Never idle: no summary was written ahead.
    assert!(drafts(&records).is_empty());
    assert!(run.of_type("summary_draft_started").is_empty());
    assert_eq!(summarizer_requests(&server).len(), comps.len());
    assert_retained(&server, &lines);
    assert_eq!(user_messages(&records), lines);
}

#[test]
fn with_ahead_percent_zero_a_paced_batch_waits_for_each_summary() {
    let (server, env) = ahead_setup("compaction.ahead_percent = 0");
    let lines: Vec<String> = (1..=20).map(codeword_line).collect();
    let (turns, events) = paced(&env, &server, &lines, &[]);
    assert!(of_type(&events, "summary_draft_started").is_empty());
    let comps = of_type(&events, "compaction");
    assert!(!comps.is_empty());
    assert!(comps.iter().all(|c| c["mode"] == "shared-prefix"));
    // Every summary was written inside a turn.
    for s in summarizer_spans(&server) {
        assert!(
            turns
                .iter()
                .any(|t| t.line < s.started && s.ended < Some(t.answer)),
            "{s:?}"
        );
    }
    assert_retained(&server, &lines);
}

#[test]
fn a_draft_left_by_one_process_is_applied_by_the_next_run_continue() {
    let (server, env) = ahead_setup("");
    // Up to the first saved draft, before any compaction.
    let mut run = Paced::spawn(&mut cmd(&env, &["--json"], &[])).unwrap();
    let n = until_draft_starts(&mut run, 0, 31);
    run.wait_for(is("summary_draft")).unwrap();
    let mut sent: Vec<String> = (1..=n).map(codeword_line).collect();
    let (status, stderr, events) = run.finish().unwrap();
    assert!(status.success(), "{stderr}");
    assert!(of_type(&events, "compaction").is_empty(), "{events:?}");
    let id = session_of(&events);
    let records = export(&env, &id);
    assert!(compactions(&records).is_empty());
    let draft = (*drafts(&records).last().expect("a draft in the file")).clone();

    // The transcript marks it; the next request does not carry it yet.
    let shown = run_ok(&env, &["sessions", "show", &id], &[]);
    let mark = format!("[#{} summary draft · ", draft["seq"]);
    assert!(shown.contains(&mark), "{shown}");
    let eff = run_ok(&env, &["sessions", "show", &id, "--effective"], &[]);
    assert!(!eff.contains(SUMMARY_HEADING), "{eff}");

    // A later process whose first request passes the trigger applies it:
    // no summarizer request, the compaction says which draft it used.
    server.clear_requests();
    let prompt = format!("{} CODEWORD-LAST", line(99, 3000));
    let out = run_ok(&env, &["--json", "run", "-c", &prompt], &[]);
    assert!(summarizer_requests(&server).is_empty());
    let events = crate::util::json_lines(out.as_bytes());
    let comp = of_type(&events, "compaction");
    assert_eq!(comp.len(), 1, "{events:?}");
    assert_eq!(comp[0]["mode"], "ahead");
    assert_eq!(comp[0]["draft_seq"], draft["seq"]);
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 1);
    assert_eq!(comps[0]["first_kept_seq"], draft["first_kept_seq"]);
    assert_eq!(comps[0]["facts"], draft["facts"]);
    let req = agent_requests(&server).pop().unwrap();
    assert!(req.system_text().contains(SUMMARY_HEADING));
    sent.push(prompt);
    for l in &sent {
        let word = codewords(l).pop().unwrap();
        assert!(req.all_text().contains(&word), "{word} lost");
    }
}

#[test]
fn on_a_one_slot_server_new_input_cancels_the_draft_and_goes_first() {
    let (server, env) = ahead_setup("");
    server
        // llama-server's /props with total_slots = 1 (the fake's default).
        .advertise_props(Some(WINDOW))
        // Never finishes within the test: only a cancellation ends it.
        .set_summarizer_delay(Duration::from_secs(600));
    let mut run = Paced::spawn(&mut cmd(&env, &["--json"], &[])).unwrap();
    let in_flight = |server: &FakeServer| {
        for _ in 0..4000 {
            if let Some(s) = summarizer_spans(server).last()
                && s.ended.is_none()
            {
                return s.clone();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("no summarizer request reached the server");
    };
    let mut cancelled = Vec::new();
    let mut n = 0;
    let last_draft = loop {
        n = until_draft_starts(&mut run, n, 30);
        let draft = in_flight(&server);
        if cancelled.len() == 2 {
            break draft;
        }
        // New input while the summary is being written.
        let at = server.mark("input");
        cancelled.push((draft, at));
    };
    // Stdin ends while a summary is being written: the batch exits at once.
    let (status, stderr, events) = run.finish().unwrap();
    assert!(status.success(), "{stderr}");
    assert!(of_type(&events, "summary_draft").is_empty());

    // The process has exited; the fake notices the closed connection of
    // the last draft on its next poll of the socket, which a loaded machine
    // may delay: wait (bounded) for that span to end before reading them.
    let mut spans = server.spans();
    for _ in 0..2000 {
        if spans
            .iter()
            .any(|s| s.request == last_draft.request && s.ended.is_some())
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        spans = server.spans();
    }
    for (draft, at) in &cancelled {
        // Cancelled: its request ended unfinished, after the new input.
        let d = spans.iter().find(|s| s.request == draft.request).unwrap();
        assert!(!d.completed && d.ended > Some(*at), "{d:?}");
        // The user's request was the next to reach the server.
        let next = spans.iter().find(|s| s.started > *at).unwrap();
        assert!(!next.summarizer, "{next:?}");
    }
    let d = spans
        .iter()
        .find(|s| s.request == last_draft.request)
        .unwrap();
    assert!(d.ended.is_some() && !d.completed, "{d:?}");
    // Nothing of a cancelled draft is in the file, and no turn compacted.
    let records = export(&env, &session_of(&events));
    assert!(drafts(&records).is_empty());
    assert!(compactions(&records).is_empty());
}

#[test]
fn elsewhere_new_input_runs_alongside_the_draft_which_is_kept() {
    let (server, env) = ahead_setup("");
    server.set_summarizer_delay(Duration::from_secs(2));
    let mut run = Paced::spawn(&mut cmd(&env, &["--json"], &[])).unwrap();
    let n = until_draft_starts(&mut run, 0, 30);
    while summarizer_spans(&server).is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let at = server.mark("input");
    run.send(&codeword_line(n + 1)).unwrap();
    run.wait_for(is("summary_draft")).unwrap();
    let (status, stderr, _) = run.finish().unwrap();
    assert!(status.success(), "{stderr}");
    let spans = server.spans();
    let s = spans.iter().find(|s| s.summarizer).unwrap();
    assert!(s.completed, "{s:?}");
    // The user's request was sent while the summary was being written.
    let user = spans.iter().find(|s| s.started > at).unwrap();
    assert!(
        !user.summarizer && s.in_flight_at(user.started),
        "{spans:?}"
    );
}

#[test]
fn the_repl_prompt_shows_a_summary_being_written_then_ready_and_the_trigger_uses_it() {
    use crate::agent::Fx;
    use crate::agent_repl::start_repl;
    let fx = Fx::with(|c| windowed(c, WINDOW, 60.0, 2));
    fx.fake
        .set_context_window(Some(WINDOW))
        .set_summarizer(echo_summary);
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    let prompts = |p: &str, mark: &str| {
        p.lines()
            .filter(|l| l.trim_start().starts_with("{ctx ") && l.contains(mark))
            .count()
    };
    tmux.wait_pane("the prompt", |p| prompts(p, "%} >") == 1);
    // Turns until a summary is being written at the prompt.
    let mut n = 0;
    loop {
        n += 1;
        assert!(n < 30, "no summary was started ahead:\n{}", tmux.pane());
        tmux.send(&codeword_line(n));
        let pane = tmux.wait_pane("the next prompt", |p| prompts(p, "} >") == n + 1);
        if pane.contains("% …} >") {
            break;
        }
    }
    // It finishes while the prompt waits: a key press redraws the mark.
    while summarizer_requests(&fx.fake).is_empty() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let records_with_draft = || {
        fx.session_files().iter().any(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains(r#""type":"summary_draft""#)
        })
    };
    while !records_with_draft() {
        std::thread::sleep(Duration::from_millis(10));
    }
    // The job marks itself done just after it writes the record, so a key
    // pressed in between still draws `…`: press again until the mark shows.
    let mut ready = false;
    for _ in 0..100 {
        tmux.keys(&["-l", "x"]);
        std::thread::sleep(Duration::from_millis(100));
        if tmux.pane().contains("% ✓} > x") {
            ready = true;
            break;
        }
        tmux.keys(&["C-u"]);
    }
    assert!(ready, "no ready mark:\n{}", tmux.pane());
    tmux.keys(&["C-u"]);
    // Turns until the trigger: the compaction applies the summary.
    let at = loop {
        n += 1;
        assert!(n < 40, "no compaction:\n{}", tmux.pane());
        let at = fx.fake.mark("line");
        tmux.send(&codeword_line(n));
        let pane = tmux.wait_pane("the next prompt", |p| prompts(p, "} >") == n + 1);
        if pane.contains("compacted (auto, with the summary written ahead)") {
            break at;
        }
    };

    let records: Vec<Value> = std::fs::read_to_string(&fx.session_files()[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let comps = compactions(&records);
    assert_eq!(comps.len(), 1);
    assert_eq!(comps[0]["mode"], "ahead");
    // Every summary was started at a prompt: the compacting turn started
    // none. (One started at the prompt may still be finishing when the line
    // is sent, on a loaded machine; it runs on in the background.)
    // A summary may start again at the prompt after it (the kept part,
    // with what the user said, can be past `ahead_percent` already at a
    // window this small): after the turn's last request ended.
    let turn_end = fx
        .fake
        .spans()
        .iter()
        .filter(|s| !s.summarizer && s.started >= at)
        .filter_map(|s| s.ended)
        .max()
        .unwrap_or(at);
    let spans = summarizer_spans(&fx.fake);
    assert!(
        spans
            .iter()
            .all(|s| (s.completed && s.started < at) || s.started >= turn_end),
        "{spans:?}, line sent at {at}, its turn ended at {turn_end}"
    );
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

#[test]
fn compact_without_a_focus_applies_the_draft_and_with_one_writes_a_fresh_summary() {
    let (server, env) = ahead_setup("");
    let mut run = Paced::spawn(&mut cmd(&env, &["--json"], &[])).unwrap();
    let n = until_draft_starts(&mut run, 0, 40);
    let draft = run.wait_for(is("summary_draft")).unwrap().pop().unwrap();
    let asked = summarizer_requests(&server).len();
    run.send("/compact").unwrap();
    let c = run.wait_for(is("compaction")).unwrap().pop().unwrap();
    assert_eq!(
        (&c["mode"], &c["trigger"]),
        (&"ahead".into(), &"manual".into())
    );
    assert_eq!(c["draft_seq"], draft["seq"]);
    assert_eq!(c["first_kept_seq"], draft["first_kept_seq"]);
    assert_eq!(summarizer_requests(&server).len(), asked);

    until_draft_starts(&mut run, n, 40);
    run.wait_for(is("summary_draft")).unwrap();
    let asked = summarizer_requests(&server).len();
    run.send("/compact the code words").unwrap();
    let c = run.wait_for(is("compaction")).unwrap().pop().unwrap();
    assert_eq!(c["mode"], "shared-prefix");
    assert!(c.get("draft_seq").is_none(), "{c}");
    assert_eq!(summarizer_requests(&server).len(), asked + 1);
    let focus = summarizer_requests(&server).pop().unwrap();
    assert!(
        focus.last_user_text().unwrap().contains("the code words"),
        "{focus:?}"
    );
    let (status, stderr, events) = run.finish().unwrap();
    assert!(status.success(), "{stderr}");
    let records = export(&env, &session_of(&events));
    let modes: Vec<&Value> = compactions(&records).iter().map(|c| &c["mode"]).collect();
    assert_eq!(
        modes,
        [&Value::from("ahead"), &Value::from("shared-prefix")]
    );
}
