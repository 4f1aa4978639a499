//! The definitions of `plan` and `goal_update` (docs/tools.md#plan,
//! docs/tools.md#goal-update). The agent runs both itself: the plan is
//! derived from the session's timeline and the goal lives in the session's
//! `goal` records. Their checks are pure (`eonyx_core::plan`,
//! [`parse_goal_update`]), so a call is judged the same wherever it runs.

use eonyx_core::{ToolDef, ToolName};
use serde_json::{Value, json};

/// The `plan` tool, offered in every session and profile. Its definition
/// is in every request, so it is kept short (docs/tools.md#plan).
pub fn plan_definition() -> ToolDef {
    ToolDef {
        name: ToolName::Plan.as_str().into(),
        description: "Keep your plan: send every step each time (it replaces the last plan), \
                      at most one in_progress. It survives compaction verbatim."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": { "type": "string" },
                            "status": { "enum": ["pending", "in_progress", "completed"] }
                        },
                        "required": ["step", "status"]
                    }
                },
                "note": { "type": "string" }
            },
            "required": ["steps"]
        }),
    }
}

/// The `goal_update` tool, offered only while the session has an active
/// goal (never to a task's child).
pub fn goal_update_definition() -> ToolDef {
    ToolDef {
        name: ToolName::GoalUpdate.as_str().into(),
        description: "Report on the session's goal. status \"achieved\" with the evidence \
                      (what shows it is done: tests passing, the output checked) ends the \
                      goal; \"blocked\" with the reason stops it for the user. Until you call \
                      it, eonyx keeps sending you the goal to continue."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "status": { "enum": ["achieved", "blocked"] },
                "evidence": { "type": "string", "description": "With achieved: what shows the goal is met." },
                "reason": { "type": "string", "description": "With blocked: what stops you and what the user must do." }
            },
            "required": ["status"],
            "additionalProperties": false
        }),
    }
}

/// A checked `goal_update` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalUpdate {
    Achieved { evidence: String },
    Blocked { reason: String },
}

/// Check a `goal_update` call's arguments; the error tells the model what
/// to send.
pub fn parse_goal_update(args: &Value) -> Result<GoalUpdate, String> {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    match args.get("status").and_then(Value::as_str) {
        Some("achieved") => text("evidence")
            .map(|evidence| GoalUpdate::Achieved { evidence })
            .ok_or_else(|| {
                "goal not changed: `achieved` needs `evidence`, what shows the goal is met".into()
            }),
        Some("blocked") => text("reason")
            .map(|reason| GoalUpdate::Blocked { reason })
            .ok_or_else(|| {
                "goal not changed: `blocked` needs `reason`, what stops you and what the user must do"
                    .into()
            }),
        Some(other) => Err(format!(
            "goal not changed: unknown status \"{other}\"; use \"achieved\" (with evidence) or \"blocked\" (with reason)"
        )),
        None => Err(
            "goal not changed: `status` is missing; use \"achieved\" (with evidence) or \"blocked\" (with reason)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_updates_need_their_text() {
        assert_eq!(
            parse_goal_update(&json!({"status": "achieved", "evidence": " tests pass "})),
            Ok(GoalUpdate::Achieved {
                evidence: "tests pass".into()
            })
        );
        assert!(
            parse_goal_update(&json!({"status": "achieved"}))
                .unwrap_err()
                .contains("needs `evidence`")
        );
        assert!(
            parse_goal_update(&json!({"status": "done"}))
                .unwrap_err()
                .contains("unknown status")
        );
        assert!(
            parse_goal_update(&json!({}))
                .unwrap_err()
                .contains("missing")
        );
    }
}
