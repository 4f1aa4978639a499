//! What a hook reads on stdin (docs/hooks.md#input): one JSON object with
//! the common fields and the event's own, named exactly as in Claude Code's
//! protocol.

use camino::Utf8PathBuf;
use eonyx_core::hooks::HookEvent;
use serde_json::{Map, Value, json};

/// The fields every event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common {
    pub session_id: String,
    /// The session file.
    pub transcript_path: Utf8PathBuf,
    pub cwd: Utf8PathBuf,
}

/// `SessionStart`'s `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartSource {
    Startup,
    Resume,
    Compact,
    /// `/new`.
    Clear,
}

impl StartSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StartSource::Startup => "startup",
            StartSource::Resume => "resume",
            StartSource::Compact => "compact",
            StartSource::Clear => "clear",
        }
    }
}

/// `PreCompact`'s and `PostCompact`'s `trigger`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// Past the threshold, after an overflow, or a summary written ahead.
    Auto,
    /// `/compact`, `eonyx compact`.
    Manual,
}

impl CompactTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
        }
    }
}

/// A tool call as the hooks see it (eonyx's names; a hook selected by a
/// Claude Code name gets them translated).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_use_id: String,
}

/// One event with its own fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    SessionStart {
        source: StartSource,
    },
    UserPromptSubmit {
        prompt: String,
    },
    PreToolUse(ToolUse),
    PostToolUse {
        call: ToolUse,
        /// An object: `stdout`, `stderr`, `exit_code` for `shell`, `output`
        /// for the others, and `is_error`.
        tool_response: Value,
    },
    PreCompact {
        trigger: CompactTrigger,
        /// The `/compact` focus; `""` when there is none.
        custom_instructions: String,
    },
    PostCompact {
        trigger: CompactTrigger,
        compact_summary: String,
    },
    Stop {
        stop_hook_active: bool,
    },
    SubagentStart,
    SubagentStop {
        stop_hook_active: bool,
    },
    Notification {
        message: String,
    },
    SessionEnd {
        /// `exit`, `clear`, `prompt_input_exit` or `other`.
        reason: String,
    },
}

impl Payload {
    pub fn event(&self) -> HookEvent {
        match self {
            Payload::SessionStart { .. } => HookEvent::SessionStart,
            Payload::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            Payload::PreToolUse(_) => HookEvent::PreToolUse,
            Payload::PostToolUse { .. } => HookEvent::PostToolUse,
            Payload::PreCompact { .. } => HookEvent::PreCompact,
            Payload::PostCompact { .. } => HookEvent::PostCompact,
            Payload::Stop { .. } => HookEvent::Stop,
            Payload::SubagentStart => HookEvent::SubagentStart,
            Payload::SubagentStop { .. } => HookEvent::SubagentStop,
            Payload::Notification { .. } => HookEvent::Notification,
            Payload::SessionEnd { .. } => HookEvent::SessionEnd,
        }
    }

    /// The tool call, for the tool events.
    pub fn tool(&self) -> Option<&ToolUse> {
        match self {
            Payload::PreToolUse(call) | Payload::PostToolUse { call, .. } => Some(call),
            _ => None,
        }
    }

    /// What the event's matcher is matched against, other than a tool
    /// name.
    pub(crate) fn match_text(&self) -> Option<&'static str> {
        match self {
            Payload::SessionStart { source } => Some(source.as_str()),
            Payload::PreCompact { trigger, .. } => Some(trigger.as_str()),
            _ => None,
        }
    }

    /// The stdin JSON; with `claude` the tool's name and input in Claude
    /// Code's names.
    pub(crate) fn to_json(&self, common: &Common, claude: Option<&'static str>) -> Value {
        let mut m = Map::new();
        m.insert("session_id".into(), json!(common.session_id));
        m.insert("transcript_path".into(), json!(common.transcript_path));
        m.insert("cwd".into(), json!(common.cwd));
        m.insert("hook_event_name".into(), json!(self.event().as_str()));
        let tool = |m: &mut Map<String, Value>, call: &ToolUse| {
            let (name, input) = match claude {
                Some(alias) => (
                    alias.to_owned(),
                    crate::claude::to_claude(&call.tool_name, &call.tool_input),
                ),
                None => (call.tool_name.clone(), call.tool_input.clone()),
            };
            m.insert("tool_name".into(), json!(name));
            m.insert("tool_input".into(), input);
            m.insert("tool_use_id".into(), json!(call.tool_use_id));
        };
        match self {
            Payload::SessionStart { source } => {
                m.insert("source".into(), json!(source.as_str()));
            }
            Payload::UserPromptSubmit { prompt } => {
                m.insert("prompt".into(), json!(prompt));
            }
            Payload::PreToolUse(call) => tool(&mut m, call),
            Payload::PostToolUse {
                call,
                tool_response,
            } => {
                tool(&mut m, call);
                m.insert("tool_response".into(), tool_response.clone());
            }
            Payload::PreCompact {
                trigger,
                custom_instructions,
            } => {
                m.insert("trigger".into(), json!(trigger.as_str()));
                m.insert("custom_instructions".into(), json!(custom_instructions));
            }
            Payload::PostCompact {
                trigger,
                compact_summary,
            } => {
                m.insert("trigger".into(), json!(trigger.as_str()));
                m.insert("compact_summary".into(), json!(compact_summary));
            }
            Payload::Stop { stop_hook_active } | Payload::SubagentStop { stop_hook_active } => {
                m.insert("stop_hook_active".into(), json!(stop_hook_active));
            }
            Payload::SubagentStart => {}
            Payload::Notification { message } => {
                m.insert("message".into(), json!(message));
            }
            Payload::SessionEnd { reason } => {
                m.insert("reason".into(), json!(reason));
            }
        }
        Value::Object(m)
    }
}
