//! `cargo xtask fuzz [--seconds N] [--runs N] [TARGET...]`: build the
//! libFuzzer targets of `fuzz/` and run each in turn for N seconds
//! (default 600) or N runs (default 1,000,000), whichever ends first; then
//! print runs, crashes and peak RSS per target, and fail if any crashed or
//! went over 1 GiB.
//!
//! Built on the stable toolchain as `cargo fuzz build -s none` builds: the
//! coverage instrumentation libFuzzer needs (`-Cpasses=sancov-module` and
//! its `-Cllvm-args`, all stable flags), no sanitizer (sanitizers need
//! nightly; the targets are safe Rust, whose bugs are panics). `--target`
//! is given so the flags reach the fuzzed code but not build scripts and
//! proc macros. The build goes to `<target>/fuzz`, corpora to
//! `<target>/fuzz/corpus/<name>` (kept between runs), crash inputs to
//! `<target>/fuzz/artifacts/<name>`; `fuzz/seeds/<name>` holds the seeds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::util::{self, cargo, describe};

/// Every target, in the order they run (`fuzz/Cargo.toml`'s `[[bin]]`s).
pub const TARGETS: [&str; 10] = [
    "config_loader",
    "sse_parser",
    "jsonl_reader",
    "responses_stream",
    "hook_answer",
    "acp_incoming",
    "session_records",
    "html_to_markdown",
    "shell_split",
    "shell_differential",
];

/// A target over this much memory fails (libFuzzer's `-rss_limit_mb`).
const RSS_LIMIT_MB: u64 = 1024;

/// One input that takes longer than this fails the target (libFuzzer's
/// `-timeout`; its default, 20 minutes, let a campaign stall on one).
const TIMEOUT_SECS: u64 = 10;

/// The instrumentation `cargo fuzz build --sanitizer none` adds.
const RUSTFLAGS: [&str; 9] = [
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "-Cllvm-args=-sanitizer-coverage-stack-depth",
    "--cfg=fuzzing",
    "-Cdebug-assertions",
    "-Coverflow-checks",
];

struct Options {
    seconds: u64,
    runs: u64,
    targets: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut o = Options {
        seconds: 600,
        runs: 1_000_000,
        targets: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |flag: &str| -> Result<u64> {
            let v = it
                .next()
                .with_context(|| format!("{flag} needs a number: {flag} N"))?;
            v.parse()
                .with_context(|| format!("{flag} {v}: not a whole number"))
        };
        match a.as_str() {
            "--seconds" => o.seconds = number("--seconds")?,
            "--runs" => o.runs = number("--runs")?,
            t if TARGETS.contains(&t) => o.targets.push(t.to_owned()),
            other => bail!(
                "unknown argument `{other}`: use --seconds N, --runs N, or target names ({})",
                TARGETS.join(", ")
            ),
        }
    }
    if o.seconds == 0 || o.runs == 0 {
        bail!("--seconds and --runs must be at least 1");
    }
    if o.targets.is_empty() {
        o.targets = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    }
    Ok(o)
}

/// The host's target triple (`rustc -vV`).
fn host() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = util::output(Command::new(rustc).arg("-vV"))?;
    out.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("`rustc -vV` printed no host line")
}

/// What one target's run gave.
#[derive(Debug, Default, PartialEq)]
pub struct Figures {
    pub runs: u64,
    pub peak_rss_mb: u64,
    pub crashed: bool,
}

/// Read libFuzzer's `-print_final_stats=1` lines and its crash reports.
pub fn figures(log: &str) -> Figures {
    let stat = |name: &str| {
        log.lines()
            .filter_map(|l| l.trim().strip_prefix(name))
            .filter_map(|v| v.trim().parse().ok())
            .next_back()
    };
    Figures {
        runs: stat("stat::number_of_executed_units:").unwrap_or(0),
        peak_rss_mb: stat("stat::peak_rss_mb:").unwrap_or(0),
        crashed: log.contains("ERROR: libFuzzer")
            || log.contains("panicked at")
            || log.contains("SUMMARY: libFuzzer"),
    }
}

