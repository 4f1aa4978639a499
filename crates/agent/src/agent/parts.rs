//! The parts an [`Agent`] is made of, and [`Agent::assemble`], the one
//! place an agent is built: `open` (a session) and `task/child` (a task's
//! child) each gather [`Parts`] their own way and hand them here, so a new
//! field is added once. The approver is built from the permissions in one
//! place too ([`approver`]).

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_compact::{AutoGuard, Estimator, Limits, Trigger};
use eonyx_config::Config;
use eonyx_config::paths::{Env, Project};
use eonyx_core::provider::RequestQuirks;
use eonyx_core::{ModelConfig, Provider, ToolDef};
use eonyx_prompt::{ContextLoader, Loaded, MemorySection, Skills};
use eonyx_store::Store;
use eonyx_tools::{Approver, McpPolicy, Permissions, PolicyApprover, ToolContext, UndoStore};

use super::Agent;
use super::mcp::McpState;
use super::session::{Memory, Opened};
use crate::events::{Events, Flushing};
use crate::secrets::Redactor;
use crate::truncation::TruncationCheck;

/// The providers of a session's model and summarizer, and the windows the
/// servers answered.
pub(super) struct Models {
    pub provider: Arc<dyn Provider>,
    pub summarizer: Arc<dyn Provider>,
    pub summarizer_model: String,
    /// The summarizer model's config (its window and learned quirks).
    pub summarizer_config: ModelConfig,
    /// The summarizer's window when it is another model than the session's.
    pub summarizer_window: Option<u64>,
    /// Quirks last saved for (session model, summarizer model).
    pub saved_quirks: (RequestQuirks, RequestQuirks),
    /// The window came from Ollama's default: ask again after the first step.
    pub reprobe_after_step: bool,
    pub limits: Limits,
    /// Requests the session's server computes at once, when it said.
    pub total_slots: Option<u64>,
}

/// When and how the session compacts.
pub(super) struct CompactionState {
    pub estimator: Estimator,
    pub trigger: Trigger,
    pub guard: AutoGuard,
    pub truncation: TruncationCheck,
    /// The `seq` of the compaction record the view starts from.
    pub base_seq: Option<u64>,
    /// The newest summary written ahead (from the file or this process);
    /// it applies while it builds on `base_seq`.
    pub draft: Option<eonyx_core::SummaryDraftRecord>,
    /// Seq of the last compaction record when the session was opened (the
    /// estimator is calibrated from the usage after it).
    pub calibration_seq: u64,
    /// Provider-native compaction between compactions
    /// (docs/compaction.md#native-compaction).
    pub native: crate::native::NativeState,
}

/// What the system prompt is built from.
pub(super) struct PromptState {
    pub loader: ContextLoader,
    pub loaded: Loaded,
    /// Read when a session starts and after each compaction only, so the
    /// stable prefix stays byte-identical in between (docs/memory.md, section "Using memory").
    pub memory_section: MemorySection,
    /// Skills found when the agent started (docs/skills.md, section "Skills");
    /// shared with the `skill` tool through the tool context.
    pub skills: Arc<Skills>,
    /// Skills whose bodies are re-attached after the summary: those the
    /// last compaction record lists, and that section as rendered then.
    pub skills_in_use: Vec<String>,
    pub skills_in_use_section: String,
    /// For a task's child: the `# Task` section its stable prefix ends
    /// with (the parent's prefix comes first, byte for byte); empty for
    /// the user's session.
    pub task_section: String,
}

impl PromptState {
    /// The prompt's sources, no skills in use yet.
    pub fn new(
        loader: ContextLoader,
        loaded: Loaded,
        memory_section: MemorySection,
        skills: Arc<Skills>,
        task_section: String,
    ) -> Self {
        Self {
            loader,
            loaded,
            memory_section,
            skills,
            skills_in_use: Vec::new(),
            skills_in_use_section: String::new(),
            task_section,
        }
    }
}

/// The tools offered, what they run with, and who approves their calls.
pub(super) struct ToolsState {
    pub ctx: ToolContext,
    pub defs: Vec<ToolDef>,
    pub approver: Arc<dyn Approver>,
}

/// What a task's child inherits: the run's environment and flags, the
/// user to ask, a test's provider. A child never gets more than this.
#[derive(Clone)]
pub(super) struct Inherit {
    pub env: Env,
    /// `--model`, as given.
    pub model_flag: Option<String>,
    /// `--allow-shell`, `--allow-write`, `--allow-mcp`.
    pub permissions: Permissions,
    /// The user (REPL), already labelled for a child; `None` in batch runs.
    pub ask: Option<Arc<dyn Approver>>,
    pub provider: Option<Arc<dyn Provider>>,
    /// What the user's current turn has cost so far, its tasks' steps
    /// included: one total shared down the tree of tasks, reset when a
    /// turn of the user's session starts.
    pub spend: Arc<std::sync::Mutex<eonyx_core::cost::Spend>>,
}

