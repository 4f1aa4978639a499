//! Hooks in the turn loop (docs/hooks.md): where each event runs and what
//! its outcome does. The hooks themselves (matching, running, answers) are
//! `eonyx-hooks`'s; this module builds their input from the session and
//! applies the outcome: context appended to the conversation (never the
//! stable prefix), a tool call denied or allowed, a prompt dropped, a
//! compaction skipped, a turn continued.

use std::sync::{Arc, Mutex, PoisonError};

use eonyx_core::hooks::HookEvent;
use eonyx_core::provider::CancellationToken;
use eonyx_core::{Content, Message, Part, Role, ToolCall, ToolName};
use eonyx_hooks::{
    Common, CompactTrigger, Hooks, Outcome, Payload, Permission, RunEnv, StartSource, ToolUse,
};
use serde_json::{Value, json};

use super::Agent;
use crate::error::AgentError;
use crate::events::{AgentEvent, Events};
use crate::tools::{self, ApprovalKind, Approver, Decision};

/// `Stop` blocks in a row after which eonyx stops anyway (a hook that
/// never lets the model stop would loop forever).
pub const MAX_STOP_BLOCKS: u32 = 3;

/// The hooks of one agent and what they left for later.
#[derive(Clone)]
pub struct HookState {
    pub(crate) hooks: Arc<Hooks>,
    /// `SessionStart` context for the next user message.
    pending: Vec<String>,
    /// `Stop` blocks since the model last stopped for good.
    stop_blocks: u32,
    /// A task's child: `Stop` is `SubagentStop`, no `UserPromptSubmit`.
    subagent: bool,
    /// The boundary a `PreCompact` hook refused a summary written ahead
    /// for (not started again for it).
    draft_blocked_at: Arc<Mutex<Option<u64>>>,
    /// The policy with a user who says yes: what a call a `PreToolUse`
    /// hook allowed is approved by (config's `deny` still denies).
    pub(crate) approved: Arc<dyn Approver>,
    /// The session as `Notification` hooks see it (they run from the
    /// approver, which outlives a session switch).
    common: Arc<Mutex<Common>>,
    /// The session this agent's hooks name.
    session: Common,
    /// The agent's events (set when it is assembled).
    pub(super) events: Events,
}

impl HookState {
    pub(crate) fn new(hooks: Hooks) -> Self {
        Self {
            hooks: Arc::new(hooks),
            pending: Vec::new(),
            stop_blocks: 0,
            subagent: false,
            approved: Arc::new(tools::DenyAll),
            draft_blocked_at: Arc::default(),
            common: Arc::new(Mutex::new(no_session())),
            session: no_session(),
            events: Events::new(),
        }
    }

    /// The state a task's child starts with: the same hooks.
    pub(crate) fn for_child(&self, approved: Arc<dyn Approver>) -> Self {
        Self {
            approved,
            hooks: self.hooks.clone(),
            pending: Vec::new(),
            stop_blocks: 0,
            subagent: true,
            draft_blocked_at: Arc::default(),
            common: self.common.clone(),
            session: no_session(),
            events: Events::new(),
        }
    }

    pub(crate) fn draft_blocked_at(&self) -> Option<u64> {
        *self
            .draft_blocked_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The session before an agent is bound to one.
fn no_session() -> Common {
    Common {
        session_id: String::new(),
        transcript_path: Default::default(),
        cwd: Default::default(),
    }
}

/// The hooks of `config` that run here, in `project_root`, without
/// `hidden_env`.
pub(crate) fn build(
    config: &eonyx_config::Config,
    project_root: &camino::Utf8Path,
    hidden_env: &[String],
) -> Result<HookState, AgentError> {
    let env = RunEnv {
        project_dir: project_root.to_path_buf(),
        hidden_env: hidden_env.to_vec(),
    };
    let hooks = Hooks::new(config.hooks.running(), env)?;
    Ok(HookState::new(hooks))
}

/// The user's approver with the `Notification` hooks run as it asks (the
/// approver itself when there are none).
pub(super) fn notifying(hooks: &HookState, inner: Arc<dyn Approver>) -> Arc<dyn Approver> {
    if !hooks.hooks.has(HookEvent::Notification) {
        return inner;
    }
    Arc::new(Notify {
        hooks: hooks.hooks.clone(),
        common: hooks.common.clone(),
        inner,
    })
}

/// The text a hook's context is added to the conversation as.
fn context_text(event: HookEvent, detail: Option<&str>, texts: &[String]) -> String {
    let head = match detail {
        Some(d) => format!("[context from the {event} hook ({d})]"),
        None => format!("[context from the {event} hook]"),
    };
    format!("{head}\n{}", texts.join("\n"))
}

/// `tool_response` for `PostToolUse`: `shell`'s exit code and output,
/// other tools' output, and `is_error`.
fn tool_response(name: &str, text: &str, is_error: bool) -> Value {
    if ToolName::parse(name) == Some(ToolName::Shell) {
        let exit_code = match eonyx_core::ShellOutcome::from_result(text) {
            Some(eonyx_core::ShellOutcome::Exited(n)) => json!(n),
            _ => Value::Null,
        };
        let stdout = text.split_once('\n').map_or("", |(_, rest)| rest);
        json!({"stdout": stdout, "stderr": "", "exit_code": exit_code, "is_error": is_error})
    } else {
        json!({"output": text, "is_error": is_error})
    }
}

/// What `PreToolUse` decided for one call.
pub(crate) enum PreTool {
    /// Run it (with the hooks' `updatedInput`, if any), approved as the
    /// hooks said.
    Run { call: ToolCall, said: HookSaid },
    /// Do not run it; this is its result.
    Denied(tools::ToolOutput),
}

/// What the `PreToolUse` hooks said about approving a call they let run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookSaid {
    /// Nothing: the usual approval.
    Nothing,
    /// `allow`: counts as the user's yes ([`HookState::approved`]).
    Allow,
    /// `ask`: the usual policy, but what it asks goes to the user even
    /// where a mode would answer by itself (ACP's `auto`).
    Ask,
}

impl Agent {
    /// The hooks that run in this agent (the frontends run
    /// `SessionStart` and `SessionEnd`).
    pub fn hooks(&mut self) -> &mut HookState {
        &mut self.hook
    }

