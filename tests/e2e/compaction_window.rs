//! Knowing the context window through the real binary: overflow recovered
//! once and the window learned (issues 5 and 8), and the window detected
//! from the server without being told (issue 8).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{FakeConfig, FakeServer, OverflowFlavor, RecordedRequest};
use serde_json::Value;

use crate::compaction::*;

/// The configured window (32k) is wrong: the server's real one is 4096.
/// One overflow, a compaction against the learned window, success; the
/// learned window is cached so the next session never overflows.
fn overflow_then_learned(anthropic: bool, flavor: OverflowFlavor) {
    const REAL: u64 = 4096;
    let server = FakeServer::start();
    server
        .set_context_window(Some(REAL))
        .set_overflow_flavor(flavor)
        .set_summarizer(echo_summary);
    let config = if anthropic {
        FakeConfig::anthropic(&server.base_url()).set("retries", 0)
    } else {
        openai(&server)
    };
    let env = env_with(&config.set("context_window", 32_768));
    let lines: Vec<String> = (1..=12).map(|n| line(n, 1500)).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{flavor:?}: {}", run.stderr());
    let over: Vec<u64> = agent_requests(&server)
        .iter()
        .map(|r| r.prompt_tokens)
        .filter(|t| *t > REAL)
        .collect();
    assert_eq!(over.len(), 1, "{flavor:?}: overflowing requests {over:?}");
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert_eq!(comps[0]["trigger"], "overflow", "{comps:?}");
    assert_eq!(user_messages(&records), lines);
    assert!(
        run.of_type("notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap_or("")
            .contains(&REAL.to_string())),
        "{flavor:?}: no notice of the learned window: {:?}",
        run.events
    );

    // `eonyx config` shows where the window came from.
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    let w = &cfg["values"]["models.fake.context_window"];
    assert_eq!(w["value"], REAL, "{w}");
    assert_eq!(w["origin"], "overflow", "{w}");

    // A new session starts with the learned window: no overflow at all.
    server.clear_requests();
    let again = batch(&env, &lines, &[], &[]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr());
    assert!(
        server
            .chat_requests()
            .iter()
            .all(|r| r.prompt_tokens <= REAL),
        "{flavor:?}: the new session overflowed again"
    );
    assert!(!summarizer_requests(&server).is_empty());
}

#[test]
fn overflow_openai_is_recovered_once_and_the_window_is_learned() {
    overflow_then_learned(false, OverflowFlavor::OpenAi);
}

#[test]
fn overflow_llama_cpp_n_ctx_is_learned() {
    overflow_then_learned(false, OverflowFlavor::LlamaCpp);
}

#[test]
fn overflow_anthropic_prompt_too_long_is_learned() {
    overflow_then_learned(true, OverflowFlavor::OpenAi);
}

#[test]
fn a_message_larger_than_the_window_fails_cleanly() {
    let server = summarizing_server(2048);
    let env = env_with(&openai(&server));
    let lines = vec!["hello".to_owned(), line(2, 20_000)];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let err = run.stderr();
    assert!(
        err.contains("too large for the model even after compaction"),
        "{err}"
    );
    // The huge step: at most two requests carry it (the overflow, one retry).
    let carrying = agent_requests(&server)
        .iter()
        .filter(|r| r.user_texts().contains(&lines[1]))
        .count();
    assert!((1..=2).contains(&carrying), "{carrying} requests");
    // Nothing lost.
    assert_eq!(user_messages(&export(&env, &run.session())), lines);
}

