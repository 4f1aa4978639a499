//! What starting a background job costs a turn: `eonyx run` whose model
//! calls `shell` with `true` as a background job, against the same turn
//! calling it in the foreground, the same fake server, in one run
//! (alternating turn by turn, so machine load hits both alike); each from
//! the `turn_started` event to `turn_completed`. Median of N turns each
//! (default 10; `EONYX_BENCH_SCALE` multiplies it). Goal: adds < 20 ms.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::Duration;

use eonyx_tests::bench::{self, Line, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Paced, Reply, TestEnv};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One `eonyx run --json --allow-shell`: turn_started → turn_completed,
/// the model calling `shell` with `args`, then answering.
fn turn(bin: &Path, env: &TestEnv, server: &FakeServer, background: bool) -> Result<Duration> {
    let args = if background {
        json!({"command": "true", "background": true})
    } else {
        json!({"command": "true"})
    };
    server.push_all([Reply::tool_call("shell", args), Reply::text("done")]);
    let mut cmd = env.command(bin);
    cmd.args(["run", "--json", "--allow-shell", "run true"]);
    Paced::time_turn(&mut cmd)
}

fn main() -> Result<()> {
    let runs = 10 * bench::scale();
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let server = FakeServer::start();
    let env = TestEnv::new()?;
    env.write_config(&FakeConfig::openai(&server.base_url()).set("retries", 0))?;
    let (mut fg, mut bg) = (Samples::default(), Samples::default());
    for i in 0..runs + 2 {
        let f = turn(bin, &env, &server, false)?;
        let b = turn(bin, &env, &server, true)?;
        if i >= 2 {
            fg.0.push(f);
            bg.0.push(b);
        }
    }
    let (ours, baseline) = (bg.median(), fg.median());
    println!(
        "{}",
        Line::timed(
            format!(
                "jobs: a turn starting `true` as a job vs in the foreground (adds {})",
                bench::human(ours.saturating_sub(baseline))
            ),
            ours,
            baseline,
            "adds < 20 ms",
        )
    );
    Ok(())
}
