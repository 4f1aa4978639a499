//! The agent: one [`Agent`] bound to one session at a time, and its public
//! API. `Agent` composes rooms that keep their own state and behaviour,
//! each behind one accessor: [`Agent::jobs`] ([`SessionJobs`]),
//! [`Agent::hooks`] ([`HookState`]), [`Agent::goals`] ([`SessionGoal`]),
//! [`Agent::mcp`] ([`McpState`]); native compaction is `crate::native`'s
//! `NativeState`. The work is split by concern into the submodules:
//! - `open`: opening a session (new, latest, continue, by id), switching
//!   sessions, answering calls left dangling by a killed process;
//! - `turn`: the turn loop: steps, tool execution, append-before-continue;
//! - `step`: one provider step, with overflow and silent-truncation recovery
//!   (compact against the learned window, retry once);
//! - `compaction`: when to compact, planning, applying a summary written
//!   ahead, and the call into eonyx-compact, asking the provider first
//!   (`NativeState::ask`); `compaction_native`: replacing another model's
//!   native result with eonyx's own summary (`native::replacement`);
//! - `ahead`: summaries written ahead of time, in the background, while the
//!   frontend waits for the user;
//! - `request`: the system prompt (assembled by [`crate::prompt`]) and the
//!   next request (shared with [`crate::effective_request`]), and the size
//!   estimate;
//! - `rewind`: `/rewind` (files, then the record, then the view rebuilt)
//!   and `/fork`, and finishing a rewind a crash interrupted;
//! - `skills`, `memory`: skills in use after the summary, and memory;
//! - `window_steps`: quirks, Ollama re-probe and the output-cap notice;
//! - `mcp`: the MCP room ([`McpState`]): waiting for the servers, the
//!   tools they add, calls, status.
//! - `model`: `/model`: switching the model or effort mid-session;
//!   `switch`: a switch applied to the config, and restoring the one a
//!   continued session recorded.
//! - `task`: the `task` tool: child agents in child sessions, built from
//!   this one and run concurrently (docs/tools.md#task).
//! - `parts`: what an `Agent` is made of, and `Agent::assemble`, the one
//!   place an agent is built, for a session and a task's child alike;
//! - `session`: a session's file opened (new, latest, given), a rewind a
//!   crash interrupted finished, dangling tool calls answered;
//! - `goal`: the goal room ([`SessionGoal`]: `/goal`, the continuation
//!   after a turn, `goal_update`), the `plan` tool, and what every
//!   compaction pins (`save_compaction` calls `pin`, so every kind of
//!   compaction pins the goal and plan);
//! - `hooks`: the hooks room ([`HookState`]): each event's input built
//!   for the session it names and its outcome applied (docs/hooks.md);
//! - `input`: `@path` files, `--image` files and the user's `!command`;
//! - `kept`: what every compaction keeps verbatim for the user: the pins
//!   (the room is `crate::pins`) and `## What the user said`, rebuilt from
//!   the session file (docs/compaction.md#what-the-user-said);
//! - `status`: the `/status` figures, and the turn's running cost shared
//!   down the tree of tasks;
//! - `jobs`: [`SessionJobs`], the session's handle on its jobs room
//!   (`tools::jobs::Jobs`, which holds their state, exit notices
//!   included): `job` records, events, `/jobs`.
//!
//! Also kept here:
//! - Events go through the one handle the agent owns ([`Agent::events`],
//!   `crate::events::Events`), never a callback parameter: the rooms that
//!   report (hooks, jobs, goal, a task's children) send through it, and
//!   the frontend shows what comes out while it awaits the agent. Every
//!   approver the agent holds is wrapped to flush it first (`assemble`,
//!   `set_approver`), so a question comes after the events before it.
//! - Skills are discovered once when the agent opens, so the `# Skills`
//!   listing never changes a session's prefix; each compaction records the
//!   skills loaded so far, and their bodies come back after the summary.
//! - `recall` never returns a message the current request already carries;
//!   the summary section ends with the recall hint only while the tool is
//!   on, and the hint is never part of the stored summary.
//! - A model that refuses images gets the step once more without them, with
//!   a warning first (the agent retries, not the client); the quirk is saved
//!   in `limits.json`, and the session file keeps the images.
//! - A task's child is built from its parent without the probes of
//!   `Agent::open`: the parent's providers, window, context files, memory
//!   section and skills (so its prefix starts with the parent's byte for
//!   byte), and the parent's approver, questions labelled with the task.
//!   The `task` calls of a step run together, results in call order.
//! - `/fork` keeps the `# Memory` section it has, and every request of a
//!   chain of forks carries the chain's first session id as prompt-cache
//!   key (`SessionHeader::cache_key`).

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_compact::{ContextView, Trigger};
use eonyx_config::Config;
use eonyx_config::paths::{Env, Project};
use eonyx_core::{FinishReason, Provider, SessionId, Usage};
use eonyx_prompt::Skills;
use eonyx_store::{SessionWriter, Store};
use eonyx_tools::{Approver, Permissions};