/// The approver of an agent whose tool policy is `policy`'s (`tools.shell`,
/// `tools.write`, each MCP server's `approval`: a child's are its
/// parent's) and whose flags and user are `inherit`'s.
pub(super) fn approver(policy: &Config, inherit: &Inherit) -> Arc<dyn Approver> {
    let mcp = McpPolicy {
        servers: policy
            .mcp
            .servers
            .values()
            .map(|s| (s.name.clone(), s.approval))
            .collect(),
    };
    Arc::new(PolicyApprover::new(
        &policy.tools,
        inherit.permissions,
        mcp,
        inherit.ask.clone(),
    ))
}

/// The approver a call a `PreToolUse` hook allowed goes through
/// (docs/hooks.md#answers): [`approver`] with a user who says yes, so a
/// `deny` in config still denies.
pub(super) fn approved_by_hook(policy: &Config, inherit: &Inherit) -> Arc<dyn Approver> {
    let mut yes = inherit.clone();
    yes.ask = Some(Arc::new(eonyx_tools::AllowAll));
    approver(policy, &yes)
}

/// Everything an agent is built from.
pub(super) struct Parts {
    pub config: Config,
    pub store: Store,
    pub opened: Opened,
    pub models: Models,
    pub project: Project,
    pub cwd: Utf8PathBuf,
    pub home: Option<String>,
    /// What the prompt is built from ([`PromptState::new`]).
    pub prompt: PromptState,
    /// A session reads `# Memory` once built ([`Memory::Reread`]); a child
    /// keeps its parent's section ([`Memory::Keep`], in `prompt`).
    pub memory_read: Memory,
    /// The tools; the context's undo store is the session's, set here, and
    /// the approver is from [`approver`].
    pub tools: ToolsState,
    pub inherit: Inherit,
    pub mcp: McpState,
    pub memory: Option<eonyx_store::memory::MemoryStore>,
    pub secrets: Vec<String>,
    pub redactor: Redactor,
    pub depth: u32,
    pub notices: Vec<String>,
    /// The hooks (docs/hooks.md); `approved` from [`approved_by_hook`].
    pub hook: super::hooks::HookState,
    /// Where the agent's events go: a new queue for a session, the
    /// parent's, labelled, for a task's child.
    pub events: Events,
}

impl Agent {
    /// Build an agent from its parts: the compaction state from the config
    /// and the window, the session's undo store, the skills in use after
    /// the summary, the memory section, the estimator's calibration.
    pub(super) fn assemble(p: Parts) -> Agent {
        let Parts {
            config,
            store,
            opened,
            models,
            ..
        } = p;
        let compaction_seq = opened.compaction_seq;
        let compaction = CompactionState {
            estimator: Estimator::new(
                config.compaction.chars_per_token,
                config.compaction.image_tokens,
            ),
            trigger: eonyx_compact::trigger(&config.compaction, &models.limits),
            guard: AutoGuard::new(config.compaction.max_consecutive),
            truncation: TruncationCheck::default(),
            base_seq: (compaction_seq > 0).then_some(compaction_seq),
            draft: opened.draft,
            calibration_seq: compaction_seq,
            native: crate::native::NativeState::default(),
        };
        let mut agent = Agent {
            config,
            store,
            writer: opened.writer,
            message_count: opened.message_count,
            resumed: opened.resumed,
            view: opened.view,
            models,
            compaction,
            prompt: p.prompt,
            tools: p.tools,
            inherit: p.inherit,
            project: p.project,
            cwd: p.cwd,
            home: p.home,
            startup_notices: p.notices,
            memory: p.memory,
            secrets: p.secrets,
            redactor: p.redactor,
            mcp: p.mcp,
            depth: p.depth,
            hook: p.hook,
            // A task's child has its own plan and no goal.
            goal: if p.depth > 0 { None } else { opened.goal },
            pins: opened.pins,
            events: p.events,
        };
        // Every approver the agent holds lets the frontend show what came
        // before a question first.
        agent.tools.approver = Flushing::wrap(&agent.events, agent.tools.approver.clone());
        agent.hook.approved = Flushing::wrap(&agent.events, agent.hook.approved.clone());
        agent.hook.events = agent.events.clone();
        agent.hook_session_changed();
        agent.tools.ctx.undo = Some(agent.undo_store());
        // Its own jobs (a task's child's end with the task).
        agent.tools.ctx.jobs = Some(super::jobs::new_room(
            &agent.config,
            &agent.store,
            agent.writer.id(),
            &agent.tools.ctx.sandbox,
        ));
        if let Some(n) = agent.jobs().ended_earlier(&opened.jobs_ended) {
            agent.startup_notices.push(n);
        }
        agent.startup_notices.extend(opened.notices);
        let notes = agent.reattach_skills(opened.skills_in_use);
        agent.startup_notices.extend(notes);
        if p.memory_read == Memory::Reread
            && let Some(w) = agent.refresh_memory()
        {
            agent.startup_notices.push(w);
        }
        agent.calibrate_from_history(compaction_seq);
        agent.goals().sync_tool();
        agent
    }

    /// Where the editing tools of the current session keep what `/rewind`
    /// needs.
    pub(super) fn undo_store(&self) -> UndoStore {
        UndoStore {
            history: self.store.file_history(self.session_id()),
            secrets: Arc::new(self.secrets.clone()),
        }
    }
}
