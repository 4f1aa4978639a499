//! The turn loop driven directly against [`ScriptedProvider`]: the
//! invariants in `crates/agent/src/lib.rs` checked without the binary.
//!
//! - append-before-continue: every message is in the session file before
//!   the next provider step is sent;
//! - an overflow is compacted and retried exactly once, never twice;
//! - a cancelled step leaves a consistent session: every tool call has a
//!   result, and no half-streamed answer is saved.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use camino::Utf8Path;
use eonyx_agent::{Agent, AgentError, AgentEvent, SessionChoice};
use eonyx_core::provider::{CancellationToken, SUMMARIZER_SYSTEM_PREFIX};
use eonyx_core::record::{ParsedLine, Record};
use eonyx_core::{ChatRequest, Message, Role, StreamEvent};
use eonyx_tests::{FakeConfig, ScriptedProvider, Step, TestEnv};
use serde_json::json;

const SUMMARY: &str = "## Active goal\nchat\n## Critical context\nnone";

fn env() -> TestEnv {
    let env = TestEnv::new().unwrap();
    // The base URL is never dialled: the scripted provider answers.
    env.write_config(&FakeConfig::openai("http://127.0.0.1:9/v1").set("context_window", 32_768))
        .unwrap();
    std::fs::write(env.project.join("notes.txt"), "remember the parser\n").unwrap();
    env
}

async fn open(env: &TestEnv, provider: &Arc<ScriptedProvider>) -> Agent {
    open_in(env, provider, SessionChoice::New).await
}

async fn open_in(env: &TestEnv, provider: &Arc<ScriptedProvider>, choice: SessionChoice) -> Agent {
    let dirs = [
        env.home.as_str(),
        env.data_dir.as_str(),
        env.config_dir.as_str(),
    ];
    let opts = crate::options(env.project.clone(), dirs, provider.clone());
    Agent::open(opts, choice).await.unwrap()
}

/// The records of the one session file in `data_dir` (none before the
/// session's first message).
fn session_records(data_dir: &Utf8Path) -> Vec<Record> {
    let Ok(dir) = std::fs::read_dir(data_dir.join("sessions")) else {
        return Vec::new();
    };
    let files: Vec<_> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert!(files.len() <= 1, "one session expected: {files:?}");
    let Some(file) = files.first() else {
        return Vec::new();
    };
    std::fs::read(file)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| match Record::parse_line(l).unwrap() {
            ParsedLine::Record(r) => *r,
            ParsedLine::Unknown(t) => panic!("unknown record type {t}"),
        })
        .collect()
}

fn saved_messages(data_dir: &Utf8Path) -> Vec<Message> {
    session_records(data_dir)
        .into_iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.message),
            _ => None,
        })
        .collect()
}

/// What a message is, for comparing a request with the file.
fn shape(m: &Message) -> (Role, String, Option<String>, usize) {
    (
        m.role,
        m.content.text(),
        m.tool_call_id.clone(),
        m.tool_calls.len(),
    )
}

/// Every tool call in `messages` has a result after it.
fn unanswered_calls(messages: &[Message]) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        open.extend(m.tool_calls.iter().map(|c| c.id.clone()));
        if let Some(id) = &m.tool_call_id {
            open.retain(|o| o != id);
        }
    }
    open
}

fn is_summarizer(r: &ChatRequest) -> bool {
    r.system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX)
}