use crate::error::AgentError;
use crate::events::{Events, Flushing};
use crate::secrets::Redactor;
use parts::{CompactionState, Inherit, Models, PromptState, ToolsState};

mod ahead;
mod compaction;
mod compaction_native;
mod goal;
mod hooks;
mod input;
mod jobs;
mod kept;
mod mcp;
mod memory;
mod model;
mod open;
mod parts;
mod request;
mod rewind;
mod session;
mod skills;
mod status;
mod step;
mod switch;
mod task;
mod turn;
mod window_steps;

pub use ahead::{DraftDone, DraftJob};
pub(crate) use goal::goal_in_force;
pub use goal::{GoalChange, SessionGoal};
pub use hooks::{HookState, MAX_STOP_BLOCKS};
pub use input::{COMMAND_HEADER, CommandRun, UserInput};
pub use jobs::SessionJobs;
pub use mcp::McpState;
pub use model::{ModelInfo, ModelSwitch};
pub(crate) use request::next_request;
pub use rewind::RewindOptions;
pub(crate) use session::{RESUME_INTERRUPTED, unanswered_calls};
pub use status::{AgentStatus, LastCompaction, SessionTokens};

/// Who decides approvals, as a frontend sets them ([`Agent::set_approver`]).
pub struct Approvers {
    /// Every call that needs approval.
    pub ask: Arc<dyn Approver>,
    /// A call a `PreToolUse` hook allowed (docs/hooks.md#answers): the
    /// user's yes, within what the frontend's policy still denies (an ACP
    /// session in `read-only` mode refuses it like any other write).
    pub hook_allowed: Arc<dyn Approver>,
}

/// Which session to work in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// A fresh session.
    New,
    /// The most recent session of this project, or a fresh one if none.
    Latest,
    /// The most recent session of this project; an error if none.
    Continue,
    /// A given session.
    Id(SessionId),
}

/// Everything needed to start an agent.
#[derive(Clone)]
pub struct AgentOptions {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    /// `--model KEY`.
    pub model: Option<String>,
    /// `--profile NAME`.
    pub profile: Option<String>,
    /// `--allow-shell`, `--allow-write`, `--allow-mcp`: what runs without
    /// asking.
    pub permissions: Permissions,
    /// The user, when there is one to ask (the REPL); `None` for batch runs
    /// and `eonyx run`, where what config and flags do not allow is denied.
    /// The agent applies `tools.shell` / `tools.write` and the flags first
    /// (see [`eonyx_tools::PolicyApprover`]).
    pub approver: Option<Arc<dyn Approver>>,
    /// Used instead of building an HTTP client from config (tests).
    pub provider: Option<Arc<dyn Provider>>,
    /// Starts the MCP servers instead of rmcp (tests).
    pub mcp: Option<Arc<dyn eonyx_mcp::Connector>>,
    /// MCP servers the frontend adds to the configured ones for this
    /// session (an ACP client's `mcpServers`); one of the same name
    /// replaces the configured server.
    pub mcp_servers: Vec<eonyx_core::McpServerConfig>,
    /// The `eonyx` executable, which runs the Landlock sandbox helper
    /// (`current_exe()` in the binary). `None` (library tests, which do not
    /// run inside `eonyx`): the Landlock backend is unavailable.
    pub sandbox_helper: Option<std::path::PathBuf>,
}

/// The result of a completed turn.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// The final assistant text.
    pub text: String,
    /// Usage summed over the turn's provider steps.
    pub usage: Usage,
    pub steps: u32,
    /// The turn ended because `max_steps` was reached.
    pub max_steps_reached: bool,
    /// Why the model stopped in the turn's last step (`length`: cut by the
    /// output cap).
    pub finish_reason: Option<FinishReason>,
    /// What the turn cost, its tasks included, from the usage the servers
    /// reported and `models.<key>.pricing`; `None` when a model that
    /// answered has no pricing (docs/sessions.md, section "Cost").
    pub cost_usd: Option<f64>,
    /// A `UserPromptSubmit` hook blocked the prompt (nothing was sent or
    /// saved); its reason.
    pub blocked: Option<String>,
}

impl TurnOutcome {
    /// The provider blocked or refused the turn's last reply (it is kept
    /// in the session, marked): the error every frontend reports for it,
    /// so `run` and batch runs exit 1 (docs/providers.md#blocked-replies).
    pub fn reply_blocked(&self) -> Option<AgentError> {
        match &self.finish_reason {
            Some(FinishReason::ContentFilter(reason)) => Some(AgentError::ReplyBlocked {
                reason: reason.clone(),
            }),
            _ => None,
        }
    }
}

/// The `{ctx N%}` figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextStatus {
    pub estimate: u64,
    pub window: u64,
    pub percent: f64,
    /// At or above the compaction threshold.
    pub over_threshold: bool,
    /// A summary written ahead is ready: the next compaction needs no
    /// summarizer call.
    pub summary_ready: bool,
}

