//! Claude Code's tool names and argument names (docs/hooks.md#tool-names):
//! a hook whose matcher selects a tool by its Claude Code name gets the call
//! in those names, and an `updatedInput` it sends back is turned into
//! eonyx's.

use eonyx_core::ToolName;
use serde_json::{Map, Value};

/// The Claude Code names of a built-in tool (`list_dir` has two: `LS` and
/// `Glob`); none for the tools Claude Code has no counterpart of.
pub fn aliases(tool: &str) -> &'static [&'static str] {
    match ToolName::parse(tool) {
        Some(ToolName::Shell) => &["Bash"],
        Some(ToolName::ReadFile) => &["Read"],
        Some(ToolName::WriteFile) => &["Write"],
        Some(ToolName::EditFile) => &["Edit"],
        Some(ToolName::Grep) => &["Grep"],
        Some(ToolName::ListDir) => &["LS", "Glob"],
        Some(ToolName::Task) => &["Task"],
        Some(ToolName::WebFetch) => &["WebFetch"],
        _ => &[],
    }
}

/// Argument renames of a tool: (eonyx's, Claude Code's).
fn renames(tool: &str) -> &'static [(&'static str, &'static str)] {
    match ToolName::parse(tool) {
        Some(ToolName::ReadFile | ToolName::WriteFile | ToolName::EditFile) => {
            &[("path", "file_path")]
        }
        Some(ToolName::Grep) => &[("case_insensitive", "-i")],
        Some(ToolName::Task) => &[("profile", "subagent_type")],
        _ => &[],
    }
}

fn rename(input: &Value, pairs: &[(&str, &str)], to_claude: bool) -> Value {
    let Value::Object(map) = input else {
        return input.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let key = pairs
            .iter()
            .find_map(|(ours, theirs)| {
                let (from, to) = if to_claude {
                    (ours, theirs)
                } else {
                    (theirs, ours)
                };
                (k == from).then_some(*to)
            })
            .unwrap_or(k.as_str());
        out.insert(key.to_owned(), v.clone());
    }
    Value::Object(out)
}

/// `tool_input` in Claude Code's names.
pub fn to_claude(tool: &str, input: &Value) -> Value {
    rename(input, renames(tool), true)
}

/// An `updatedInput` in Claude Code's names back in eonyx's.
pub fn from_claude(tool: &str, input: &Value) -> Value {
    rename(input, renames(tool), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_tools_take_file_path_and_come_back_as_path() {
        let ours =
            json!({"path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": false});
        let theirs = to_claude("edit_file", &ours);
        assert_eq!(
            theirs,
            json!({"file_path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": false})
        );
        assert_eq!(from_claude("edit_file", &theirs), ours);
        assert_eq!(aliases("shell"), ["Bash"]);
        assert_eq!(aliases("list_dir"), ["LS", "Glob"]);
        assert!(aliases("mcp__s__t").is_empty());
        assert_eq!(
            to_claude("shell", &json!({"command": "ls"})),
            json!({"command": "ls"})
        );
    }
}
