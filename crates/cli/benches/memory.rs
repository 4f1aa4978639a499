//! Peak memory of what a working day runs, against a bare
//! `eonyx --version` in the same run: an 18-turn batch (18 lines on stdin,
//! each a turn against the fake server) and a one-turn `eonyx run`. Each
//! figure is the kernel's maximum RSS of that one process (a child of a
//! child that waits for it and reads `getrusage(RUSAGE_CHILDREN)`), the
//! least of 5 runs. Goal (issue 58): the 18-turn batch at most 16 MiB; the
//! ratios show what a turn costs above the process itself.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Stdio};

use eonyx_tests::bench::Line;
use eonyx_tests::{FakeConfig, FakeServer, Reply, TestEnv};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Set in the measuring child: the binary to run, its arguments (separated
/// by the unit separator, U+001F) and the file its stdin reads.
const CHILD_BIN: &str = "EONYX_BENCH_MEM_BIN";
const CHILD_ARGS: &str = "EONYX_BENCH_MEM_ARGS";
const CHILD_STDIN: &str = "EONYX_BENCH_MEM_STDIN";

const TURNS: usize = 18;
const RUNS: usize = 5;

fn main() -> Result<()> {
    if let Some(bin) = std::env::var_os(CHILD_BIN) {
        return child(Path::new(&bin));
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let server = FakeServer::start();
    server.set_default_reply(Reply::text(
        "The quick brown fox jumps over the lazy dog. ".repeat(40),
    ));
    let env = TestEnv::new()?;
    env.write_config(&FakeConfig::openai(&server.base_url()).set("retries", 0))?;
    let input = tempfile::NamedTempFile::new()?;
    let lines: String = (1..=TURNS)
        .map(|i| format!("tell me fact number {i} about foxes\n"))
        .collect();
    std::fs::write(input.path(), lines)?;
    let empty = tempfile::NamedTempFile::new()?;

    let version = least_peak(&env, bin, &["--version"], empty.path())?;
    let batch = least_peak(&env, bin, &["--new"], input.path())?;
    let one = least_peak(&env, bin, &["run", "tell me about foxes"], empty.path())?;
    println!(
        "{}",
        Line::quantity(
            format!("peak memory: {TURNS}-turn batch vs eonyx --version"),
            batch,
            version,
            "MiB",
            "batch <= 16 MiB",
        )
    );
    println!(
        "{}",
        Line::quantity(
            "peak memory: one-turn eonyx run vs eonyx --version",
            one,
            version,
            "MiB",
            "(shown)",
        )
    );
    if batch > 16.0 {
        eprintln!("memory bench: the {TURNS}-turn batch peaked at {batch:.1} MiB, over 16 MiB");
    }
    Ok(())
}

/// The least peak RSS, in MiB, of `RUNS` runs of `bin ARGS < stdin` in `env`.
fn least_peak(env: &TestEnv, bin: &Path, args: &[&str], stdin: &Path) -> Result<f64> {
    let me = std::env::current_exe()?;
    let mut least = f64::INFINITY;
    for _ in 0..RUNS {
        let mut cmd: Command = env.command(&me);
        cmd.env(CHILD_BIN, bin)
            .env(CHILD_ARGS, args.join("\u{1f}"))
            .env(CHILD_STDIN, stdin)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(format!("measuring `eonyx {}` failed", args.join(" ")).into());
        }
        let mib: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
        least = least.min(mib);
    }
    Ok(least)
}

/// In the measuring child: run the one command, then print the peak RSS of
/// this process's waited-for children (that command) in MiB.
fn child(bin: &Path) -> Result<()> {
    let args = std::env::var(CHILD_ARGS)?;
    let stdin = std::fs::File::open(std::env::var_os(CHILD_STDIN).ok_or("no stdin file")?)?;
    let out = Command::new(bin)
        .args(args.split('\u{1f}'))
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "`eonyx {}` failed: {}",
            args.replace('\u{1f}', " "),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)?;
    println!("{}", usage.max_rss() as f64 / 1024.0);
    Ok(())
}
