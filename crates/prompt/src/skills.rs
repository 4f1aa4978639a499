//! Skills in the open Agent Skills format (docs/skills.md, section "Skills"): discovery, front
//! matter validation, the `# Skills` listing for the stable prefix and the
//! `# Skills in use` section re-attached after a compaction.
//!
//! A skill is a directory `<name>/` holding a `SKILL.md` whose YAML front
//! matter has `name` (= the directory name) and `description`, followed by
//! a Markdown body; `scripts/`, `references/` and `assets/` are optional.
//! Only the name and description go into the prompt; the body is read when
//! the model asks for it (the agent's `skill` tool).
//!
//! [`discover`] finds the skills (`discover.rs`), [`validate`] checks
//! their front matter (`front_matter.rs`), and `sections.rs` renders the
//! `# Skills` listing and the `# Skills in use` section.
//!
//! Invariants:
//! - The directories are read in [`skill_dirs`] order and the first skill
//!   of a name wins: nearer project directories before outer ones, project
//!   before global.
//! - Discovery never fails: a malformed skill, an unreadable file or
//!   directory and a symlink loop are skipped with a warning naming the
//!   file and the problem; a directory without `SKILL.md` is not a skill.
//! - Same files give byte-identical sections (sorted, no clock).
//! - Nothing is cut silently: the listing cap and the re-attach cap are
//!   stated in the prompt (`[eonyx: …]`) and returned as warnings.

use camino::Utf8PathBuf;

mod discover;
mod front_matter;
mod sections;
#[cfg(test)]
mod tests;

pub use discover::{discover, discover_in, home_dir, skill_dirs};
pub use front_matter::{body_of, read_body, split_front_matter, valid_name, validate};
pub use sections::{SkillsInUse, add_to_prompt, skills_in_use};

pub use eonyx_core::tool::{MAX_SKILL_FILE_BYTES, SKILL_FILE};

/// Heading of the listing in the stable prefix.
pub const SKILLS_HEADING: &str = "# Skills";
/// Heading of the re-attached bodies after the summary.
pub const SKILLS_IN_USE_HEADING: &str = "# Skills in use";
/// Longest `description` allowed (characters).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `name` allowed (characters, as in the Agent Skills spec).
pub const MAX_NAME_CHARS: usize = 64;
/// Bytes of a `SKILL.md` read at discovery; the front matter must end
/// within them.
const FRONT_MATTER_READ_BYTES: u64 = 64 * 1024;

const LISTING_INTRO: &str = "Skills are instructions for particular tasks. When a task matches a skill below, first call the `skill` tool with its name to read them; read a file the skill mentions with `skill` and `path`, and run its scripts with `shell`.";

const IN_USE_INTRO: &str = "These skills were loaded with the `skill` tool before the conversation was compacted; keep following them where they still apply.";

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkillScope {
    /// `.agents/skills` or `.claude/skills` between the working directory
    /// and the project root.
    Project,
    /// `<config dir>/skills`, `~/.agents/skills` or `~/.claude/skills`.
    Global,
}

impl SkillScope {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillScope::Project => "project",
            SkillScope::Global => "global",
        }
    }
}

/// One valid skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// The description with runs of whitespace folded to one space.
    pub description: String,
    pub scope: SkillScope,
    /// The skill's directory.
    pub dir: Utf8PathBuf,
    /// Its `SKILL.md`.
    pub path: Utf8PathBuf,
}

/// A directory that may hold skills, one subdirectory per skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    pub path: Utf8PathBuf,
    pub scope: SkillScope,
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    /// Valid skills in listing order: project ones first, then global,
    /// each by name.
    pub skills: Vec<Skill>,
    /// Skipped skills and unreadable directories, and the listing cap.
    pub warnings: Vec<String>,
    /// The `# Skills` section; empty when there is no skill.
    pub section: String,
    /// How many skills the section lists (the rest were cut by the cap).
    pub listed: usize,
}

impl Skills {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The names, in listing order.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }
}
