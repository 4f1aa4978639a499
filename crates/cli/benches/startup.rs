//! Startup time of the `eonyx` binary: `eonyx --version` and `eonyx sessions`
//! on an empty data dir, median of N runs (default 20; `EONYX_BENCH_SCALE`
//! multiplies it), against spawning `true` in the same run (the cost of a
//! process spawn). Goal: under 20 ms each.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// Median wall time of `runs` runs of `make()` (after 2 warm-up runs).
/// Returns the median and whether every run exited 0.
fn time(runs: usize, make: &dyn Fn() -> Command) -> Result<(Duration, bool)> {
    let mut all_ok = true;
    for _ in 0..2 {
        make().status()?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let status = make().status()?;
        times.push(start.elapsed());
        all_ok &= status.success();
    }
    Ok((median(times), all_ok))
}

fn quiet(mut cmd: Command) -> Command {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn main() -> Result<()> {
    let scale: usize = std::env::var("EONYX_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&s| s > 0)
        .unwrap_or(1);
    let runs = 20 * scale;
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let dir = tempfile::tempdir()?;
    for sub in ["data", "config", "home"] {
        std::fs::create_dir_all(dir.path().join(sub))?;
    }
    let sandboxed = |args: &[&str]| {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(dir.path())
            .env("EONYX_DATA_DIR", dir.path().join("data"))
            .env("EONYX_CONFIG_DIR", dir.path().join("config"))
            .env("HOME", dir.path().join("home"))
            .env("NO_COLOR", "1");
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
        let ratio = ours.as_secs_f64() / baseline.as_secs_f64().max(1e-9);
        println!(
            "BENCH|{measure}|{}|{}|{ratio:.2}x|< 20 ms",
            human(ours),
            human(baseline)
        );
    }
    Ok(())
}
