//! The `print` check: nothing prints outside the cli's `Printer`.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Context, Result};
use regex::Regex;

use super::{Problem, files_with_ext, re, read, rel, report};

/// Files allowed to write to the terminal directly, each with the reason.
/// Paths are relative to the workspace root.
pub const PRINT_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/cli/src/printer.rs",
        "the Printer itself: the one place that writes to stdout and stderr",
    ),
    (
        "crates/acp/src/diag.rs",
        "`eonyx acp`'s diagnostics on stderr: its stdout is the protocol's, written by the connection",
    ),
    (
        "crates/tools/src/jobs/keeper.rs",
        "the job keeper's one note in the command's own output: its stderr is the command's pipe, read by eonyx, never the terminal",
    ),
];

/// Lines of `src` that print or take stdout/stderr directly, with what was
/// found. Comment lines are skipped, and so is the item after each
/// `#[cfg(test)]` (braces counted naively: a test module whose strings hold
/// unbalanced braces may end the skip early, which errs towards reporting).
pub fn print_violations(src: &str) -> Vec<(usize, String)> {
    static MACRO_RE: LazyLock<Regex> = LazyLock::new(|| re(r"\b(e?print(?:ln)?|dbg)!"));
    static STREAM_RE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?:\bio::|^|[^:.\w])(stdout|stderr)\s*\("));
    let (macro_re, stream_re) = (&*MACRO_RE, &*STREAM_RE);
    let mut out = Vec::new();
    // Inside a `#[cfg(test)]` item: its brace depth, and whether its body
    // has opened yet.
    let mut test_item: Option<(i64, bool)> = None;
    for (i, line) in src.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if let Some((depth, opened)) = &mut test_item {
            for c in t.chars() {
                match c {
                    '{' => {
                        *depth += 1;
                        *opened = true;
                    }
                    '}' => *depth -= 1,
                    _ => {}
                }
            }
            if (*opened && *depth <= 0) || (!*opened && t.ends_with(';')) {
                test_item = None;
            }
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            test_item = Some((0, false));
            continue;
        }
        if let Some(m) = macro_re.captures(line) {
            out.push((i + 1, format!("`{}!`", &m[1])));
        } else if let Some(m) = stream_re.captures(line) {
            out.push((i + 1, format!("`{}()`", &m[1])));
        }
    }
    out
}

/// The sources the print rule covers: every `crates/*/src/**/*.rs` (build
/// scripts, `tests/` and `benches/` are outside `src/`).
pub fn check_printing(root: &Path) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    let crates = root.join("crates");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .with_context(|| format!("cannot list {}", crates.display()))?
        .filter_map(|e| e.ok().map(|e| e.path().join("src")))
        .collect();
    dirs.sort();
    for dir in dirs {
        for file in files_with_ext(&dir, ".rs")? {
            let name = rel(root, &file);
            if PRINT_ALLOWED.iter().any(|(p, _)| *p == name) {
                continue;
            }
            for (line, what) in print_violations(&read(&file)?) {
                let message = if name.starts_with("crates/cli/") {
                    format!(
                        "{what} writes to the terminal outside the Printer; \
                         use `Printer` (crates/cli/src/printer.rs) instead"
                    )
                } else {
                    format!(
                        "{what} in a library crate: libraries never print; return \
                         the text or an event and let the cli's Printer show it"
                    )
                };
                problems.push(Problem {
                    file: name.clone(),
                    line,
                    message,
                });
            }
        }
    }
    Ok(problems)
}

pub fn print_step(root: &Path) -> Result<()> {
    report(
        "no printing outside the Printer",
        check_printing(root)?,
        "If a file really must write directly, add it to PRINT_ALLOWED in \
         xtask/src/tidy/print.rs with the reason.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printing_is_found_outside_comments_and_tests() {
        let src = "\
fn a() {
    println!(\"x\");
    // println!(\"in a comment\");
    eprint!(\"y\");
    let _ = std::io::stdout().lock();
    let e = io::stderr();
    pb.set_draw_target(ProgressDrawTarget::stderr());
    printer.stdout_is_terminal();
    dbg!(1);
}
#[cfg(test)]
mod tests {
    fn t() { println!(\"fine in tests\"); }
}
#[cfg(test)]
use std::io::stdout;
fn after_tests() { eprintln!(\"not fine\"); }
";
        assert_eq!(
            print_violations(src),
            vec![
                (2, "`println!`".to_owned()),
                (4, "`eprint!`".to_owned()),
                (5, "`stdout()`".to_owned()),
                (6, "`stderr()`".to_owned()),
                (9, "`dbg!`".to_owned()),
                (17, "`eprintln!`".to_owned()),
            ]
        );
    }

    #[test]
    fn the_workspace_prints_only_through_the_printer() {
        let problems = check_printing(&crate::util::workspace_root()).unwrap();
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
