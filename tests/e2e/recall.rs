//! The `recall` tool through the real binary (issue 18): exact earlier
//! messages come back verbatim after compactions, from this project's other
//! sessions but never another project's, with a visible limit.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::io::Write;
use std::process::{Command, Output, Stdio};

use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply, TestEnv};
use serde_json::{Value, json};

use crate::compaction::BIN;
use crate::util::{input_lines, json_lines, spawn_with_stdin, stderr};

const ASK: &str = "please look it up";

/// Answers the summarizer with a summary that keeps nothing exact, and a
/// user line equal to [`ASK`] with one `recall` call carrying `args`.
fn scripted(server: &FakeServer, args: Value) {
    server.set_responder(move |r: &RecordedRequest| {
        if r.is_summarizer() {
            return Some(Reply::text("## Active goal\nchat about paragraphs"));
        }
        let last = r.messages().last().cloned().unwrap_or_default();
        (last["role"] == "user" && last["content"] == ASK)
            .then(|| Reply::tool_call("recall", args.clone()))
    });
}

fn env_for(server: &FakeServer, model_toml: &str) -> TestEnv {
    let env = TestEnv::new().unwrap();
    env.write_config(
        &FakeConfig::openai(&server.base_url())
            .set("retries", 0)
            .merge_model_toml(model_toml)
            .unwrap(),
    )
    .unwrap();
    env
}

/// `eonyx --json` in `dir` fed `lines`; stdout parsed as JSON events.
fn batch(
    env: &TestEnv,
    dir: &camino::Utf8Path,
    lines: &[String],
    args: &[&str],
) -> (Output, Vec<Value>) {
    let mut cmd: Command = env.command(BIN);
    cmd.current_dir(dir).arg("--json").args(args);
    let out = spawn_with_stdin(&mut cmd, input_lines(lines))
        .wait_with_output()
        .unwrap();
    let events = json_lines(&out.stdout);
    (out, events)
}

/// The text of the tool result the model got back for the recall call.
fn recall_result(server: &FakeServer) -> String {
    server
        .chat_requests()
        .iter()
        .rev()
        .find_map(|r| r.tool_results().pop())
        .expect("a request carrying the recall result")
}

