//! A resumed session estimates its next request the way the live session
//! did: the estimator is calibrated from the usage saved in the session file,
//! not reset to the configured 4 chars/token guess.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_agent::{Agent, AgentOptions, SessionChoice};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{Message, Usage};
use eonyx_tests::{ScriptedProvider, Step};

/// Counts 2 characters per token (half of eonyx's default guess).
fn two_chars_per_token() -> ScriptedProvider {
    ScriptedProvider::answering(|request| {
        let mut chars = request.system.text().chars().count();
        chars += request.messages.iter().map(Message::chars).sum::<usize>();
        chars += request.tools.iter().map(|t| t.chars()).sum::<usize>();
        Step::text("noted. ".repeat(40)).usage(Usage {
            prompt_tokens: (chars / 2) as u64,
            completion_tokens: 70,
            cached_tokens: 0,
            ..Usage::default()
        })
    })
    .named("two")
}

fn options(root: &Utf8PathBuf) -> AgentOptions {
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("eonyx.json"), "{}").unwrap();
    let config = root.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "model = \"m\"\n[models.m]\nname = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\ncontext_window = 100000\n",
    )
    .unwrap();
    let data = root.join("data");
    crate::options(
        work,
        [root.as_str(), data.as_str(), config.as_str()],
        Arc::new(two_chars_per_token()),
    )
}

#[tokio::test]
async fn a_resumed_session_estimates_like_the_live_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_path_buf()).unwrap();
    let cancel = CancellationToken::new();

    let mut live = Agent::open(options(&root), SessionChoice::New)
        .await
        .unwrap();
    let uncalibrated = live.context_status().estimate;
    for n in 0..3 {
        let line = format!("turn {n}: {}", "please remember this detail. ".repeat(30));
        live.turn(&line, &cancel).await.unwrap();
    }
    let live_estimate = live.context_status().estimate;
    assert!(
        live_estimate > uncalibrated * 2,
        "calibration should have raised the estimate: {uncalibrated} -> {live_estimate}"
    );
    drop(live);

    let resumed = Agent::open(options(&root), SessionChoice::Latest)
        .await
        .unwrap();
    assert!(resumed.resumed());
    let resumed_estimate = resumed.context_status().estimate;
    let diff = resumed_estimate.abs_diff(live_estimate) as f64 / live_estimate as f64;
    assert!(
        diff < 0.05,
        "live {live_estimate} vs resumed {resumed_estimate} tokens"
    );
}