    /// The session the hooks name (after open and every switch).
    pub(super) fn hook_session_changed(&mut self) {
        let session = Common {
            session_id: self.session_id().to_string(),
            transcript_path: self.store.session_path(self.session_id()),
            cwd: self.cwd.clone(),
        };
        self.hook.session_changed(session);
    }
}

impl HookState {
    /// The session the hooks name from now on: what waited for it is
    /// dropped, and the `Notification` hooks name it too (not a task's
    /// child's: those name the user's session).
    fn session_changed(&mut self, session: Common) {
        self.pending.clear();
        self.stop_blocks = 0;
        if !self.subagent {
            *self.common.lock().unwrap_or_else(PoisonError::into_inner) = session.clone();
        }
        self.session = session;
    }

    /// Run `payload`'s hooks and report each run, the messages and the
    /// warnings; `cancel` stops (and kills) them.
    async fn run(&self, payload: Payload, cancel: Option<&CancellationToken>) -> Outcome {
        if !self.hooks.has(payload.event()) {
            return Outcome::default();
        }
        let run = self.hooks.run(&self.session, &payload);
        let outcome = match cancel {
            Some(c) => tokio::select! {
                biased;
                () = c.cancelled() => return Outcome::default(),
                o = run => o,
            },
            None => run.await,
        };
        self.report(&outcome);
        outcome
    }

    /// Each run as an event; messages and warnings for stderr.
    fn report(&self, out: &Outcome) {
        for run in &out.runs {
            let reason = match run.decision {
                Some("block") => out.block.clone(),
                Some("deny") => out.permission_reason.clone(),
                Some("stop") => out.stop.clone(),
                _ => None,
            };
            self.events.send(AgentEvent::Hook {
                event: run.event,
                command: run.command.clone(),
                exit_code: run.exit_code,
                decision: run.decision,
                millis: run.millis,
                reason,
            });
        }
        for m in &out.messages {
            self.events.send(AgentEvent::Notice(m.clone()));
        }
        for w in &out.warnings {
            self.events.send(AgentEvent::Warning(w.clone()));
        }
    }

    /// `SessionStart` (startup, resume, `/new` = clear): its context waits
    /// for the next user message; called by the frontend.
    pub async fn session_start(&mut self, source: StartSource) {
        let out = self.run(Payload::SessionStart { source }, None).await;
        if !out.context.is_empty() {
            self.pending.push(context_text(
                HookEvent::SessionStart,
                Some(source.as_str()),
                &out.context,
            ));
        }
    }

    /// `SessionEnd` (`reason`: `prompt_input_exit`, `clear`, `other`).
    pub async fn session_end(&mut self, reason: &str) {
        let payload = Payload::SessionEnd {
            reason: reason.to_owned(),
        };
        self.run(payload, None).await;
    }

    /// `SubagentStart`, before a task's child takes its first step.
    pub(super) async fn subagent_start(&mut self) {
        self.run(Payload::SubagentStart, None).await;
    }

