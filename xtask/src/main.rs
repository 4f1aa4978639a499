//! Project automation for eonyx, run as `cargo xtask <task>`.
//!
//! Tasks: `ci` (fmt check, the tidy checks of `tidy/`, clippy `-D warnings`,
//! `cargo test --workspace`, `cargo doc` with warnings denied, README-vs-code
//! check), `dist` (reproducible release archive + SHA256SUMS), `bench` (runs
//! every `harness = false` bench and gathers their `BENCH|…` lines into one
//! report), `local-model`, `e2e`, `fuzz` (the libFuzzer targets of `fuzz/`,
//! each for a time or a number of runs, with runs, crashes and peak RSS).
//!
//! Invariants: every external command is echoed (`+ cmd`) to stderr before it
//! runs; a failing step names itself; `dist` archives are byte-for-byte a
//! function of their inputs (sorted entries, fixed mtimes/owners, fixed gzip
//! header); nothing here writes outside `target/` except temp dirs.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod ci;
mod dist;
mod docs;
mod e2e;
mod fuzz;
mod local_model;
mod tidy;
mod util;

use anyhow::{Result, bail};

const USAGE: &str = "\
usage: cargo xtask <task> [args]

tasks:
  ci [STEP...]        fmt, print, cites, deps, clippy, test, doc, readme (all by
                      default, in that order)
  dist [--check]      release archive in target/dist/ (+ SHA256SUMS); --check also
                      rebuilds in a second target dir and compares
  bench               cargo bench --workspace, report in target/bench/report.md
  local-model [...]   fetch/run the small local model used by e2e tests
  e2e [...]           end-to-end tests against the local model
  fuzz [--seconds N] [--runs N] [TARGET...]
                      build the fuzz targets (stable, no sanitizer) and run each
                      for N seconds (600) or N runs (1,000,000); prints runs,
                      crashes and peak RSS per target";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn dispatch(args: &[String]) -> Result<()> {
    let Some((task, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        bail!("no task given");
    };
    match task.as_str() {
        "ci" => ci::run(rest),
        "dist" => dist::run(rest),
        "bench" => bench::run(rest),
        "local-model" => local_model::run(rest),
        "e2e" => e2e::run(rest),
        "fuzz" => fuzz::run(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => {
            eprintln!("{USAGE}");
            bail!("unknown task `{other}`")
        }
    }
}
