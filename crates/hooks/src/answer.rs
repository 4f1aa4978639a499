//! Reading a hook's answer (docs/hooks.md#answers): the exit code (0, 2,
//! other) and, with exit 0, a JSON object on stdout; then the answers of the
//! hooks that ran together combined into one [`Outcome`] (deny over ask
//! over allow).

use eonyx_core::hooks::HookEvent;
use serde::Deserialize;
use serde_json::Value;

use crate::process::{Ended, Ran};

/// `permissionDecision` of `PreToolUse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

impl Permission {
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }
}

/// The JSON answer; unknown fields are ignored (scripts written for newer
/// Claude Code versions still work).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Json {
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    stop_reason: Option<String>,
    system_message: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

/// One hook's run, as reported (`--json` `hook` events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    pub event: HookEvent,
    pub command: String,
    /// `None`: timed out or could not start.
    pub exit_code: Option<i32>,
    /// `block`, `deny`, `ask`, `allow`, `stop`, or none.
    pub decision: Option<&'static str>,
    pub millis: u64,
}

/// What the hooks of one event said together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub runs: Vec<HookRun>,
    /// Exit 2 (stderr) or `decision: "block"` (`reason`): the event's
    /// blocking effect. For `PreToolUse` this is a deny.
    pub block: Option<String>,
    /// `PreToolUse`'s decision: deny over ask over allow.
    pub permission: Option<Permission>,
    /// The reasons given with the winning permission.
    pub permission_reason: Option<String>,
    /// `updatedInput` (in eonyx's argument names).
    pub updated_input: Option<Value>,
    /// Text for the conversation: `additionalContext`, and for
    /// `UserPromptSubmit` and `SessionStart` plain stdout.
    pub context: Vec<String>,
    /// `continue: false`: stop after this, with `stopReason`.
    pub stop: Option<String>,
    /// `systemMessage`s, shown to the user.
    pub messages: Vec<String>,
    /// Hooks that failed (other exit codes, timeouts, not started).
    pub warnings: Vec<String>,
}

impl Outcome {
    /// The reason a tool call must not run: a block or a deny.
    pub fn denied(&self) -> Option<String> {
        if let Some(b) = &self.block {
            return Some(b.clone());
        }
        (self.permission == Some(Permission::Deny)).then(|| {
            self.permission_reason
                .clone()
                .unwrap_or_else(|| "denied by a PreToolUse hook".to_owned())
        })
    }
}

fn join(slot: &mut Option<String>, text: String) {
    match slot {
        Some(s) => {
            s.push('\n');
            s.push_str(&text);
        }
        None => *slot = Some(text),
    }
}

/// Whether plain stdout of exit 0 is context for this event.
fn stdout_is_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
}

/// Add one run's answer. `updated` turns an `updatedInput` into eonyx's
/// names (it came from a hook that saw Claude Code's).
pub(crate) fn add(
    out: &mut Outcome,
    event: HookEvent,
    command: &str,
    ran: Ran,
    updated: impl Fn(&Value) -> Value,
) {
    let short = eonyx_core::text::ellipsize(command, 60);
    let mut decision: Option<&'static str> = None;
    let exit_code = match &ran.ended {
        Ended::Exited(c) => Some(*c),
        _ => None,
    };
    match ran.ended {
        Ended::NotStarted(why) => out
            .warnings
            .push(format!("hook `{short}` ({event}): {why}")),
        Ended::TimedOut => out.warnings.push(format!(
            "hook `{short}` ({event}) timed out and was killed with what it started"
        )),
        Ended::Exited(2) => {
            let reason = ran.stderr.trim();
            let reason = if reason.is_empty() {
                format!("blocked by the {event} hook `{short}`")
            } else {
                reason.to_owned()
            };
            join(&mut out.block, reason);
            decision = Some("block");
        }
        Ended::Exited(0) => decision = exit_zero(out, event, &ran.stdout, &updated),
        Ended::Exited(code) => {
            let err = ran.stderr.trim();
            out.warnings.push(if err.is_empty() {
                format!("hook `{short}` ({event}) exited with {code}")
            } else {
                format!(
                    "hook `{short}` ({event}) exited with {code}: {}",
                    eonyx_core::text::ellipsize(err, 300)
                )
            });
        }
    }
    out.runs.push(HookRun {
        event,
        command: command.to_owned(),
        exit_code,
        decision,
        millis: ran.millis,
    });
}

fn exit_zero(
    out: &mut Outcome,
    event: HookEvent,
    stdout: &str,
    updated: &impl Fn(&Value) -> Value,
) -> Option<&'static str> {
    let trimmed = stdout.trim();
    let json = trimmed
        .starts_with('{')
        .then(|| serde_json::from_str::<Json>(trimmed).ok())
        .flatten();
    let Some(j) = json else {
        if stdout_is_context(event) && !trimmed.is_empty() {
            out.context.push(trimmed.to_owned());
        }
        return None;
    };
    let mut decision = None;
    if let Some(m) = j.system_message.filter(|m| !m.trim().is_empty()) {
        out.messages.push(m);
    }
    if j.continue_ == Some(false) {
        let why = j
            .stop_reason
            .unwrap_or_else(|| format!("a {event} hook stopped the turn"));
        join(&mut out.stop, why);
        decision = Some("stop");
    }
    let reason = j.reason.clone();
    match j.decision.as_deref() {
        Some("block") => {
            join(
                &mut out.block,
                reason.unwrap_or_else(|| format!("blocked by a {event} hook")),
            );
            decision = Some("block");
        }
        // Claude Code's older PreToolUse spelling of allow.
        Some("approve") if event == HookEvent::PreToolUse => {
            permit(out, Permission::Allow, reason);
            decision = Some("allow");
        }
        _ => {}
    }
    if let Some(s) = j.hook_specific_output {
        if event == HookEvent::PreToolUse {
            let p = match s.permission_decision.as_deref() {
                Some("allow") => Some(Permission::Allow),
                Some("ask") => Some(Permission::Ask),
                Some("deny") => Some(Permission::Deny),
                _ => None,
            };
            if let Some(p) = p {
                permit(out, p, s.permission_decision_reason);
                decision = Some(p.as_str());
            }
            if let Some(u) = s.updated_input.filter(Value::is_object) {
                out.updated_input = Some(updated(&u));
            }
        }
        if let Some(c) = s.additional_context.filter(|c| !c.trim().is_empty()) {
            out.context.push(c);
        }
    }
    decision
}

/// Keep the strongest permission (deny > ask > allow) and its reasons.
fn permit(out: &mut Outcome, p: Permission, reason: Option<String>) {
    match out.permission {
        Some(have) if have > p => {}
        Some(have) if have == p => {
            if let Some(r) = reason {
                join(&mut out.permission_reason, r);
            }
        }
        _ => {
            out.permission = Some(p);
            out.permission_reason = reason;
        }
    }
}