fn detected_window(advertise: impl Fn(&FakeServer), window: u64, how: &str) {
    let server = FakeServer::start();
    advertise(&server);
    server
        .set_context_window(Some(window))
        .set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .context_window(None)
            .merge_model_toml("compaction.threshold_percent = 50")
            .unwrap(),
    );
    let lines: Vec<String> = (1..=20).map(|n| line(n, 600)).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{how}: {}", run.stderr());
    // Compaction fires at 50% of the detected window, not of 120,000.
    let all = server.chat_requests();
    let i = all
        .iter()
        .position(RecordedRequest::is_summarizer)
        .expect("compacted");
    let before = all[..i].iter().rev().find(|r| !r.is_summarizer()).unwrap();
    let pct = before.prompt_tokens as f64 * 100.0 / window as f64;
    assert!((pct - 50.0).abs() <= 5.0, "{how}: fired at {pct:.1}%");
    assert!(all.iter().all(|r| r.prompt_tokens <= window));

    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    let w = &cfg["values"]["models.fake.context_window"];
    assert_eq!(w["value"], window, "{how}: {w}");
    assert_eq!(w["origin"], "detected", "{how}: {w}");
    assert!(
        w["source"].as_str().unwrap().starts_with("detected from"),
        "{w}"
    );

    // Asked again at every start (issue 12: a restarted server may have
    // another window); the same answer keeps the same window.
    server.clear_requests();
    let again = batch(&env, &lines[..1], &[], &[]);
    assert_eq!(again.code(), Some(0));
    assert!(
        server.requests().iter().any(|r| r.method == "GET"),
        "{how}: not asked again"
    );
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    assert_eq!(cfg["values"]["models.fake.context_window"]["value"], window);

    // A configured window larger than the detected one: one warning line
    // naming both numbers.
    env.write_config(&openai(&server).set("context_window", 65_536))
        .unwrap();
    let warned = batch(&env, &lines[..1], &[], &[]);
    assert_eq!(warned.code(), Some(0));
    let err = warned.stderr();
    let hits: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("65536") && l.contains(&window.to_string()))
        .collect();
    assert_eq!(hits.len(), 1, "{how}: {err}");
}

#[test]
fn window_is_detected_from_llama_cpp_props() {
    detected_window(
        |s| {
            s.advertise_props(Some(6000));
        },
        6000,
        "/props",
    );
}

#[test]
fn window_is_detected_from_v1_models_context_length() {
    detected_window(
        |s| {
            s.advertise_models(Some(5000));
        },
        5000,
        "/v1/models",
    );
}

#[test]
fn a_configured_window_larger_than_the_server_is_warned_about_on_the_first_run() {
    let server = FakeServer::start();
    server.advertise_props(Some(4000));
    // Configured 65,536, never run before: the server is asked once.
    let env = env_with(&openai(&server).set("context_window", 65_536));
    let run = batch(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let err = run.stderr();
    let hits: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("65536") && l.contains("4000"))
        .collect();
    assert_eq!(hits.len(), 1, "{err}");
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.path == "/props")
            .count(),
        1
    );
    // The smaller window is the one used from now on.
    let again = batch(&env, &["again".to_owned()], &[], &[]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr());
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    assert_eq!(cfg["values"]["models.fake.context_window"]["value"], 4000);
}

#[test]
fn a_configured_window_with_a_silent_server_is_asked_at_every_start() {
    let server = FakeServer::start();
    let env = env_with(&openai(&server).set("context_window", 8192));
    for line in ["one", "two"] {
        let run = batch(&env, &[line.to_owned()], &[], &[]);
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
    }
    let probes = server
        .requests()
        .iter()
        .filter(|r| !r.is_chat() && !r.is_anthropic())
        .count();
    // /props, /v1/models, /api/show and /api/ps at each start, concurrently.
    assert!((2..=8).contains(&probes), "{probes} probes");
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    assert_eq!(cfg["values"]["models.fake.context_window"]["value"], 8192);
}

#[test]
fn no_detection_and_no_config_falls_back_to_120k() {
    let server = FakeServer::start();
    let env = env_with(&openai(&server).context_window(None));
    let run = batch(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    let w = &cfg["values"]["models.fake.context_window"];
    assert_eq!(w["value"], 120_000, "{w}");
    assert_eq!(w["origin"], "fallback", "{w}");
}
