//! Profiles (docs/using-tools.md, section "Tasks"): what a `task` child (or a session
//! started with `--profile NAME`) runs with. Two are built in, `explore`
//! (read-only tools, compaction at 50 %) and `general` (the parent's
//! tools); a `[profiles.NAME]` table of the same name is merged over the
//! built-in field by field (`description`, `instructions`, `tools`, `model`
//! and each `compaction` key), so a user can, say, give `explore` other
//! instructions and keep its tools.
//!
//! Invariant: a profile only narrows. `tools` is an allow-list applied to
//! the tools the session would have anyway; it can never add one.

use std::collections::BTreeMap;

use eonyx_core::ToolName;

use crate::{CompactionFile, ConfigFile, Source};

/// The built-in read-only profile.
pub const EXPLORE: &str = "explore";
/// The built-in profile with the parent's tools.
pub const GENERAL: &str = "general";

/// A profile as resolved from the built-ins and every layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    /// One line for the `task` tool's description.
    pub description: String,
    /// Added to a task child's system prompt (empty: none).
    pub instructions: String,
    /// Allow-list of built-in tool names; `None`: the parent's tools.
    pub tools: Option<Vec<ToolName>>,
    /// The MCP tools the allow-list names (`mcp__<server>__<tool>`, or a
    /// prefix ending in `*`); only read when `tools` is `Some`.
    pub mcp_tools: Vec<String>,
    /// Model key (`None`: the parent's model).
    pub model: Option<String>,
    /// Whether a built-in profile of this name exists (configured or not).
    pub builtin: bool,
}

impl Profile {
    /// Whether the allow-list lets `tool` through. `plan` is in every
    /// profile (docs/tools.md#plan): keeping track of its own work never
    /// widens what a profile may do.
    pub fn allows(&self, tool: ToolName) -> bool {
        tool == ToolName::Plan || self.tools.as_ref().is_none_or(|t| t.contains(&tool))
    }

    /// Whether the allow-list lets the MCP tool the model knows as `name`
    /// (`mcp__<server>__<tool>`) through: no list lets every one through;
    /// a list, those it names (docs/using-tools.md, section "Tasks").
    pub fn allows_mcp(&self, name: &str) -> bool {
        self.tools.is_none()
            || self.mcp_tools.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            })
    }
}

/// The tools of `explore`: reading and searching only.
pub const EXPLORE_TOOLS: [ToolName; 5] = [
    ToolName::ReadFile,
    ToolName::ListDir,
    ToolName::Grep,
    ToolName::Recall,
    ToolName::Skill,
];

const EXPLORE_DESCRIPTION: &str =
    "read-only: reads, lists and searches files, reports with exact paths";
const EXPLORE_INSTRUCTIONS: &str = "You explore the project read-only. Read, list and search as much as the task needs, but do not try to change anything. End with a short report for the main agent: what you found, with exact file paths (and line numbers where they help), and what you looked for but could not find.";
const GENERAL_DESCRIPTION: &str = "your tools and permissions";
const GENERAL_INSTRUCTIONS: &str = "Do the task with your tools. End with a short report for the main agent: what you did, what you found, and exact paths of anything you changed.";

/// The built-in profiles.
pub fn builtins() -> BTreeMap<String, Profile> {
    let explore = Profile {
        name: EXPLORE.into(),
        description: EXPLORE_DESCRIPTION.into(),
        instructions: EXPLORE_INSTRUCTIONS.into(),
        tools: Some(EXPLORE_TOOLS.to_vec()),
        mcp_tools: Vec::new(),
        model: None,
        builtin: true,
    };
    let general = Profile {
        name: GENERAL.into(),
        description: GENERAL_DESCRIPTION.into(),
        instructions: GENERAL_INSTRUCTIONS.into(),
        tools: None,
        mcp_tools: Vec::new(),
        model: None,
        builtin: true,
    };
    [(EXPLORE.to_owned(), explore), (GENERAL.to_owned(), general)]
        .into_iter()
        .collect()
}

