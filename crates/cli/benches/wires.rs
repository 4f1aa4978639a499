//! Own time per turn on the Responses API against Chat Completions: the
//! same batch of turns (each a tool loop: a `read_file` call, then an
//! answer) through the `eonyx` binary, against the same fake server, which
//! answers at once; per turn, median of N runs (default 5;
//! `EONYX_BENCH_SCALE` multiplies it). Chat Completions is the baseline
//! measured in the same run. Goal: Responses within 1.1× of Chat.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use camino::Utf8Path;
use eonyx_tests::bench::{self, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Reply, Sandbox};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// User turns per run.
const TURNS: usize = 10;

/// Median wall time per turn of `runs` batch runs of [`TURNS`] turns with
/// `api`, each in a fresh session.
fn per_turn(bin: &Path, api: &str, runs: usize) -> Result<(Duration, bool)> {
    let sandbox = Sandbox::try_new()?;
    sandbox.write("work/eonyx.json", "{}\n");
    sandbox.write("work/notes.txt", "the secret number is 4242\n");
    let fake = FakeServer::try_start()?;
    let config = Utf8Path::from_path(&sandbox.config).ok_or("config dir is not UTF-8")?;
    FakeConfig::openai(&fake.base_url())
        .set("retries", 0)
        .set("api", api)
        .set("reasoning_effort", "low")
        .write(config)?;
    let input: String = (0..TURNS).map(|i| format!("question {i}\n")).collect();
    let mut ok = true;
    let mut times = Samples::default();
    for run in 0..runs + 1 {
        for _ in 0..TURNS {
            fake.push(
                Reply::tool_call("read_file", json!({"path": "notes.txt"}))
                    .with_reasoning("Read the notes first."),
            )
            .push(Reply::text("It is 4242.").with_reasoning("Found it."));
        }
        let mut cmd = sandbox.command(bin);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let elapsed = {
            let start = std::time::Instant::now();
            let status = run_batch(cmd, &input)?;
            ok &= status;
            start.elapsed()
        };
        // The first run warms the caches.
        if run > 0 {
            times.0.push(elapsed / TURNS as u32);
        }
    }
    Ok((times.median(), ok))
}

fn run_batch(mut cmd: Command, input: &str) -> Result<bool> {
    use std::io::Write as _;
    let mut child = cmd.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    Ok(child.wait()?.success())
}

fn main() -> Result<()> {
    let runs = 5 * bench::scale();
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let (chat, chat_ok) = per_turn(bin, "chat", runs)?;
    let (responses, responses_ok) = per_turn(bin, "responses", runs)?;
    if !(chat_ok && responses_ok) {
        eprintln!("wires bench: warning: a batch run exited non-zero");
    }
    println!(
        "{}",
        bench::Line::timed(
            "own time per tool-loop turn: Responses API vs Chat Completions (same fake)",
            responses,
            chat,
            "< 1.1×"
        )
    );
    Ok(())
}