    /// `UserPromptSubmit`, then the user message with the hooks' context
    /// (and any `SessionStart` context waiting) added after the user's
    /// text; `Err` with the reason when a hook blocked the prompt (nothing
    /// is sent or saved).
    pub(super) async fn prompt(
        &mut self,
        message: Message,
        cancel: &CancellationToken,
    ) -> Result<Message, String> {
        let mut added = std::mem::take(&mut self.pending);
        if !self.subagent {
            let prompt = message.content.text();
            let out = self
                .run(Payload::UserPromptSubmit { prompt }, Some(cancel))
                .await;
            if let Some(reason) = out.block.or(out.stop) {
                // The SessionStart context still waits for the next prompt.
                self.pending = added;
                return Err(reason);
            }
            if !out.context.is_empty() {
                added.push(context_text(
                    HookEvent::UserPromptSubmit,
                    None,
                    &out.context,
                ));
            }
        }
        if added.is_empty() {
            return Ok(message);
        }
        let mut parts = match message.content {
            Content::Text(t) => vec![Part::Text { text: t }],
            Content::Parts(p) => p,
        };
        parts.extend(added.into_iter().map(|text| Part::Text { text }));
        let mut m = Message::new(Role::User, Content::Parts(parts));
        m.usage = message.usage;
        Ok(m)
    }

    /// `PreToolUse` for one call the session offers.
    pub(super) async fn pre_tool(&self, call: &ToolCall, cancel: &CancellationToken) -> PreTool {
        let payload = Payload::PreToolUse(ToolUse {
            tool_name: call.name.clone(),
            tool_input: call.arguments.clone(),
            tool_use_id: call.id.clone(),
        });
        let out = self.run(payload, Some(cancel)).await;
        if let Some(reason) = out.denied() {
            return PreTool::Denied(tools::ToolOutput::error(format!(
                "denied by a PreToolUse hook: {reason}"
            )));
        }
        let mut call = call.clone();
        if let Some(input) = out.updated_input {
            call.arguments = input;
        }
        let said = match out.permission {
            Some(Permission::Allow) => HookSaid::Allow,
            Some(Permission::Ask) => HookSaid::Ask,
            Some(Permission::Deny) | None => HookSaid::Nothing,
        };
        PreTool::Run { call, said }
    }

    /// `PostToolUse`: what the hooks say to the model is added to the
    /// result; the hooks see it with provider keys scrubbed (`redactor`).
    pub(super) async fn post_tool(
        &self,
        call: &ToolCall,
        mut output: tools::ToolOutput,
        redactor: &crate::secrets::Redactor,
        cancel: &CancellationToken,
    ) -> tools::ToolOutput {
        if !self.hooks.has(HookEvent::PostToolUse) {
            return output;
        }
        let text = redactor.scrub(output.text.clone());
        let payload = Payload::PostToolUse {
            call: ToolUse {
                tool_name: call.name.clone(),
                tool_input: call.arguments.clone(),
                tool_use_id: call.id.clone(),
            },
            tool_response: tool_response(&call.name, &text, output.is_error),
        };
        let out = self.run(payload, Some(cancel)).await;
        let mut notes = Vec::new();
        if let Some(b) = out.block {
            notes.push(format!("[PostToolUse hook]\n{b}"));
        }
        if !out.context.is_empty() {
            notes.push(context_text(HookEvent::PostToolUse, None, &out.context));
        }
        for n in notes {
            if !output.text.ends_with('\n') {
                output.text.push('\n');
            }
            output.text.push_str(&n);
        }
        output
    }

    /// `Stop` (a task's child: `SubagentStop`) when the model ended its
    /// turn: `Some(message)` to go on with a user message saying the
    /// reason, at most [`MAX_STOP_BLOCKS`] times in a row.
    pub(super) async fn stop(&mut self, cancel: &CancellationToken) -> Option<Message> {
        let stop_hook_active = self.stop_blocks > 0;
        let payload = if self.subagent {
            Payload::SubagentStop { stop_hook_active }
        } else {
            Payload::Stop { stop_hook_active }
        };
        let event = payload.event();
        let out = self.run(payload, Some(cancel)).await;
        let Some(reason) = out.block.filter(|_| out.stop.is_none()) else {
            self.stop_blocks = 0;
            return None;
        };
        if self.stop_blocks >= MAX_STOP_BLOCKS {
            self.stop_blocks = 0;
            self.events.send(AgentEvent::Warning(format!(
                "the {event} hook blocked stopping {MAX_STOP_BLOCKS} times in a row; stopping anyway"
            )));
            return None;
        }
        self.stop_blocks += 1;
        Some(Message::user(format!("[{event} hook] {reason}")))
    }