/// One eonyx agent bound to one session at a time. Its state is grouped
/// into parts (`agent/parts.rs`), and it is built in one place,
/// `Agent::assemble`, for a session (`open`) and a task's child alike.
pub struct Agent {
    config: Config,
    store: Store,
    writer: SessionWriter,
    message_count: u64,
    resumed: bool,
    view: ContextView,
    /// The session's model and summarizer, and their windows.
    models: Models,
    /// When and how the session compacts.
    compaction: CompactionState,
    /// What the stable prefix is built from.
    prompt: PromptState,
    /// The tools offered, their context and who approves their calls.
    tools: ToolsState,
    /// The run's environment, flags and user, which a task's child
    /// inherits.
    inherit: Inherit,
    project: Project,
    cwd: Utf8PathBuf,
    /// `$HOME`, for `@~/…`.
    home: Option<String>,
    startup_notices: Vec<String>,
    /// `None` when `memory.enabled = false`.
    memory: Option<eonyx_store::memory::MemoryStore>,
    /// Values of the configured API keys: memory refuses them.
    secrets: Vec<String>,
    /// Scrubs provider keys from tool results.
    redactor: Redactor,
    /// The MCP servers and the tools they add (docs/mcp.md).
    mcp: mcp::McpState,
    /// How deep in a tree of tasks this agent runs (0: the user's own
    /// session); from `tasks.max_depth` on it gets no `task` tool.
    depth: u32,
    /// The hooks that run here and what they left for later (docs/hooks.md).
    hook: hooks::HookState,
    /// The session's goal (any status but cleared): the last goal record
    /// of the timeline, or what the compaction in force pinned; never one
    /// in a task's child (docs/goals.md, section "Goals").
    goal: Option<eonyx_core::goal::GoalRecord>,
    /// The user's pins (docs/compaction.md#pins).
    pins: crate::pins::Pins,
    /// Where everything this agent reports goes ([`Agent::events`]); a
    /// task's child's feeds its parent's queue, labelled with its task.
    events: Events,
}

impl Agent {
    /// The handle this agent's events come out of: a frontend shows them
    /// while it awaits the agent ([`Events::deliver`]) or after a call
    /// that does not wait ([`Events::drain`]).
    pub fn events(&self) -> Events {
        self.events.clone()
    }

    /// Warnings gathered while opening (context files, config, window).
    pub fn take_startup_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.startup_notices)
    }

    pub fn session_id(&self) -> &SessionId {
        self.writer.id()
    }

    pub fn title(&self) -> &str {
        self.writer.title()
    }

    pub fn message_count(&self) -> u64 {
        self.message_count
    }

    /// Whether the current session was resumed (as opposed to new).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// The working directory the agent was opened in.
    pub fn cwd(&self) -> &camino::Utf8Path {
        &self.cwd
    }

    /// The project root (where the tools' relative paths start).
    pub fn project_root(&self) -> &camino::Utf8Path {
        &self.project.root
    }

    /// The configured keys' values, which no memory entry may hold.
    pub(crate) fn secret_values(&self) -> &[String] {
        &self.secrets
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The resolved config this agent runs with (the REPL reads `repl.*`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The running summary, if the session has been compacted.
    pub fn summary(&self) -> Option<&str> {
        self.view.summary()
    }

    pub fn trigger(&self) -> &Trigger {
        &self.compaction.trigger
    }

    /// The skills found when the agent started.
    pub fn skills(&self) -> &Skills {
        &self.prompt.skills
    }

    /// Skills whose bodies are re-attached after the summary.
    pub fn skills_in_use(&self) -> &[String] {
        &self.prompt.skills_in_use
    }

    /// Whether this session's shell commands run confined (ACP's `auto`
    /// mode runs only those without asking).
    pub fn confinement(&self) -> crate::confinement::Confinement {
        crate::confinement::Confinement(self.tools.ctx.sandbox.clone())
    }

    /// Replace who decides approvals from now on (the ACP frontend's
    /// modes, `session/set_mode`). Each approver applies config and flags
    /// itself: build them as [`crate::tools::PolicyApprover`]s. A task's
    /// child decides through the same two.
    pub fn set_approver(&mut self, approvers: Approvers) {
        self.tools.approver = Flushing::wrap(&self.events, approvers.ask);
        self.hook.approved = Flushing::wrap(&self.events, approvers.hook_allowed);
    }

    /// Read and write files through the client's file system from now on
    /// (`eonyx acp`, when the client offers it); see
    /// [`eonyx_tools::ClientFiles`].
    pub fn set_client_files(&mut self, files: Arc<dyn eonyx_tools::ClientFiles>) {
        self.tools.ctx.files = Some(files);
    }

    /// Rename the current session (appends a title record).
    pub fn rename(&mut self, title: &str) -> Result<(), AgentError> {
        self.writer.rename(title)?;
        Ok(())
    }
}
