//! Memory vocabulary (docs/memory.md, section "Using memory"): the entries kept across sessions, shared by
//! the store (which owns the files) and the prompt (which renders them).

use serde::{Deserialize, Serialize};

/// Which file an entry lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScope {
    /// Every project.
    Global,
    /// One project root.
    Project,
}

impl MemoryScope {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::Global => "global",
            MemoryScope::Project => "project",
        }
    }

    /// `"global"` or `"project"`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "global" => Some(MemoryScope::Global),
            "project" => Some(MemoryScope::Project),
            _ => None,
        }
    }
}

impl std::fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of a memory file.
///
/// A well-formed line has an id, a date and a session; a line that does not
/// parse (e.g. written by hand) is kept with `id`, `created` and `session`
/// unset and its whole text in `text`, so it is shown as-is, never dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryEntry {
    /// Short stable id (`forget` takes it); `None` for a malformed line.
    pub id: Option<String>,
    pub scope: MemoryScope,
    pub text: String,
    /// `YYYY-MM-DD` (UTC) the entry was saved.
    pub created: Option<String>,
    /// The session that saved it, or `cli`.
    pub session: Option<String>,
}

impl MemoryEntry {
    /// Whether the line parsed (has an id).
    pub fn is_well_formed(&self) -> bool {
        self.id.is_some()
    }
}

/// Whether `text` contains one of `secrets`.
pub fn contains_secret(text: &str, secrets: &[String]) -> bool {
    secrets
        .iter()
        .any(|s| !s.is_empty() && text.contains(s.as_str()))
}
