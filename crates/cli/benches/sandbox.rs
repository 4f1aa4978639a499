//! What the shell sandbox adds per command: `sh -c true` spawned the way the
//! `shell` tool spawns it, through each backend that works here (bubblewrap;
//! Landlock + seccomp through `eonyx sandbox-exec`), against the same command
//! unconfined, median of N runs each (default 50; `EONYX_BENCH_SCALE`
//! multiplies it), in the same run. Goal: under 20 ms added per command.
//! Then a foreground command's own time (a ~0.3 s shell loop) run directly
//! and through the job keeper that reaps what it leaves (`eonyx job-keeper
//! --note`, as the `shell` tool runs it without bubblewrap), median of 9
//! each. Goal: within 1.05x.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use camino::Utf8PathBuf;
use eonyx_core::config::{SandboxBackend, SandboxConfig, SandboxMode};
use eonyx_core::paths::Env;
use eonyx_sandbox::{Plan, Sandbox};
use eonyx_tests::bench::{self, Samples};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Median wall time of `runs` runs of `make()` after 3 warm-up runs;
/// an error if any run fails.
fn time(runs: usize, make: &dyn Fn() -> Command) -> Result<Duration> {
    for _ in 0..3 {
        make().status()?;
    }
    let mut times = Samples::default();
    for _ in 0..runs {
        let mut cmd = make();
        let status = times.time(|| cmd.stdout(Stdio::null()).stderr(Stdio::null()).status())?;
        if !status.success() {
            return Err(format!("`{:?}` failed: {status}", make()).into());
        }
    }
    Ok(times.median())
}

fn main() -> Result<()> {
    let runs = 50 * bench::scale();
    let dir = tempfile::tempdir()?;
    let root = Utf8PathBuf::from_path_buf(dir.path().canonicalize()?)
        .map_err(|p| format!("not UTF-8: {}", p.display()))?;
    std::fs::create_dir(root.join(".git"))?;
    std::fs::write(root.join("eonyx.json"), "{}\n")?;
    let helper = PathBuf::from(env!("CARGO_BIN_EXE_eonyx"));
    let sandbox = |backend| {
        let config = SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            backend,
            ..SandboxConfig::default()
        };
        Sandbox::new(config, &root, &Env::from_process(), Some(helper.clone()))
    };
    let unconfined = Sandbox::off(&root);
    let baseline = time(runs, &|| {
        unconfined.command(&Plan::Off, "true", root.as_std_path())
    })?;
    for (name, backend) in [
        ("bwrap", SandboxBackend::Bwrap),
        ("landlock", SandboxBackend::Landlock),
    ] {
        let sb = sandbox(backend);
        let plan = sb.plan();
        if !matches!(plan, Plan::Confined(_)) {
            eprintln!(
                "sandbox bench: {name} does not work here: {}",
                sb.describe(&plan)
            );
            continue;
        }
        let ours = time(runs, &|| sb.command(&plan, "true", root.as_std_path()))?;
        let added = ours.saturating_sub(baseline);
        println!(
            "{}",
            bench::Line::timed(
                format!(
                    "sandbox: {name} `sh -c true` (adds {})",
                    bench::human(added)
                ),
                ours,
                baseline,
                "adds < 20 ms",
            )
        );
    }
    // A foreground command's own time, direct and under the keeper.
    let busy = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done";
    let direct = time(9, &|| {
        let mut c = Command::new("sh");
        c.args(["-c", busy]);
        c
    })?;
    let kept = time(9, &|| {
        let mut c = Command::new(&helper);
        c.args(["job-keeper", "--note", "--", "sh", "-c", busy]);
        c
    })?;
    println!(
        "{}",
        bench::Line::timed(
            "sandbox: a foreground command's own time under the reaping keeper",
            kept,
            direct,
            "<= 1.05x",
        )
    );
    Ok(())
}