    /// `PreCompact` before a summarizer request: `Err` when a hook skips an
    /// automatic compaction (an overflow or `/compact` is not skipped: the
    /// block is shown).
    pub(super) async fn pre_compact(
        &self,
        trigger: eonyx_core::CompactionTrigger,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let payload = Payload::PreCompact {
            trigger: hook_trigger(trigger),
            custom_instructions: focus.unwrap_or("").to_owned(),
        };
        let out = self.run(payload, Some(cancel)).await;
        match out.block {
            Some(reason) if trigger == eonyx_core::CompactionTrigger::Auto => {
                Err(AgentError::HookBlocked {
                    event: HookEvent::PreCompact.as_str(),
                    reason,
                })
            }
            Some(reason) => {
                self.events.send(AgentEvent::Notice(format!(
                    "a PreCompact hook asked to skip this compaction ({reason}); it is needed now, so it goes on"
                )));
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// After a compaction is applied: `PostCompact` with the summary, then
    /// `SessionStart` (`compact`), whose context is the message to append
    /// so it is in the next request.
    pub(super) async fn post_compact(
        &self,
        trigger: eonyx_core::CompactionTrigger,
        summary: &str,
        cancel: &CancellationToken,
    ) -> Option<Message> {
        let payload = Payload::PostCompact {
            trigger: hook_trigger(trigger),
            compact_summary: summary.to_owned(),
        };
        self.run(payload, Some(cancel)).await;
        if self.subagent {
            return None;
        }
        let source = StartSource::Compact;
        let out = self
            .run(Payload::SessionStart { source }, Some(cancel))
            .await;
        (!out.context.is_empty()).then(|| {
            Message::user(context_text(
                HookEvent::SessionStart,
                Some(source.as_str()),
                &out.context,
            ))
        })
    }

    /// The `PreCompact` run for a summary written ahead, inside its job:
    /// `false` when a hook cancels the draft (then no draft is started
    /// again for that boundary).
    pub(super) fn draft_gate(
        &self,
        first_kept_seq: u64,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let hooks = self.hooks.clone();
        let common = self.session.clone();
        let blocked_at = self.draft_blocked_at.clone();
        async move {
            if !hooks.has(HookEvent::PreCompact) {
                return Ok(());
            }
            let payload = Payload::PreCompact {
                trigger: CompactTrigger::Auto,
                custom_instructions: String::new(),
            };
            let out = hooks.run(&common, &payload).await;
            match out.block {
                Some(reason) => {
                    *blocked_at.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(first_kept_seq);
                    Err(format!(
                        "a PreCompact hook cancelled the summary written ahead: {reason}"
                    ))
                }
                None => Ok(()),
            }
        }
    }
}

fn hook_trigger(t: eonyx_core::CompactionTrigger) -> CompactTrigger {
    match t {
        eonyx_core::CompactionTrigger::Manual => CompactTrigger::Manual,
        _ => CompactTrigger::Auto,
    }
}

/// The user's approver with `Notification` hooks run as it asks.
struct Notify {
    hooks: Arc<Hooks>,
    common: Arc<Mutex<Common>>,
    inner: Arc<dyn Approver>,
}

impl Notify {
    /// Runs the `Notification` hooks for `kind` without holding up the
    /// question.
    fn notify(&self, kind: &ApprovalKind) {
        let common = self
            .common
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let payload = Payload::Notification {
            message: format!("eonyx needs your permission to {}", kind.describe()),
        };
        let hooks = self.hooks.clone();
        tokio::spawn(async move { hooks.run(&common, &payload).await });
    }

    /// `ask` (the inner approver's question), the hooks notified first.
    fn notified<'a>(
        &'a self,
        kind: &'a ApprovalKind,
        ask: impl FnOnce() -> eonyx_core::provider::BoxFuture<'a, Decision> + Send + 'a,
    ) -> eonyx_core::provider::BoxFuture<'a, Decision> {
        Box::pin(async move {
            self.notify(kind);
            ask().await
        })
    }
}

impl Approver for Notify {
    fn decide<'a>(
        &'a self,
        kind: &'a ApprovalKind,
    ) -> eonyx_core::provider::BoxFuture<'a, Decision> {
        self.notified(kind, || self.inner.decide(kind))
    }

    fn decide_asked<'a>(
        &'a self,
        kind: &'a ApprovalKind,
    ) -> eonyx_core::provider::BoxFuture<'a, Decision> {
        self.notified(kind, || self.inner.decide_asked(kind))
    }

    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        self.inner.rule_denial(kind)
    }

    fn decide_read<'a>(
        &'a self,
        kind: &'a ApprovalKind,
    ) -> eonyx_core::provider::BoxFuture<'a, Decision> {
        self.inner.decide_read(kind)
    }

    fn read_rules(&self) -> Option<Arc<tools::permissions::RuleMatcher>> {
        self.inner.read_rules()
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
