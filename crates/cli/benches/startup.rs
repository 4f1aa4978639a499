//! Startup time of the `eonyx` binary: `eonyx --version` and `eonyx sessions`
//! on an empty data dir, median of N runs (default 20; `EONYX_BENCH_SCALE`
//! multiplies it), against spawning `true` in the same run (the cost of a
//! process spawn). Goal: under 20 ms each.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use eonyx_tests::Sandbox;
use eonyx_tests::bench::{self, Samples};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Median wall time of `runs` runs of `make()` (after 2 warm-up runs).
/// Returns the median and whether every run exited 0.
fn time(runs: usize, make: &dyn Fn() -> Command) -> Result<(Duration, bool)> {
    let mut all_ok = true;
    for _ in 0..2 {
        make().status()?;
    }
    let mut times = Samples::default();
    for _ in 0..runs {
        let mut cmd = make();
        let status = times.time(|| cmd.status())?;
        all_ok &= status.success();
    }
    Ok((times.median(), all_ok))
}

fn quiet(mut cmd: Command) -> Command {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn main() -> Result<()> {
    let runs = 20 * bench::scale();
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let sandbox = Sandbox::try_new()?;
    let sandboxed = |args: &[&str]| {
        let mut cmd = sandbox.command(bin);
        cmd.args(args);
        quiet(cmd)
    };

    let (baseline, _) = time(runs, &|| quiet(Command::new("true")))?;
    for (measure, args) in [
        ("startup: eonyx --version", &["--version"][..]),
        (
            "startup: eonyx sessions (empty data dir)",
            &["sessions"][..],
        ),
    ] {
        let (ours, ok) = time(runs, &|| sandboxed(args))?;
        if !ok {
            eprintln!(
                "startup bench: warning: `eonyx {}` exited non-zero",
                args.join(" ")
            );
        }
        println!("{}", bench::Line::timed(measure, ours, baseline, "< 20 ms"));
    }
    Ok(())
}
