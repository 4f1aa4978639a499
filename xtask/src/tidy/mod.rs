//! The tidy checks of `cargo xtask ci` (as rust-analyzer's `tidy`): source
//! scans that keep house rules from drifting. Each failure names `file:line`
//! and says what to do. One file per check, plus the shared helpers here:
//!
//! - `deps` (`deps.rs`): no declared-but-unused dependencies (`cargo machete`).
//! - `print` (`print.rs`): nothing prints outside the cli's `Printer`.
//! - `cycles` (`cycles.rs`): no two modules of one crate import each other.
//! - `commands` (`commands.rs`): the frontends name no slash command, run
//!   no goal loop and continue or pause no goal (the command layer in
//!   `eonyx_agent::commands` does).
//! - `events` (`events.rs`): no function of the agent takes an event
//!   callback; events go through the handle the agent owns.
//! - `cites` (`cites.rs`): every citation of a repository doc points at a
//!   file and heading that exist, and nothing cites the out-of-tree SPEC.
//! - `layers` (`layers.rs`): ARCHITECTURE.md draws exactly the crate arrows
//!   the Cargo.toml files declare.
//! - `sizes` (`sizes.rs`): no source file over 600 lines.

mod cites;
mod commands;
mod cycles;
mod deps;
mod events;
mod layers;
mod print;
mod sizes;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use regex::Regex;

pub use cites::cites_step;
pub use commands::commands_step;
pub use cycles::cycles_step;
pub use deps::deps_step;
pub use events::events_step;
pub use layers::layers_step;
pub use print::print_step;
pub use sizes::sizes_step;

/// One finding, printed as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// Relative to the workspace root, `/`-separated.
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Fails with every problem listed, one per line.
fn report(check: &str, problems: Vec<Problem>, fix: &str) -> Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    let mut msg = String::new();
    for p in &problems {
        msg.push_str(&format!("{p}\n"));
    }
    msg.push_str(fix);
    bail!("{check}: {} problem(s)\n{msg}", problems.len())
}

/// Directories never scanned.
const SKIP_DIRS: &[&str] = &["target", ".git", "node_modules"];

/// Every file under `dir` (recursively, skipping [`SKIP_DIRS`]) whose name
/// ends with `ext`, sorted.
fn files_with_ext(dir: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if !d.is_dir() {
            continue;
        }
        for entry in
            std::fs::read_dir(&d).with_context(|| format!("cannot list {}", d.display()))?
        {
            let entry = entry.with_context(|| format!("cannot list {}", d.display()))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                if !SKIP_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if name.ends_with(ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A regex from a constant pattern (every pattern here is exercised by the
/// unit tests, so a bad one fails them, never a user's input).
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant regex compiles")
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}
