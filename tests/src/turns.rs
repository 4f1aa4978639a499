//! Timing `eonyx run` turns for the benches: from `run --json`'s
//! `turn_started` event to its `turn_completed`, so process start and
//! session opening are left out.

use std::path::Path;
use std::time::Instant;

use crate::bench::Samples;
use crate::{Paced, TestEnv};

/// `turns` runs of `eonyx run --json PROMPT` with `bin` in `env` (two more
/// first, untimed, to warm the caches): each one's turn time.
pub fn run_turns(
    bin: &Path,
    env: &TestEnv,
    prompt: &str,
    turns: usize,
) -> Result<Samples, Box<dyn std::error::Error>> {
    let mut times = Samples::default();
    for _ in 0..turns + 2 {
        let mut cmd = env.command(bin);
        cmd.args(["run", "--json", prompt]);
        let mut child = Paced::spawn(&mut cmd)?;
        child
            .wait_for(|e| e["type"] == "turn_started")
            .map_err(|evs| format!("{} run ended early: {evs:?}", bin.display()))?;
        let started = Instant::now();
        child
            .wait_for(|e| e["type"] == "turn_completed")
            .map_err(|evs| format!("{} run ended early: {evs:?}", bin.display()))?;
        times.0.push(started.elapsed());
        let (status, stderr, _) = child.finish()?;
        if !status.success() {
            return Err(format!("{} run failed: {stderr}", bin.display()).into());
        }
    }
    times.0.drain(..2);
    Ok(times)
}
