//! What the user waits for in a turn that compacts, against a steady turn:
//! the real `eonyx` binary in a batch fed one line at a time, with a pause
//! between an answer and the next line (a user reading and typing), against
//! the fake server with a slow summarizer. Measured twice in the same run:
//! with summaries written ahead (the default `ahead_percent`) and with
//! `ahead_percent = 0` (the summary is written inside the turn that needs
//! it). The wait is from writing the line to reading its `turn_completed`;
//! goal: a compacting turn within 1.2x of a steady one.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};

use eonyx_tests::bench::{self, Line};
use eonyx_tests::{FakeConfig, FakeServer, Paced, Reply, TestEnv};
use serde_json::Value;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const WINDOW: u64 = 8192;
/// How long the fake's summarizer takes.
const SUMMARY: Duration = Duration::from_millis(400);
/// How long the fake takes to answer a turn.
const ANSWER: Duration = Duration::from_millis(40);
/// The user reading the answer and typing the next line.
const PAUSE: Duration = Duration::from_millis(1000);

/// Waits of the compacting turns and of the steady ones.
struct Waits {
    compacting: bench::Samples,
    steady: bench::Samples,
    modes: Vec<String>,
}

fn run(bin: &Path, ahead_percent: Option<f64>, turns: usize) -> Result<Waits> {
    let server = FakeServer::start();
    server
        .set_context_window(Some(WINDOW))
        .set_default_reply(Reply::text("noted").with_delay(ANSWER))
        .set_summarizer(|_| Reply::text("## Active goal\nchat\n## Critical context\nnone"))
        .set_summarizer_delay(SUMMARY);
    let mut tuning = "compaction.threshold_percent = 60\ncompaction.keep_turns = 2".to_owned();
    if let Some(a) = ahead_percent {
        tuning.push_str(&format!("\ncompaction.ahead_percent = {a}"));
    }
    let config = FakeConfig::openai(&server.base_url())
        .set("retries", 0)
        .set("context_window", WINDOW as i64)
        .merge_model_toml(&tuning)?;
    let env = TestEnv::new()?;
    env.write_config(&config)?;
    let mut cmd = env.command(bin);
    cmd.arg("--json");
    let mut child = Paced::spawn(&mut cmd)?;
    let mut waits = Waits {
        compacting: bench::Samples::default(),
        steady: bench::Samples::default(),
        modes: Vec::new(),
    };
    for n in 0..turns {
        let mut line = format!("turn {n}: please remember this paragraph.");
        while line.len() < 1500 {
            line.push_str(" the quick brown fox jumps over the lazy dog");
        }
        let sent = Instant::now();
        child.send(&line)?;
        let events = child
            .wait_for(|e| e["type"] == "turn_completed" || e["type"] == "error")
            .map_err(|evs| format!("the run ended early: {evs:?}"))?;
        let waited = sent.elapsed();
        let compactions: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "compaction")
            .collect();
        if compactions.is_empty() {
            waits.steady.0.push(waited);
        } else {
            waits.compacting.0.push(waited);
            waits.modes.extend(
                compactions
                    .iter()
                    .map(|c| c["mode"].as_str().unwrap_or("?").to_owned()),
            );
        }
        std::thread::sleep(PAUSE);
    }
    let (status, stderr, _) = child.finish()?;
    if !status.success() {
        return Err(format!("eonyx failed: {stderr}").into());
    }
    Ok(waits)
}

fn main() -> Result<()> {
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let turns = 16 * bench::scale();
    for (label, ahead) in [
        ("summaries written ahead", None),
        ("ahead_percent = 0", Some(0.0)),
    ] {
        let w = run(bin, ahead, turns)?;
        if w.compacting.0.is_empty() {
            eprintln!("ahead bench ({label}): no turn compacted in {turns} turns");
            continue;
        }
        eprintln!(
            "ahead bench ({label}): {} compacting turn(s) {:?}, modes {:?}; steady median {}",
            w.compacting.0.len(),
            w.compacting
                .0
                .iter()
                .map(|d| bench::human(*d))
                .collect::<Vec<_>>(),
            w.modes,
            bench::human(w.steady.median())
        );
        println!(
            "{}",
            Line::timed(
                format!(
                    "compaction, {label}: wait of a compacting turn vs a steady turn (summarizer {} ms, pause {} ms)",
                    SUMMARY.as_millis(),
                    PAUSE.as_millis()
                ),
                w.compacting.median(),
                w.steady.median(),
                if ahead.is_none() {
                    "<= 1.2x"
                } else {
                    "measured"
                },
            )
        );
    }
    Ok(())
}