#[tokio::test]
async fn every_message_is_in_the_session_file_before_the_next_step() {
    let env = env();
    let data = env.data_dir.clone();
    let mismatches = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = mismatches.clone();
    let steps = AtomicUsize::new(0);
    let provider = Arc::new(ScriptedProvider::answering(move |request| {
        // Everything the model is sent is already on disk, in the same order.
        let sent: Vec<_> = request.messages.iter().map(shape).collect();
        let saved: Vec<_> = saved_messages(&data).iter().map(shape).collect();
        if sent != saved {
            seen.lock()
                .unwrap()
                .push(format!("sent {sent:?}\nsaved {saved:?}"));
        }
        match steps.fetch_add(1, Ordering::SeqCst) {
            0 => Step::tool_calls(&[
                ("read_file", json!({"path": "notes.txt"})),
                ("list_dir", json!({"path": "."})),
            ]),
            1 => Step::tool_calls(&[("read_file", json!({"path": "notes.txt"}))]),
            _ => Step::text("the parser, noted"),
        }
    }));
    let mut agent = open(&env, &provider).await;
    let cancel = CancellationToken::new();
    let outcome = agent.turn("what do my notes say?", &cancel).await.unwrap();
    assert_eq!(outcome.text, "the parser, noted");
    assert_eq!(outcome.steps, 3);
    let second = agent.turn("thanks", &cancel).await.unwrap();
    assert_eq!(second.steps, 1);

    assert_eq!(provider.requests().len(), 4);
    assert!(
        mismatches.lock().unwrap().is_empty(),
        "{:?}",
        mismatches.lock().unwrap()
    );
    // And the last answer is on disk before the turn returns.
    let saved = saved_messages(&env.data_dir);
    assert_eq!(
        saved.len(),
        9,
        "user, 2 calls + 2 results, 1 call + 1 result, answer; user, answer"
    );
    assert_eq!(
        saved.last().map(|m| m.content.text()),
        Some("the parser, noted".into())
    );
    assert!(
        saved[2].content.text().contains("remember the parser"),
        "{saved:?}"
    );
}

/// Six turns of ~1,500-character lines, then the seventh request
/// overflows a server whose real window is far below the configured one.
async fn overflow_session(
    overflows: &'static [usize],
) -> (
    TestEnv,
    Arc<ScriptedProvider>,
    Result<String, AgentError>,
    Vec<AgentEvent>,
) {
    let env = env();
    let main = AtomicUsize::new(0);
    let provider = Arc::new(ScriptedProvider::answering(move |request| {
        if is_summarizer(request) {
            return Step::text(SUMMARY);
        }
        let n = main.fetch_add(1, Ordering::SeqCst);
        if overflows.contains(&n) {
            Step::overflow(Some(4_000), Some(3_000))
        } else {
            Step::text(format!("answer {n}"))
        }
    }));
    let mut agent = open(&env, &provider).await;
    let cancel = CancellationToken::new();
    let mut events = Vec::new();
    let mut result = Ok(String::new());
    for turn in 0..7 {
        let line = format!(
            "turn {turn}: {}",
            "please remember this paragraph. ".repeat(45)
        );
        let queue = agent.events();
        let work = agent.turn(&line, &cancel);
        result = queue
            .deliver(work, |e| events.push(e))
            .await
            .map(|o| o.text);
        if turn < 6 {
            assert!(result.is_ok(), "turn {turn}: {result:?}");
        }
    }
    (env, provider, result, events)
}

/// What the requests from the `skip`th on were: a conversation `step` or a
/// `summarize` call.
fn request_kinds(provider: &ScriptedProvider, skip: usize) -> Vec<&'static str> {
    provider
        .requests()
        .iter()
        .skip(skip)
        .map(|r| {
            if is_summarizer(r) {
                "summarize"
            } else {
                "step"
            }
        })
        .collect()
}

#[tokio::test]
async fn an_overflow_is_compacted_and_retried_once() {
    let (env, provider, result, events) = overflow_session(&[6]).await;
    assert_eq!(result.unwrap(), "answer 7");
    let kinds = request_kinds(&provider, 6);
    assert_eq!(
        kinds,
        ["step", "summarize", "step"],
        "overflow, compaction, one retry"
    );
    let requests = provider.requests();
    let (overflowed, retry) = (&requests[6], &requests[8]);
    assert!(
        retry.messages.len() < overflowed.messages.len(),
        "the retry is compacted"
    );
    assert_eq!(
        retry.messages.last().map(Message::chars),
        overflowed.messages.last().map(Message::chars),
        "the retry still carries the user's new line"
    );
    let records = session_records(&env.data_dir);
    let compactions: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Compaction(c) => Some(c.trigger),
            _ => None,
        })
        .collect();
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Notice(n) if n.contains("3000")))
    );
    assert!(unanswered_calls(&saved_messages(&env.data_dir)).is_empty());
}

