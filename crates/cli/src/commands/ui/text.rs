//! The short texts the view prints: a one-line preview, the line of a
//! task child's event, the note of a hook that blocked something, and
//! whether debug diagnostics are shown.

use eonyx_agent::AgentEvent;

/// `EONYX_DEBUG` set to anything but empty, `0` or `false`: show debug
/// diagnostics (on stderr; as `debug` events with `--json`).
pub(super) fn debug_enabled() -> bool {
    std::env::var("EONYX_DEBUG").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// `s` on one line (newlines as spaces), ellipsized to `max` characters.
pub fn preview(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', " ");
    eonyx_core::text::ellipsize(&eonyx_core::text::escape_controls(&one_line, false), max)
}

/// The line shown for an event of a task's child (its tool calls,
/// notices, warnings, compactions, file and memory changes and own tasks);
/// `None` for what is not shown (its text, tool output, …).
pub(super) fn child_line(event: &AgentEvent) -> Option<String> {
    let line = match event {
        AgentEvent::ToolCall(call) => {
            format!("→ {} {}", call.name, preview(&call.arguments_json(), 100))
        }
        AgentEvent::Notice(m) => m.clone(),
        AgentEvent::Warning(m) => format!("warning: {m}"),
        AgentEvent::Compacted(rec) => format!(
            "compacted ({}): ~{} → ~{} tokens",
            rec.trigger.as_str(),
            rec.tokens_before,
            rec.tokens_after
        ),
        AgentEvent::FileChanged(c) => {
            format!("changed {} (+{} -{} lines)", c.path, c.added, c.removed)
        }
        AgentEvent::MemoryChanged { action, entry } => format!(
            "memory: {action} [{}]: {}",
            entry.id.as_deref().unwrap_or_default(),
            entry.text
        ),
        AgentEvent::TaskStarted {
            session,
            profile,
            description,
            ..
        } => format!("task ({profile}): {description} · session {session}"),
        _ => return None,
    };
    Some(line)
}

/// The one stderr line for a hook that blocked, denied or stopped
/// something (docs/hooks.md#answers).
pub(super) fn hook_note(
    event: eonyx_core::hooks::HookEvent,
    command: &str,
    decision: Option<&str>,
    reason: Option<&str>,
) -> Option<String> {
    let what = match decision? {
        "block" => "blocked",
        "deny" => "denied",
        "stop" => "stopped",
        _ => return None,
    };
    let why = reason
        .map(|r| eonyx_core::text::ellipsize(r.lines().next().unwrap_or(""), 200))
        .unwrap_or_default();
    Some(format!(
        "{event} hook `{}` {what}: {why}",
        eonyx_core::text::ellipsize(command, 60)
    ))
}