pub fn run(args: &[String]) -> Result<()> {
    let o = parse(args)?;
    let root = util::workspace_root();
    let fuzz_dir = root.join("fuzz");
    let out = util::target_dir().join("fuzz");
    let host = host()?;
    let mut build = cargo();
    build
        .current_dir(&fuzz_dir)
        .args(["build", "--release", "--target", &host, "--bins"])
        .env("CARGO_TARGET_DIR", &out)
        .env("CARGO_ENCODED_RUSTFLAGS", RUSTFLAGS.join("\x1f"))
        .env_remove("RUSTFLAGS");
    util::run(&mut build)?;
    let bins = out.join(&host).join("release");

    let mut rows = Vec::new();
    for name in &o.targets {
        let corpus = out.join("corpus").join(name);
        let artifacts = out.join("artifacts").join(name);
        for d in [&corpus, &artifacts] {
            std::fs::create_dir_all(d)
                .with_context(|| format!("could not create {}", d.display()))?;
        }
        let f = fuzz_one(&bins.join(name), &corpus, &artifacts, &fuzz_dir, name, &o)?;
        eprintln!(
            "fuzz: {name}: {} runs, {} crash, peak RSS {} MB",
            f.runs,
            u8::from(f.crashed),
            f.peak_rss_mb
        );
        rows.push((name.clone(), f));
    }
    println!("| target | runs | crashes | peak RSS |\n| --- | ---: | ---: | ---: |");
    for (name, f) in &rows {
        println!(
            "| {name} | {} | {} | {} MB |",
            f.runs,
            u8::from(f.crashed),
            f.peak_rss_mb
        );
    }
    let bad: Vec<&str> = rows
        .iter()
        .filter(|(_, f)| f.crashed || f.peak_rss_mb > RSS_LIMIT_MB)
        .map(|(n, _)| n.as_str())
        .collect();
    if !bad.is_empty() {
        bail!(
            "{} crashed or went over {RSS_LIMIT_MB} MB; the inputs are in {}",
            bad.join(", "),
            out.join("artifacts").display()
        );
    }
    Ok(())
}

fn fuzz_one(
    bin: &Path,
    corpus: &Path,
    artifacts: &Path,
    fuzz_dir: &Path,
    name: &str,
    o: &Options,
) -> Result<Figures> {
    let seeds: PathBuf = fuzz_dir.join("seeds").join(name);
    let mut cmd = Command::new(bin);
    cmd.arg(format!("-max_total_time={}", o.seconds))
        .arg(format!("-runs={}", o.runs))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-timeout={TIMEOUT_SECS}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(corpus);
    if seeds.is_dir() {
        cmd.arg(&seeds);
    }
    let what = describe(&cmd);
    eprintln!("+ {what}");
    let run = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("could not start `{what}` (did the build succeed?)"))?;
    let log = String::from_utf8_lossy(&run.stderr);
    let mut f = figures(&log);
    if !run.status.success() {
        f.crashed = true;
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        for l in tail.into_iter().rev() {
            eprintln!("  {l}");
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_stats_and_crashes_are_read() {
        let log = "INFO: Seed: 1\n#2\tINITED\nDone 1000000 runs in 60 second(s)\nstat::number_of_executed_units: 1000000\nstat::average_exec_per_sec:     16666\nstat::new_units_added:          42\nstat::slowest_unit_time_sec:    0\nstat::peak_rss_mb:              57\n";
        assert_eq!(
            figures(log),
            Figures {
                runs: 1_000_000,
                peak_rss_mb: 57,
                crashed: false
            }
        );
        let crash = "thread '<unnamed>' panicked at fuzz_targets/x.rs:3:5:\nboom\n==12== ERROR: libFuzzer: deadly signal\nSUMMARY: libFuzzer: deadly signal\nstat::number_of_executed_units: 77\nstat::peak_rss_mb: 40\n";
        let f = figures(crash);
        assert!(f.crashed);
        assert_eq!(f.runs, 77);
    }

    #[test]
    fn every_target_of_the_fuzz_crate_is_run() {
        let manifest =
            std::fs::read_to_string(util::workspace_root().join("fuzz/Cargo.toml")).unwrap();
        let v: toml::Table = toml::from_str(&manifest).unwrap();
        let mut bins: Vec<&str> = v["bin"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect();
        let mut ours = TARGETS.to_vec();
        bins.sort_unstable();
        ours.sort_unstable();
        assert_eq!(bins, ours);
    }

    #[test]
    fn arguments_are_checked() {
        let o = parse(&["--seconds".into(), "5".into(), "hook_answer".into()]).unwrap();
        assert_eq!((o.seconds, o.runs), (5, 1_000_000));
        assert_eq!(o.targets, ["hook_answer"]);
        assert_eq!(parse(&[]).unwrap().targets.len(), TARGETS.len());
        assert!(parse(&["--seconds".into()]).is_err());
        assert!(parse(&["nope".into()]).is_err());
    }
}
