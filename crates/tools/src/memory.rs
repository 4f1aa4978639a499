//! The `memory` tool (docs/memory.md, section "Using memory"): the model saves or forgets a note kept
//! across sessions. It needs the session's memory store and id, so the
//! agent runs it (see `Agent::run_memory_tool`); this module holds its
//! definition and argument parsing. No approval: a note only ever reaches
//! later prompts, and every change is shown on stderr.

use eonyx_core::memory::MemoryScope;
use eonyx_core::{ToolDef, ToolName};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolError, parse_args};

/// The tool definition sent to the model.
pub fn definition() -> ToolDef {
    ToolDef {
        name: ToolName::Memory.as_str().into(),
        description: "Add a note for later sessions, or forget one by id.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": { "enum": ["add", "forget"] },
                "text": { "type": "string" },
                "scope": { "enum": ["project", "global"] },
                "id": { "type": "string" }
            }
        }),
    }
}

/// A parsed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryCall {
    Add { text: String, scope: MemoryScope },
    Forget { id: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
    text: Option<String>,
    scope: Option<String>,
    id: Option<String>,
}

/// Parse and check the arguments; errors tell the model what to send.
pub fn parse(args: &Value) -> Result<MemoryCall, ToolError> {
    let a: Args = parse_args(ToolName::Memory, args)?;
    let bad = |message: &str| ToolError::bad_args(ToolName::Memory, message);
    match a.action.as_str() {
        "add" => {
            let text = a
                .text
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| bad("add needs `text`, the note to keep"))?;
            let scope = match a.scope.as_deref() {
                None | Some("") => MemoryScope::Project,
                Some(s) => MemoryScope::parse(s)
                    .ok_or_else(|| bad("`scope` is \"project\" or \"global\""))?,
            };
            Ok(MemoryCall::Add { text, scope })
        }
        "forget" => {
            let id =
                a.id.map(|i| i.trim().trim_matches(['[', ']']).to_owned())
                    .filter(|i| !i.is_empty())
                    .ok_or_else(|| bad("forget needs `id`, as shown in # Memory"))?;
            Ok(MemoryCall::Forget { id })
        }
        other => Err(bad(&format!(
            "unknown action {other:?}; use \"add\" or \"forget\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_add_and_forget_and_explains_mistakes() {
        assert_eq!(
            parse(&json!({"action":"add","text":"Use tabs"})).unwrap(),
            MemoryCall::Add {
                text: "Use tabs".into(),
                scope: MemoryScope::Project
            }
        );
        assert_eq!(
            parse(&json!({"action":"add","text":"x","scope":"global"})).unwrap(),
            MemoryCall::Add {
                text: "x".into(),
                scope: MemoryScope::Global
            }
        );
        assert_eq!(
            parse(&json!({"action":"forget","id":"[ab12cd]"})).unwrap(),
            MemoryCall::Forget {
                id: "ab12cd".into()
            }
        );
        let e = parse(&json!({"action":"add"})).unwrap_err().to_string();
        assert!(e.contains("add needs `text`"), "{e}");
        let e = parse(&json!({"action":"add","text":"x","scope":"team"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"project\" or \"global\""), "{e}");
        let e = parse(&json!({"action":"drop"})).unwrap_err().to_string();
        assert!(e.contains("unknown action"), "{e}");
    }
}
