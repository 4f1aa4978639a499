//! This build's own time per turn against an older `eonyx` binary, the same
//! fake server and answer, in one run: `run --json`'s `turn_started` to its
//! `turn_completed` (process start and session opening left out), median of
//! N turns (default 20; `EONYX_BENCH_SCALE` multiplies it), the two binaries
//! interleaved so a change in machine load hits both. The older binary is
//! `EONYX_BENCH_BASELINE_BIN` (for example a release build of the commit
//! before a refactor); without it the bench says so and measures nothing.
//! `EONYX_BENCH_OURS_BIN` replaces this build with another binary (two
//! commits compared, neither of them this one).
//! The same for `/status` in a `--json` batch run (the line written to
//! its `status` event, the session already open): the command layer's
//! cost per command (issue 44).
//! Goal: within 1.05× (a change of structure costs no time).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Duration;

use eonyx_tests::bench::{self, Line, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Paced, Reply, TestEnv, run_turns};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const PROMPT: &str = "tell me about foxes";

fn main() -> Result<()> {
    let Some(baseline) = std::env::var_os("EONYX_BENCH_BASELINE_BIN").map(PathBuf::from) else {
        eprintln!(
            "versions: set EONYX_BENCH_BASELINE_BIN to an older eonyx binary to compare this build's turns with it; skipped"
        );
        return Ok(());
    };
    if !baseline.is_file() {
        return Err(format!(
            "EONYX_BENCH_BASELINE_BIN is {}, which is not a file; build the older commit and point it at target/release/eonyx",
            baseline.display()
        )
        .into());
    }
    let ours_bin = std::env::var_os("EONYX_BENCH_OURS_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_eonyx")), PathBuf::from);
    let server = FakeServer::start();
    server.set_default_reply(Reply::text(
        "The quick brown fox jumps over the lazy dog. ".repeat(90),
    ));
    let env = TestEnv::new()?;
    env.write_config(&FakeConfig::openai(&server.base_url()).set("retries", 0))?;
    let turns = 20 * bench::scale();
    let mut ours: Vec<Duration> = Vec::new();
    let mut base: Vec<Duration> = Vec::new();
    let mut ours_status: Vec<Duration> = Vec::new();
    let mut base_status: Vec<Duration> = Vec::new();
    for _ in 0..4 {
        base.extend(run_turns(&baseline, &env, PROMPT, turns / 4)?.0);
        ours.extend(run_turns(&ours_bin, &env, PROMPT, turns / 4)?.0);
        base_status.extend(status_times(&baseline, &env, turns)?);
        ours_status.extend(status_times(&ours_bin, &env, turns)?);
    }
    println!(
        "{}",
        Line::timed(
            format!(
                "own time per turn: {} vs {} (same fake)",
                ours_bin.display(),
                baseline.display()
            ),
            Samples(ours).median(),
            Samples(base).median(),
            "≤ 1.05×",
        )
    );
    println!(
        "{}",
        Line::timed(
            format!(
                "own time per /status: {} vs {} (same fake)",
                ours_bin.display(),
                baseline.display()
            ),
            Samples(ours_status).median(),
            Samples(base_status).median(),
            "≤ 1.05×",
        )
    );
    Ok(())
}

/// `n` `/status` lines of one `--json` batch run, each timed from its
/// line written to its `status` event (two more first, left out).
fn status_times(bin: &std::path::Path, env: &TestEnv, n: usize) -> Result<Vec<Duration>> {
    let mut cmd = env.command(bin);
    cmd.args(["--json", "--new"]);
    let mut child = Paced::spawn(&mut cmd)?;
    child
        .wait_for(|e| e["type"] == "session")
        .map_err(|evs| format!("{} batch ended early: {evs:?}", bin.display()))?;
    let mut times = Vec::new();
    for _ in 0..n + 2 {
        let sent = std::time::Instant::now();
        child.send("/status")?;
        child
            .wait_for(|e| e["type"] == "status")
            .map_err(|evs| format!("{} batch ended early: {evs:?}", bin.display()))?;
        times.push(sent.elapsed());
    }
    let (status, stderr, _) = child.finish()?;
    if !status.success() {
        return Err(format!("{} batch failed: {stderr}", bin.display()).into());
    }
    times.drain(..2);
    Ok(times)
}