/// Every record of a session, as `eonyx sessions export` prints it.
fn export(env: &TestEnv, id: &str) -> Vec<Value> {
    let out = env
        .command(BIN)
        .args(["sessions", "export", id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn paragraph(n: usize) -> String {
    let mut s = format!("paragraph {n:02}:");
    while s.len() < 700 {
        s.push_str(" the quick brown fox jumps over the lazy dog");
    }
    s
}

#[test]
fn recall_after_two_compactions_returns_the_early_line_verbatim_with_its_seq() {
    let server = FakeServer::start();
    scripted(&server, json!({"query": "zebra-7731 staging"}));
    // Without `## What the user said`, so that the line is gone from the
    // request (docs/compaction.md#what-the-user-said keeps it otherwise).
    let env = env_for(
        &server,
        "context_window = 4096\ncompaction.threshold_percent = 50\ncompaction.keep_turns = 1\ncompaction.user_words_tokens = 0",
    );
    let early = "remember: ZEBRA-7731 is the staging port, not 8443".to_owned();
    let mut lines = vec![paragraph(0), early.clone()];
    lines.extend((1..=14).map(paragraph));
    lines.push(ASK.to_owned());
    let (out, events) = batch(&env, &env.project, &lines, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let compactions = events.iter().filter(|e| e["type"] == "compaction").count();
    assert!(compactions >= 2, "only {compactions} compactions");
    // The summary the model has does not carry the token...
    let last = server.chat_requests().pop().unwrap();
    assert!(!last.system_text().contains("ZEBRA-7731"));
    assert!(
        last.system_text()
            .contains("can be fetched with the recall tool"),
        "the summary section ends with the recall hint:\n{}",
        last.system_text()
    );
    // ...but recall brings back the exact line with its seq.
    let session = events.iter().find(|e| e["type"] == "session").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The window is small, so the turn may compact again right after the
    // tool ran: read what the model got from the session file.
    let records = export(&env, &session);
    let seq = records
        .iter()
        .find(|r| r["role"] == "user" && r["content"] == early)
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    let result = records.iter().rev().find(|r| r["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.starts_with("recall: 1 match"), "{result}");
    assert!(
        result.contains(&format!("[session {session} · seq {seq} · user · ")),
        "{result}"
    );
    assert!(result.lines().any(|l| l == early), "{result}");

    // The user is told, on stderr and as a JSON event.
    assert!(
        stderr(&out).contains("recall: 1 match\n"),
        "{}",
        stderr(&out)
    );
    let ev = events.iter().find(|e| e["type"] == "recall").unwrap();
    assert_eq!(ev["matches"], 1);
    assert_eq!(ev["scope"], "session");
}

#[test]
fn project_scope_finds_earlier_sessions_of_this_project_only() {
    let server = FakeServer::start();
    scripted(&server, json!({"query": "ocelot-42", "scope": "project"}));
    let env = env_for(&server, "");
    let other = env.project.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("eonyx.json"), "{}\n").unwrap();

    let here = "the lockfile hint is OCELOT-42 in this project".to_owned();
    let there = "OCELOT-42 also appears in the other project".to_owned();
    for (dir, line) in [(&env.project, &here), (&other, &there)] {
        let (out, _) = batch(&env, dir, std::slice::from_ref(line), &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    // A new session of the first project asks.
    let (out, _) = batch(&env, &env.project, &[ASK.to_owned()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = recall_result(&server);
    assert!(result.starts_with("recall: 1 match"), "{result}");
    assert!(result.lines().any(|l| l == here), "{result}");
    assert!(!result.contains("other project"), "{result}");
}

#[test]
fn a_query_matching_hundreds_of_lines_returns_the_limit_and_counts_the_rest() {
    let server = FakeServer::start();
    scripted(&server, json!({"query": "\"needle line\"", "limit": 3}));
    let env = env_for(&server, "compaction.keep_turns = 1");
    let lines: Vec<String> = (1..=120)
        .map(|n| format!("needle line number {n}"))
        .collect();
    let (out, events) = batch(&env, &env.project, &lines, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = events.iter().find(|e| e["type"] == "session").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Continue the session after compacting all but the last turn out of
    // the request (turn 120 stays in it, so it is not returned).
    let (out, _) = batch(
        &env,
        &env.project,
        &["/compact".to_owned(), ASK.to_owned()],
        &["-s", &id],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = recall_result(&server);
    assert!(
        result.starts_with("recall: 119 matches") && result.contains("newest 3 shown, 116 more"),
        "{result}"
    );
    let shown: Vec<&str> = result
        .lines()
        .filter(|l| l.starts_with("needle line number"))
        .collect();
    assert_eq!(
        shown,
        [
            "needle line number 119",
            "needle line number 118",
            "needle line number 117"
        ]
    );
}

#[test]
fn messages_already_in_the_request_are_not_returned_and_recall_can_be_turned_off() {
    let server = FakeServer::start();
    scripted(&server, json!({"query": "walrus"}));
    let env = env_for(&server, "");
    let (out, _) = batch(
        &env,
        &env.project,
        &["the walrus is in the request".to_owned(), ASK.to_owned()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(recall_result(&server).starts_with("recall: 0 matches"));

    // tools.recall = false: no tool definition, no hint.
    server.clear_requests();
    std::fs::write(
        env.project.join("eonyx.json"),
        r#"{"tools":{"recall":false}}"#,
    )
    .unwrap();
    let (out, _) = batch(&env, &env.project, &["hello".to_owned()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let req = server.chat_requests().pop().unwrap();
    assert!(
        !req.tool_names().contains(&"recall".to_owned()),
        "{:?}",
        req.tool_names()
    );
}

#[test]
fn the_provider_key_never_appears_in_a_recall_result() {
    const KEY: &str = "sk-recall-test-0123456789abcdef";
    let server = FakeServer::start();
    scripted(&server, json!({"query": "deploy token"}));
    let env = env_for(&server, "compaction.keep_turns = 1");
    let lines = [
        format!("the deploy token is {KEY}"),
        "something else".to_owned(),
        "/compact".to_owned(),
        ASK.to_owned(),
    ];
    let mut cmd: Command = env.command(BIN);
    cmd.current_dir(&env.project)
        .env("OPENAI_API_KEY", KEY)
        .arg("--json")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let result = recall_result(&server);
    assert!(result.starts_with("recall: 1 match"), "{result}");
    assert!(
        result.contains("the deploy token is [redacted: OPENAI_API_KEY]"),
        "{result}"
    );
    assert!(!result.contains(KEY), "{result}");
}

#[test]
fn earlier_recall_results_are_never_returned_and_the_limit_fills_with_real_hits() {
    let server = FakeServer::start();
    let args = json!({"query": "ocelot", "scope": "project", "limit": 2});
    server.set_responder(move |r: &RecordedRequest| {
        let last = r.messages().last().cloned().unwrap_or_default();
        Some(if last["role"] == "user" && last["content"] == ASK {
            Reply::tool_call("recall", args.clone())
        } else {
            Reply::text("noted")
        })
    });
    let env = env_for(&server, "");
    // A session with three facts, then one with two recalls whose results
    // quote them (and whose calls carry the word in their arguments).
    let facts: Vec<String> = (1..=3).map(|n| format!("ocelot fact {n}")).collect();
    let (out, _) = batch(&env, &env.project, &facts, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (out, _) = batch(&env, &env.project, &[ASK.to_owned(), ASK.to_owned()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let earlier = recall_result(&server);
    assert!(
        earlier.contains("ocelot fact 3") && earlier.contains("ocelot fact 2"),
        "{earlier}"
    );

    // A new session asks: only the facts match, the newest two shown.
    let (out, _) = batch(&env, &env.project, &[ASK.to_owned()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = recall_result(&server);
    assert!(
        result.starts_with("recall: 3 matches") && result.contains("newest 2 shown, 1 more"),
        "{result}"
    );
    assert!(
        !result.contains(" · tool · "),
        "a recall result came back:\n{result}"
    );
    assert!(!result.contains("recall: 2 matches"), "{result}");
    let shown: Vec<&str> = result
        .lines()
        .filter(|l| l.starts_with("ocelot fact"))
        .collect();
    assert_eq!(shown, ["ocelot fact 3", "ocelot fact 2"], "{result}");
}