/// The compaction overrides a built-in profile carries (applied before the
/// configured `[profiles.NAME.compaction]`, which may change them).
pub fn builtin_compaction(name: &str) -> Option<CompactionFile> {
    (name == EXPLORE).then(|| CompactionFile {
        threshold_percent: Some(50.0),
        ..CompactionFile::default()
    })
}

/// Whether `name` is a built-in profile.
pub fn is_builtin(name: &str) -> bool {
    name == EXPLORE || name == GENERAL
}

/// Merge the `[profiles.*]` tables of `layers` (global, then project) over
/// the built-ins, recording where each field came from under
/// `profiles.NAME.FIELD`. Tool names were checked by validation; an
/// unknown one here is skipped.
pub(crate) fn resolve<'a>(
    layers: impl IntoIterator<Item = (&'a ConfigFile, &'a Source)>,
    sources: &mut BTreeMap<String, Source>,
) -> BTreeMap<String, Profile> {
    let mut out = builtins();
    for name in out.keys() {
        for field in ["description", "instructions", "tools"] {
            sources.insert(
                format!("profiles.{name}.{field}"),
                Source::Builtin {
                    profile: name.clone(),
                },
            );
        }
    }
    for (file, source) in layers {
        for (name, p) in &file.profiles {
            let profile = out.entry(name.clone()).or_insert_with(|| Profile {
                name: name.clone(),
                description: String::new(),
                instructions: String::new(),
                tools: None,
                mcp_tools: Vec::new(),
                model: None,
                builtin: false,
            });
            let mut set = |field: &str| {
                sources.insert(format!("profiles.{name}.{field}"), source.clone());
            };
            if let Some(d) = &p.description {
                profile.description = d.trim().to_owned();
                set("description");
            }
            if let Some(i) = &p.instructions {
                profile.instructions = i.trim().to_owned();
                set("instructions");
            }
            if let Some(t) = &p.tools {
                profile.tools = Some(t.iter().filter_map(|n| ToolName::parse(n)).collect());
                profile.mcp_tools = t
                    .iter()
                    .filter(|n| eonyx_core::tool::is_mcp_tool(n))
                    .cloned()
                    .collect();
                set("tools");
            }
            if let Some(m) = &p.model {
                profile.model = Some(m.clone());
                set("model");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProfileFile;

    #[test]
    fn a_configured_builtin_is_merged_field_by_field_and_new_profiles_join() {
        let mut global = ConfigFile::default();
        global.profiles.insert(
            EXPLORE.into(),
            ProfileFile {
                instructions: Some("  Report in one line.  ".into()),
                ..ProfileFile::default()
            },
        );
        global.profiles.insert(
            "review".into(),
            ProfileFile {
                description: Some("reviews a diff".into()),
                tools: Some(vec!["read_file".into(), "grep".into()]),
                model: Some("big".into()),
                ..ProfileFile::default()
            },
        );
        let src = Source::Global {
            path: "/c/config.toml".into(),
        };
        let mut sources = BTreeMap::new();
        let all = resolve([(&global, &src)], &mut sources);
        let explore = &all[EXPLORE];
        assert_eq!(explore.instructions, "Report in one line.");
        assert_eq!(explore.description, EXPLORE_DESCRIPTION, "kept");
        assert_eq!(explore.tools.as_deref(), Some(&EXPLORE_TOOLS[..]), "kept");
        assert!(explore.builtin);
        assert!(!explore.allows(ToolName::Shell) && explore.allows(ToolName::Grep));
        assert!(all[GENERAL].allows(ToolName::Shell), "the parent's tools");
        let review = &all["review"];
        assert_eq!(
            review.tools.as_deref(),
            Some(&[ToolName::ReadFile, ToolName::Grep][..])
        );
        assert_eq!(review.model.as_deref(), Some("big"));
        assert!(!review.builtin);
        assert_eq!(sources["profiles.explore.instructions"], src);
        assert_eq!(
            sources["profiles.explore.tools"],
            Source::Builtin {
                profile: EXPLORE.into()
            }
        );
    }
}
