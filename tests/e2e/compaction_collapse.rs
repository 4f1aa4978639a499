//! Tool-result collapse and manual compaction through the real binary: old
//! results collapsed in requests but kept in the session, `/compact` focus
//! and its `--json` events, long tool loops collapsed and compacted inside
//! the turn.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{FakeServer, Reply, TestEnv};
use serde_json::{Value, json};

use crate::compaction::*;

#[test]
fn old_tool_results_are_collapsed_in_requests_but_kept_in_the_session() {
    let server = FakeServer::start();
    let env = env_with(
        &openai(&server)
            .set("context_window", 200_000)
            .merge_model_toml(
                "compaction.tool_result_budget_chars = 30000\ncompaction.keep_recent_results = 1",
            )
            .unwrap()
            .top("max_steps", 10),
    );
    let mut files = Vec::new();
    for i in 1..=5 {
        let marker = format!("FILE-MARKER-{i}");
        let body: String = (0..200)
            .map(|l| format!("{marker} line {l} of some source text\n"))
            .collect();
        std::fs::write(env.project.join(format!("big{i}.txt")), &body).unwrap();
        files.push(marker);
    }
    for i in 1..=5 {
        server.push(Reply::tool_call(
            "read_file",
            json!({"path": format!("big{i}.txt")}),
        ));
    }
    server.push(Reply::text("read them all"));
    let run = batch(&env, &["read the five files".to_owned()], &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let reqs = agent_requests(&server);
    assert_eq!(reqs.len(), 6);
    assert_no_orphan_tool_results(&reqs);
    let last = reqs.last().unwrap();
    let tools = last.tool_results();
    assert_eq!(tools.len(), 5);
    let collapsed: Vec<&String> = tools
        .iter()
        .filter(|t| t.contains("tool result collapsed"))
        .collect();
    assert!(!collapsed.is_empty(), "{tools:#?}");
    assert!(
        collapsed[0].contains("read_file") && collapsed[0].contains("big1.txt"),
        "{}",
        collapsed[0]
    );
    assert!(collapsed[0].contains("characters"), "{}", collapsed[0]);
    // The newest result is never collapsed; the oldest goes first.
    assert!(tools[4].contains("FILE-MARKER-5"));
    assert!(!tools[0].contains("FILE-MARKER-1"));
    // The session file keeps every original.
    let export = run_ok(&env, &["sessions", "export", &run.session()], &[]);
    for marker in &files {
        assert!(
            export.contains(&format!("{marker} line 199")),
            "{marker} missing"
        );
    }
}

/// A batch of three turns, `first`, "second" and "third", with the slash
/// command `compact` after the second (`keep_turns = 1`); the fake's
/// summarizer echoes the code words. The run succeeded.
fn compact_after_second_turn(first: &str, compact: &str) -> (FakeServer, TestEnv, Batch) {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap(),
    );
    let lines: Vec<String> = vec![
        first.into(),
        "second".into(),
        compact.into(),
        "third".into(),
    ];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    (server, env, run)
}

#[test]
fn manual_compaction_passes_the_focus_from_slash_and_from_the_command() {
    let (server, env, run) = compact_after_second_turn(
        "first: CODEWORD-FOCUS matters",
        "/compact keep the parser design",
    );
    let sums = summarizer_requests(&server);
    assert_eq!(sums.len(), 1);
    assert!(sums[0].all_text().contains("keep the parser design"));
    let id = run.session();
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 1);
    assert_eq!(comps[0]["trigger"], "manual");
    // The next request carries the summary and only the kept turn onwards.
    let third = agent_requests(&server).pop().unwrap();
    assert!(third.system_text().contains("CODEWORD-FOCUS"));
    assert_eq!(third.user_texts(), ["second", "third"]);

    let out = run_ok(
        &env,
        &["compact", "-s", &id, "--focus", "only the tests"],
        &[],
    );
    assert!(out.contains("CODEWORD-FOCUS"), "{out}");
    let sums = summarizer_requests(&server);
    assert_eq!(sums.len(), 2);
    assert!(sums[1].all_text().contains("only the tests"));
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 2);
    assert_eq!(comps[1]["trigger"], "manual");
    assert_eq!(comps[1]["focus"], "only the tests");
    assert_eq!(
        user_messages(&records),
        ["first: CODEWORD-FOCUS matters", "second", "third"]
    );
}

