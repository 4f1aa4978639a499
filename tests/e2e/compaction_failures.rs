//! Compaction that goes wrong, through the real binary: a failed summarizer,
//! Ctrl-C during a slow summary, the loop breaker.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::time::{Duration, Instant};

use eonyx_tests::{FakeServer, Reply};

use crate::agent::{sigint, wait_for};
use crate::compaction::*;

#[test]
fn a_failed_summarizer_deletes_nothing_and_the_turn_goes_on_if_it_fits() {
    let server = FakeServer::start();
    server.set_summarizer(|_| Reply::server_error());
    let env = env_with(&openai(&server).set("context_window", 8192));
    let lines: Vec<String> = (1..=4).map(|n| line(n, 900)).collect();
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "1500")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(!summarizer_requests(&server).is_empty());
    assert!(
        run.of_type("warning").iter().any(|w| w["message"]
            .as_str()
            .unwrap_or("")
            .contains("compaction failed, continuing uncompacted")),
        "{:?}",
        run.events
    );
    assert_eq!(run.of_type("turn_completed").len(), 4);
    let records = export(&env, &run.session());
    assert!(compactions(&records).is_empty());
    assert_eq!(user_messages(&records), lines);
    // Every request still carries the whole conversation.
    let last = agent_requests(&server).pop().unwrap();
    assert_eq!(last.user_texts(), lines);

    // When the request would not fit the window either, the turn fails with
    // the reason, and still nothing is deleted.
    let server = FakeServer::start();
    server.set_summarizer(|_| Reply::server_error());
    let env = env_with(&openai(&server).set("context_window", 4096));
    let lines = vec![line(1, 300), line(2, 300), line(3, 16_000)];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    assert!(
        run.stderr().contains("compaction failed"),
        "{}",
        run.stderr()
    );
    assert!(run.stderr().contains("summarizer"), "{}", run.stderr());
    assert!(
        agent_requests(&server)
            .iter()
            .all(|r| !r.user_texts().contains(&lines[2])),
        "the oversized request was sent anyway"
    );
    let records = export(&env, &run.session());
    assert!(compactions(&records).is_empty());
    assert_eq!(user_messages(&records), lines);
}

#[test]
fn ctrl_c_during_a_slow_summary_exits_130_and_keeps_the_session() {
    let server = FakeServer::start();
    server.set_summarizer(|_| {
        Reply::text("## Active goal\nlate").with_delay(Duration::from_secs(20))
    });
    let env = env_with(&openai(&server).set("context_window", 8192));
    let lines: Vec<String> = (1..=4).map(|n| line(n, 1500)).collect();
    let child = spawn_batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "1700")]);
    let started = Instant::now();
    wait_for("a compaction", Duration::from_secs(20), || {
        !summarizer_requests(&server).is_empty()
    });
    std::thread::sleep(Duration::from_millis(100));
    sigint(&child);
    let run = finish(child);
    assert_eq!(run.code(), Some(130), "{}", run.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "Ctrl-C did not stop the summary"
    );
    let id = run.session();
    let records = export(&env, &id);
    assert!(compactions(&records).is_empty());
    let users = user_messages(&records);
    assert!(!users.is_empty() && lines.starts_with(&users), "{users:?}");

    // The session is intact: it resumes with every message.
    server.set_summarizer(echo_summary);
    server.clear_requests();
    let next = batch(
        &env,
        &["go on".to_owned()],
        &["-s", &id],
        &[("EONYX_AUTO_COMPACT", "false")],
    );
    assert_eq!(next.code(), Some(0), "{}", next.stderr());
    let sent = agent_requests(&server).pop().unwrap().user_texts();
    assert_eq!(sent[..users.len()], users[..]);
}

#[test]
fn loop_breaker_stops_auto_compaction_and_says_so() {
    let server = FakeServer::start();
    // A summary that never gets the request under the trigger.
    server.set_summarizer(|_| {
        Reply::text(format!(
            "## Active goal\n{}",
            "very long summary ".repeat(300)
        ))
    });
    let env = env_with(
        &openai(&server)
            .set("context_window", 16_384)
            .merge_model_toml("compaction.max_consecutive = 2\ncompaction.keep_turns = 1")
            .unwrap(),
    );
    let lines: Vec<String> = (1..=8).map(|n| line(n, 600)).collect();
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "1500")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.of_type("turn_completed").len(), 8);
    let notices: Vec<&str> = run
        .of_type("notice")
        .iter()
        .filter_map(|n| n["message"].as_str())
        .filter(|m| m.contains("automatic compaction is off"))
        .collect();
    assert_eq!(notices.len(), 1, "{:?}", run.events);
    let sums = summarizer_requests(&server).len();
    assert!((1..=2).contains(&sums), "{sums} summarizer requests");
    // After the breaker, later requests stay over the trigger uncompacted.
    let last = agent_requests(&server).pop().unwrap();
    assert!(last.prompt_tokens > 1500);
    assert_eq!(last.last_user_text().as_deref(), Some(lines[7].as_str()));
}
