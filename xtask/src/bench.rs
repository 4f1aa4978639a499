//! `cargo xtask bench`: run every benchmark (`cargo bench --workspace`) and
//! gather their `BENCH|measure|ours|baseline|ratio|goal` lines into one
//! markdown table, printed to stdout and written to `target/bench/report.md`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use crate::util::{self, cargo, describe};

/// One `BENCH|…` line: the benches print it with the same type
/// (`eonyx_tests::bench`), so format and parser live in one place.
pub use eonyx_tests::bench::Line as BenchLine;

/// Parse a `BENCH|measure|ours|baseline|ratio|goal` line; other lines → None.
pub fn parse_line(line: &str) -> Option<BenchLine> {
    BenchLine::parse(line)
}

/// The markdown report.
pub fn report(lines: &[BenchLine]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "| measure | ours | baseline | ratio | goal |\n| --- | ---: | ---: | ---: | --- |\n",
    );
    for l in lines {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            esc(&l.measure),
            esc(&l.ours),
            esc(&l.baseline),
            esc(&l.ratio),
            esc(&l.goal)
        ));
    }
    out
}

pub fn run(args: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["bench", "--workspace"]);
    // Extra args go to cargo bench (e.g. `-p eonyx-store`, `--bench list`).
    if !args.is_empty() {
        cmd = cargo();
        cmd.arg("bench").args(args);
        if !args.iter().any(|a| a == "-p" || a.starts_with("--package")) {
            cmd.arg("--workspace");
        }
    }
    let what = describe(&cmd);
    eprintln!("+ {what}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("could not start `{what}`"))?;
    let stdout = child
        .stdout
        .take()
        .context("no stdout pipe from cargo bench")?;
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("could not read cargo bench output")?;
        // Show progress on stderr; keep stdout for the report.
        eprintln!("{line}");
        if let Some(b) = parse_line(&line) {
            lines.push(b);
        }
    }
    let status = child.wait().context("cargo bench did not finish")?;
    let text = report(&lines);
    let dir = util::target_dir().join("bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let path = dir.join("report.md");
    std::fs::write(&path, &text).with_context(|| format!("could not write {}", path.display()))?;
    println!("{text}");
    eprintln!(
        "bench: {} measures; report in {}",
        lines.len(),
        path.display()
    );
    if !status.success() {
        bail!("`{what}` failed ({status}); the report holds the benches that ran");
    }
    if lines.is_empty() {
        bail!("no benchmark printed a `BENCH|…` line");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_lines_are_parsed_and_others_ignored() {
        let l = parse_line("BENCH|list 10k sessions|3.2 ms|41.0 ms|0.08x|<= 0.1x\n").unwrap();
        assert_eq!(l.measure, "list 10k sessions");
        assert_eq!(l.ours, "3.2 ms");
        assert_eq!(l.baseline, "41.0 ms");
        assert_eq!(l.ratio, "0.08x");
        assert_eq!(l.goal, "<= 0.1x");
        assert!(parse_line("running 0 tests").is_none());
        assert!(parse_line("BENCH|too|few").is_none());
        assert!(parse_line("BENCH||a|b|c|d").is_none());
    }

    #[test]
    fn report_is_a_markdown_table() {
        let lines = vec![
            parse_line("BENCH|startup --version|1.1 ms|0.4 ms|2.75x|< 20 ms").unwrap(),
            parse_line("BENCH|search 1 GB|0.9 s|0.8 s|1.12x|<= 1.5x").unwrap(),
        ];
        assert_eq!(
            report(&lines),
            "| measure | ours | baseline | ratio | goal |\n\
             | --- | ---: | ---: | ---: | --- |\n\
             | startup --version | 1.1 ms | 0.4 ms | 2.75x | < 20 ms |\n\
             | search 1 GB | 0.9 s | 0.8 s | 1.12x | <= 1.5x |\n"
        );
    }
}
