//! Prompt assembly: context-file discovery and inheritance (docs/prompt.md#context-files) and the
//! system prompt's two parts (docs/prompt.md#the-request).
//!
//! [`ContextLoader`] reads the global `<config dir>/AGENTS.md`, then, in
//! each directory of [`eonyx_core::paths::Project::dirs`] from outermost to
//! nearest, `AGENTS.md` and the `*.context.md` files sorted by name. The
//! result's `stable_prefix` (base instructions and every context section)
//! and [`volatile_suffix`] (the UTC date line, then the running summary)
//! form an [`eonyx_core::SystemPrompt`]; the boundary between the two is
//! where a provider puts its cache breakpoint.
//!
//! Invariants:
//! - The upward walk is core's ([`eonyx_core::paths::find_project`]); this
//!   crate never walks again, it only lists the directories it was given.
//! - Same files and same date give a byte-identical prompt: fixed order, no
//!   map iteration order, no timestamp other than the date (in the suffix).
//! - Never a silent cut: every truncation is stated in the prompt (a line
//!   starting `[eonyx:`) and returned as a warning. Cuts fall on character
//!   boundaries. Under the total cap the nearest files stay whole first.
//! - Loading never fails: missing files are skipped, empty files are
//!   skipped, non-UTF-8 bytes are replaced, and symlink loops, non-regular
//!   files and unreadable files or directories are skipped with a warning.
//! - All file access goes through [`ContextReader`], so error paths are
//!   testable as root.
//! - The crate never prints.
//!
//! Skills (docs/skills.md, section "Skills") live in [`skills`]: found along the same directories,
//! listed in the stable prefix after the context files, re-attached after
//! the summary once a compaction has removed the calls that loaded them.

mod loader;
mod memory;
mod reader;
pub mod skills;

pub use loader::{AGENTS_FILE, CONTEXT_SUFFIX, ContextFileInfo, ContextLoader, Loaded};
pub use memory::{MEMORY_HEADING, MemorySection, memory_left_out, memory_section};
pub use reader::{ContextReader, FileContent, FsReader};
pub use skills::{Skill, SkillScope, Skills, SkillsInUse};

use eonyx_core::SystemPrompt;

/// Heading of the summary section in the volatile suffix.
pub const SUMMARY_HEADING: &str = "# Summary of earlier conversation";

const BASE_INSTRUCTIONS: &str = "\
You are eonyx, a coding agent that works in the user's terminal, inside their project.

Help with software tasks: understanding code, tracking down bugs, planning and making changes, running builds and tests. Ground every answer in what you have actually read or run; never invent file contents, command output or results. When something is unclear or risky, say so and ask.

About your tools:
- shell: run a shell command in the project directory. The user may have to approve each command, and it may be denied; when a command is denied, do not retry it, carry on without it or ask.
- memory: keep user corrections and preferences, and project facts the code does not show; never what code or git show, or secrets.
- recall: fetch earlier messages of this session (or this project's sessions) word for word, when a summary left out an exact detail.

How to work:
- Look before you answer: read the relevant files instead of guessing.
- Do what was asked and no more; keep changes small and in the project's existing style.
- Quote paths, commands and identifiers exactly.
- Be brief and concrete. The answer is read in a terminal.

Below follow the user's global instructions and the project's context files (AGENTS.md and *.context.md), outermost first, nearest last: follow them, and where they disagree the nearer file wins. A line starting with \"[eonyx:\" is a note from eonyx itself, such as a truncation notice. At the end come today's date and, when earlier turns were compacted, a summary of the conversation so far.";

/// The fixed opening of every system prompt: what eonyx is, its tools
/// (sent natively as tool definitions) and that context follows.
pub fn base_instructions() -> &'static str {
    BASE_INSTRUCTIONS
}

/// The last line of the summary section when the model has `recall`.
pub const RECALL_HINT: &str = "Exact earlier messages, including those summarized above, can be fetched with the recall tool.";

/// The summary section's text: `pinned` (the goal and plan the compaction
/// record pins, docs/compaction.md#what-is-pinned) first, exactly as
/// given, then `summary` (with its exact facts), then `said` (the
/// compaction's `## What the user said`, docs/compaction.md#what-the-user-said),
/// then [`RECALL_HINT`] as the last line when `recall` is on; the pinned
/// part, what the user said and the hint are part of the prompt only,
/// never of the stored summary.
pub fn summary_for_prompt(pinned: &str, summary: &str, said: &str, recall: bool) -> String {
    let mut out = String::new();
    if !pinned.trim().is_empty() {
        out.push_str(pinned.trim_end());
        out.push_str("\n\n");
    }
    out.push_str(summary.trim_end());
    if !said.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(said.trim_end());
    }
    if recall && !out.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(RECALL_HINT);
    }
    out
}

/// The date line, then the summary section when there is a summary.
/// `date` is `YYYY-MM-DD` (see [`eonyx_core::time::today_utc`]); a blank
/// summary counts as none.
pub fn volatile_suffix(date: &str, summary: Option<&str>) -> String {
    let mut out = format!("Current date (UTC): {date}");
    if let Some(summary) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        out.push_str("\n\n");
        out.push_str(SUMMARY_HEADING);
        out.push_str("\n\n");
        out.push_str(summary);
    }
    out
}

/// Append the `# MCP tools` listing (MCP servers whose schemas are
/// deferred, docs/mcp.md#deferred-schemas) at the end of the stable prefix,
/// after the skills listing. The caller renders it (`eonyx-mcp`) and
/// changes it only at a compaction or a new session; an empty listing adds
/// nothing.
pub fn add_mcp_listing(prompt: &mut SystemPrompt, listing: &str) {
    if !listing.is_empty() {
        prompt.stable.push_str("\n\n");
        prompt.stable.push_str(listing);
    }
}

/// The system prompt: `loaded.stable_prefix` as the stable part, the date
/// line and optional summary as the suffix.
pub fn system_prompt(loaded: &Loaded, date: &str, summary: Option<&str>) -> SystemPrompt {
    SystemPrompt {
        stable: loaded.stable_prefix.clone(),
        suffix: volatile_suffix(date, summary),
    }
}

#[cfg(test)]
mod test_tree;
#[cfg(test)]
mod tests;
