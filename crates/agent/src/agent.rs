//! The agent: one [`Agent`] bound to one session at a time, and its public
//! API. The work is split by concern into the submodules:
//! - `open`: opening a session (new, latest, continue, by id), switching
//!   sessions, answering calls left dangling by a killed process;
//! - `turn`: the turn loop: steps, tool execution, append-before-continue;
//! - `step`: one provider step, with overflow and silent-truncation recovery
//!   (compact against the learned window, retry once);
//! - `compaction`: when to compact, planning, applying a summary written
//!   ahead, and the call into eonyx-compact;
//! - `ahead`: summaries written ahead of time, in the background, while the
//!   frontend waits for the user;
//! - `request`: the system prompt and the next request (shared with
//!   [`crate::effective_request`]), and the size estimate;
//! - `rewind`: `/rewind` (files, then the record, then the view rebuilt)
//!   and `/fork`, and finishing a rewind a crash interrupted;
//! - `skills`, `memory`: skills in use after the summary, and memory;
//! - `window_steps`: quirks, Ollama re-probe and the output-cap notice;
//! - `mcp`: the MCP servers: waiting for them, the tools they add, calls.
//! - `task`: the `task` tool: child agents in child sessions, built from
//!   this one and run concurrently (docs/tools.md#task).

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_compact::{AutoGuard, ContextView, Estimator, Limits, Trigger};
use eonyx_config::Config;
use eonyx_config::paths::{Env, Project};
use eonyx_core::provider::RequestQuirks;
use eonyx_core::{FinishReason, ModelConfig, Provider, SessionId, ToolDef, Usage};
use eonyx_prompt::{ContextLoader, Loaded, Skills};
use eonyx_store::{SessionWriter, Store};

use crate::error::AgentError;
use crate::secrets::Redactor;
use crate::tools::{Approver, ToolContext};
use crate::truncation::TruncationCheck;

mod ahead;
mod compaction;
mod input;
mod mcp;
mod memory;
mod open;
mod request;
mod rewind;
mod skills;
mod status;
mod step;
mod task;
mod turn;
mod window_steps;

pub use ahead::{DraftDone, DraftJob};
pub use input::{COMMAND_HEADER, CommandRun, UserInput};
pub(crate) use memory::read_memory_section;
pub(crate) use open::{RESUME_INTERRUPTED, unanswered_calls};
pub(crate) use request::{Sections, next_request, system_prompt, task_section, tool_definitions};
pub use rewind::RewindOptions;
pub use status::{AgentStatus, LastCompaction, SessionTokens};

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
    /// `--allow-shell`: shell commands (and reads outside the root) run
    /// without asking.
    pub allow_shell: bool,
    /// `--allow-write`: `write_file` / `edit_file` inside the root without
    /// asking.
    pub allow_write: bool,
    /// `--allow-mcp`: tools of MCP servers with `approval = "ask"` run
    /// without asking.
    pub allow_mcp: bool,
    /// The user, when there is one to ask (the REPL); `None` for batch runs
    /// and `eonyx run`, where what config and flags do not allow is denied.
    /// The agent applies `tools.shell` / `tools.write` and the flags first
    /// (see [`crate::tools::PolicyApprover`]).
    pub approver: Option<Arc<dyn Approver>>,
    /// Used instead of building an HTTP client from config (tests).
    pub provider: Option<Arc<dyn Provider>>,
    /// Starts the MCP servers instead of rmcp (tests).
    pub mcp: Option<Arc<dyn eonyx_mcp::Connector>>,
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
    /// answered has no pricing (README, section "Cost").
    pub cost_usd: Option<f64>,
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