/// With `--json`, a compaction is a `compaction` event with its figures;
/// `eonyx compact` adds one with the session and the whole record written;
/// keys in alphabetical order, as they have always been (docs/cli.md#json-events).
#[test]
fn compaction_json_events_carry_the_figures_or_the_record() {
    let (_server, env, run) = compact_after_second_turn("first: CODEWORD-JSON", "/compact");
    let id = run.session();
    let stdout = String::from_utf8_lossy(&run.out.stdout).into_owned();
    let line = stdout
        .lines()
        .find(|l| l.contains(r#""type":"compaction""#))
        .unwrap_or_else(|| panic!("no compaction event: {stdout}"));
    let ev: Value = serde_json::from_str(line).unwrap();
    let keys: Vec<&str> = ev.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "first_kept_seq",
            "mid_turn",
            "mode",
            "tokens_after",
            "tokens_before",
            "trigger",
            "type",
            "user_words"
        ],
        "{line}"
    );
    assert!(line.starts_with(r#"{"first_kept_seq":"#), "{line}");
    assert_eq!(ev["trigger"], "manual");
    // The first line, before the boundary, is kept verbatim
    // (docs/compaction.md#what-the-user-said).
    assert_eq!(ev["user_words"]["kept"], 1, "{line}");
    assert_eq!(ev["user_words"]["left_out"], 0, "{line}");

    // `eonyx compact --json`: the figures as in a run, then the record.
    let out = run_ok(&env, &["compact", "-s", &id, "--json"], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with(r#"{"first_kept_seq":"#), "{out}");
    assert!(lines[1].starts_with(r#"{"record":{"#), "{out}");
    assert!(
        lines[1].ends_with(&format!(r#"}},"session":"{id}","type":"compaction"}}"#)),
        "{out}"
    );
    let ev: Value = serde_json::from_str(lines[1]).unwrap();
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 2);
    // The record as written to the session file, less its `type`.
    let mut written = comps[1].clone();
    written.as_object_mut().unwrap().remove("type");
    assert_eq!(ev["record"], written);
    assert!(
        ev["record"]["summary"]
            .as_str()
            .unwrap()
            .contains("CODEWORD-JSON")
    );
}

#[test]
fn a_long_tool_loop_collapses_its_older_results_before_summarizing() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", 32_768)
            .merge_model_toml(
                "compaction.keep_recent_results = 2\ncompaction.tool_result_budget_chars = 1000000",
            )
            .unwrap()
            .top("max_steps", 12),
    );
    for i in 1..=8 {
        let body: String = (0..40)
            .map(|l| format!("part {i} line {l} of a source file\n"))
            .collect();
        std::fs::write(env.project.join(format!("f{i}.txt")), body).unwrap();
    }
    for i in 1..=8 {
        server.push(Reply::tool_call(
            "read_file",
            json!({"path": format!("f{i}.txt")}),
        ));
    }
    server.push(Reply::text("done reading"));
    let lines = vec![
        "an early turn".to_owned(),
        "read all eight files".to_owned(),
    ];
    // The trigger sits above the fixed first request (~1,500 tokens) plus the
    // two newest results, so collapsing alone gets the request under it.
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "4400")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let notices = run.of_type("notice");
    assert!(
        notices
            .iter()
            .any(|n| n["message"].as_str().unwrap().contains("collapsed")),
        "{notices:?}"
    );
    // Collapsing was enough: no summary, no compaction record.
    assert!(server.requests().iter().all(|r| !r.is_summarizer()));
    let records = export(&env, &run.session());
    assert!(compactions(&records).is_empty());
    assert_no_orphan_tool_results(&server.chat_requests());
    // The last request carries stubs for the oldest results and the two
    // newest whole; the session file keeps every original.
    let last = agent_requests(&server).pop().unwrap();
    let text = last.all_text();
    assert!(text.contains("[tool result collapsed"), "{text}");
    assert!(text.contains("part 8 line 39"));
    assert!(text.contains("part 7 line 39"));
    assert!(!text.contains("part 1 line 39"));
    let saved = serde_json::to_string(&records).unwrap();
    for i in 1..=8 {
        assert!(saved.contains(&format!("part {i} line 39")), "file {i}");
    }
    assert!(last.prompt_tokens < 4400 + 1500, "{}", last.prompt_tokens);
}

#[test]
fn a_long_tool_loop_compacts_inside_the_turn_without_splitting_a_call_from_its_result() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", 32_768)
            .merge_model_toml("compaction.prune = false")
            .unwrap()
            .top("max_steps", 12),
    );
    for i in 1..=6 {
        let body: String = (0..120)
            .map(|l| format!("part {i} line {l} of a source file\n"))
            .collect();
        std::fs::write(env.project.join(format!("f{i}.txt")), body).unwrap();
    }
    for i in 1..=6 {
        server.push(Reply::tool_call(
            "read_file",
            json!({"path": format!("f{i}.txt")}),
        ));
    }
    server.push(Reply::text("done reading"));
    let lines = vec!["an early turn".to_owned(), "read all six files".to_owned()];
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "4000")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_no_orphan_tool_results(&server.chat_requests());
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert!(
        comps.iter().any(|c| c["mid_turn"] == true),
        "no compaction inside the turn: {comps:?}"
    );
    // The request right after a mid-turn compaction still carries the
    // turn's request and every result it keeps has its call.
    let last = agent_requests(&server).pop().unwrap();
    assert!(
        last.all_text().contains("read all six files"),
        "{}",
        last.system_text()
    );
}
