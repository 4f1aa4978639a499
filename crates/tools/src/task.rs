//! The `task` tool (docs/tools.md#task): delegate a piece of work to a child
//! agent in a child session. It needs the parent agent (its providers,
//! store, session and permissions), so the agent runs it (`agent/task/`,
//! through [`crate::AgentTools`]); this module holds its definition and
//! argument parsing.

use eonyx_core::{SessionId, ToolDef, ToolName};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolError, parse_args};

/// The profile of a task call that names none (the built-in `general`
/// profile, `eonyx_config::profiles::GENERAL`).
pub const DEFAULT_PROFILE: &str = "general";

/// Longest `description` kept (it is shown on every line of the child's
/// progress and in the compaction facts).
const MAX_DESCRIPTION_CHARS: usize = 120;

/// The tool definition sent to the model; its description lists the
/// profiles (name, description; in order) with their descriptions.
pub fn definition<'a>(profiles: impl IntoIterator<Item = (&'a str, &'a str)>) -> ToolDef {
    let profiles: Vec<(&str, &str)> = profiles.into_iter().collect();
    let mut description = String::from(
        "Delegate a self-contained task to a sub-agent with its own context, in a child session; \
         only its final answer returns, headed by its session id (give it as `session` to \
         continue). It sees none of this chat: say what to do and report. Calls in one reply run \
         at once.",
    );
    for (name, about) in &profiles {
        description.push_str(&format!("\n- {name}: "));
        if about.is_empty() {
            description.push_str("(no description)");
        } else {
            description.push_str(&about.replace('\n', " "));
        }
    }
    let names: Vec<&str> = profiles.iter().map(|(name, _)| *name).collect();
    ToolDef {
        name: ToolName::Task.as_str().into(),
        description,
        parameters: json!({
            "type": "object",
            "properties": {
                "prompt": { "type": "string" },
                "description": { "type": "string", "description": "3-8 words" },
                "profile": { "enum": names },
                "session": { "type": "string" }
            },
            "required": ["prompt", "description"],
            "additionalProperties": false
        }),
    }
}

/// A parsed `task` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCall {
    pub prompt: String,
    pub description: String,
    pub profile: Option<String>,
    pub session: Option<SessionId>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    prompt: String,
    description: Option<String>,
    profile: Option<String>,
    session: Option<String>,
}

/// Parse and check the arguments; errors tell the model what to send.
pub fn parse(args: &Value) -> Result<TaskCall, ToolError> {
    let a: Args = parse_args(ToolName::Task, args)?;
    let bad = |message: String| ToolError::bad_args(ToolName::Task, message);
    let prompt = a.prompt.trim().to_owned();
    if prompt.is_empty() {
        return Err(bad(
            "`prompt` is empty; give the sub-agent its whole task".into()
        ));
    }
    let description = a
        .description
        .as_deref()
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| eonyx_core::text::ellipsize(&prompt.replace('\n', " "), 60));
    let session = match a.session.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => Some(SessionId::parse(s).map_err(|e| bad(e.to_string()))?),
    };
    Ok(TaskCall {
        prompt,
        description: eonyx_core::text::ellipsize(&description, MAX_DESCRIPTION_CHARS),
        profile: a
            .profile
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty()),
        session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definition_lists_every_profile_with_its_description() {
        let d = definition([
            ("explore", "read-only: looks, never changes"),
            ("general", "everything the parent may do"),
            ("quiet", ""),
        ]);
        assert_eq!(d.name, "task");
        assert!(
            d.description.contains("\n- explore: read-only"),
            "{}",
            d.description
        );
        assert!(d.description.contains("\n- general: "), "{}", d.description);
        assert!(
            d.description.ends_with("\n- quiet: (no description)"),
            "{}",
            d.description
        );
        assert_eq!(
            d.parameters["properties"]["profile"]["enum"],
            json!(["explore", "general", "quiet"])
        );
    }

    #[test]
    fn arguments_are_checked_and_tidied() {
        let c =
            parse(&json!({"prompt": " find X ", "description": "find\n  X", "profile": "explore"}))
                .unwrap();
        assert_eq!(
            (
                c.prompt.as_str(),
                c.description.as_str(),
                c.profile.as_deref()
            ),
            ("find X", "find X", Some("explore"))
        );
        let c = parse(&json!({"prompt": "look at the parser"})).unwrap();
        assert_eq!(
            c.description, "look at the parser",
            "defaults to the prompt"
        );
        assert!(parse(&json!({"prompt": "  "})).is_err());
        let e = parse(&json!({"prompt": "p", "session": "../etc"})).unwrap_err();
        assert!(e.to_string().contains("invalid session id"), "{e}");
        assert!(parse(&json!({"prompt": "p", "shell": true})).is_err());
    }
}