/// One eonyx agent bound to one session at a time.
pub struct Agent {
    config: Config,
    store: Store,
    writer: SessionWriter,
    message_count: u64,
    resumed: bool,
    view: ContextView,
    estimator: Estimator,
    loader: ContextLoader,
    loaded: Loaded,
    provider: Arc<dyn Provider>,
    summarizer: Arc<dyn Provider>,
    summarizer_model: String,
    /// The summarizer model's config (its window and learned quirks).
    summarizer_config: ModelConfig,
    /// The summarizer's window when it is another model than the session's.
    summarizer_window: Option<u64>,
    /// Quirks last saved for (session model, summarizer model).
    saved_quirks: (RequestQuirks, RequestQuirks),
    /// The window came from Ollama's default: ask again after the first step.
    reprobe_after_step: bool,
    truncation: TruncationCheck,
    limits: Limits,
    trigger: Trigger,
    guard: AutoGuard,
    /// The `seq` of the compaction record the view starts from.
    base_seq: Option<u64>,
    /// The newest summary written ahead (from the file or this process);
    /// it applies while it builds on `base_seq`.
    draft: Option<eonyx_core::SummaryDraftRecord>,
    /// Requests the session's server computes at once, when it said.
    total_slots: Option<u64>,
    tool_ctx: ToolContext,
    tool_defs: Vec<ToolDef>,
    approver: Arc<dyn Approver>,
    project: Project,
    cwd: Utf8PathBuf,
    /// `$HOME`, for `@~/…`.
    home: Option<String>,
    /// A user can be asked (the REPL), as opposed to batch runs and `run`.
    has_user: bool,
    startup_notices: Vec<String>,
    /// `None` when `memory.enabled = false`.
    memory: Option<eonyx_store::memory::MemoryStore>,
    /// Read when a session starts and after each compaction only, so the
    /// stable prefix stays byte-identical in between (README, section "Memory").
    memory_section: eonyx_prompt::MemorySection,
    /// Values of the configured API keys: memory refuses them.
    secrets: Vec<String>,
    /// Scrubs provider keys from tool results.
    redactor: Redactor,
    /// Skills found when the agent started (README, section "Skills"); shared with the
    /// `skill` tool through the tool context.
    skills: Arc<Skills>,
    /// Skills whose bodies are re-attached after the summary: those the
    /// last compaction record lists, and that section as rendered then.
    skills_in_use: Vec<String>,
    skills_in_use_section: String,
    /// The MCP servers and the tools they add (docs/mcp.md).
    mcp: mcp::McpState,
    /// Seq of the last compaction record when the session was opened (the
    /// estimator is calibrated from the usage after it).
    calibration_seq: u64,
    /// How deep in a tree of tasks this agent runs (0: the user's own
    /// session); from `tasks.max_depth` on it gets no `task` tool.
    depth: u32,
    /// For a task's child: the `# Task` section its stable prefix ends
    /// with (the parent's prefix comes first, byte for byte); empty for
    /// the user's session.
    task_section: String,
    /// What a child agent inherits from this one.
    inherit: Inherit,
}

/// What a task's child inherits: the run's environment and flags, the
/// user to ask, a test's provider. A child never gets more than this.
#[derive(Clone)]
pub(crate) struct Inherit {
    env: Env,
    /// `--model`, as given.
    model_flag: Option<String>,
    allow_shell: bool,
    allow_write: bool,
    /// `--allow-mcp`.
    allow_mcp: bool,
    /// The user (REPL), already labelled for a child; `None` in batch runs.
    ask: Option<Arc<dyn Approver>>,
    provider: Option<Arc<dyn Provider>>,
    /// What the user's current turn has cost so far, its tasks' steps
    /// included: one total shared down the tree of tasks, reset when a
    /// turn of the user's session starts.
    spend: Arc<std::sync::Mutex<eonyx_core::cost::Spend>>,
}

impl Agent {
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

    /// How deep in a tree of tasks this agent runs (0: the user's session).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Whether the current session was resumed (as opposed to new).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The resolved config this agent runs with (the REPL reads `repl.*`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The context files as last read (before the latest user turn).
    pub fn context_files(&self) -> &Loaded {
        &self.loaded
    }

    /// The running summary, if the session has been compacted.
    pub fn summary(&self) -> Option<&str> {
        self.view.summary()
    }

    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }

    /// The skills found when the agent started.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// Skills whose bodies are re-attached after the summary.
    pub fn skills_in_use(&self) -> &[String] {
        &self.skills_in_use
    }

    /// One line on how `shell` commands run: the sandbox backend in use and
    /// what it allows, or why none works (`eonyx config`, `/status`). The
    /// first call may block for a few milliseconds (it probes the backends,
    /// once per process).
    pub fn sandbox_status(&self) -> String {
        self.tool_ctx.sandbox.status()
    }

    /// Rename the current session (appends a title record).
    pub fn rename(&mut self, title: &str) -> Result<(), AgentError> {
        self.writer.rename(title)?;
        Ok(())
    }
}