#[tokio::test]
async fn an_overflow_after_compaction_is_not_retried_again() {
    let (env, provider, result, _) = overflow_session(&[6, 7]).await;
    assert!(
        matches!(result, Err(AgentError::TooLarge { .. })),
        "{result:?}"
    );
    let kinds = request_kinds(&provider, 6);
    assert_eq!(kinds, ["step", "summarize", "step"], "never a second retry");
    // The user's line is saved; nothing after it but the compaction.
    let saved = saved_messages(&env.data_dir);
    assert_eq!(saved.last().map(|m| m.role), Some(Role::User));
}

#[tokio::test]
async fn a_cancel_between_the_answer_and_its_tools_answers_every_call() {
    let env = env();
    let provider = Arc::new(ScriptedProvider::new([Step::with(|request| {
        // The user presses Ctrl-C just as the model's tool calls arrive.
        request.cancel.cancel();
        Step::tool_calls(&[
            ("read_file", json!({"path": "notes.txt"})),
            ("list_dir", json!({"path": "."})),
        ])
    })]));
    let mut agent = open(&env, &provider).await;
    let cancel = CancellationToken::new();
    let result = agent.turn("look around", &cancel).await;
    assert!(matches!(result, Err(AgentError::Interrupted)), "{result:?}");

    let saved = saved_messages(&env.data_dir);
    assert!(unanswered_calls(&saved).is_empty(), "{saved:?}");
    let results: Vec<String> = saved
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.text())
        .collect();
    assert_eq!(results.len(), 2, "{saved:?}");
    assert!(
        results.iter().all(|r| r.contains("interrupted")),
        "{results:?}"
    );
    assert_eq!(provider.requests().len(), 1, "no step after the cancel");

    // The session resumes consistently: the next turn sends every call
    // with its result.
    let provider2 = Arc::new(ScriptedProvider::new([Step::text("done")]));
    drop(agent);
    let mut again = open_in(&env, &provider2, SessionChoice::Id(session_id(&env))).await;
    let fresh = CancellationToken::new();
    again.turn("go on", &fresh).await.unwrap();
    let sent = &provider2.requests()[0].messages;
    assert!(unanswered_calls(sent).is_empty(), "{sent:?}");
}

#[tokio::test]
async fn a_cancel_mid_stream_saves_no_half_answer() {
    let env = env();
    let provider = Arc::new(ScriptedProvider::new([
        Step::tool_calls(&[("read_file", json!({"path": "notes.txt"}))]),
        Step::UntilCancelled {
            events: vec![StreamEvent::TextDelta("The notes s".into())],
        },
    ]));
    let mut agent = open(&env, &provider).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let queue = agent.events();
    let work = agent.turn("summarize my notes", &cancel);
    let result = queue
        .deliver(work, |e| {
            // Cancel when the second step starts streaming.
            if matches!(e, AgentEvent::TextDelta(_)) {
                canceller.cancel();
            }
        })
        .await;
    assert!(matches!(result, Err(AgentError::Interrupted)), "{result:?}");
    let saved = saved_messages(&env.data_dir);
    let roles: Vec<Role> = saved.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool],
        "{saved:?}"
    );
    assert!(unanswered_calls(&saved).is_empty());
    assert!(
        !saved
            .iter()
            .any(|m| m.content.text().contains("The notes s"))
    );
}

fn session_id(env: &TestEnv) -> eonyx_core::SessionId {
    let records = session_records(&env.data_dir);
    match records.first() {
        Some(Record::Session(h)) => h.id.clone(),
        other => panic!("no session header: {other:?}"),
    }
}
