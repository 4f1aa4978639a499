//! `/status` (docs/repl.md, section "The REPL"): where the model, the window,
//! the tokens and the cache stand for the current session.

use camino::Utf8PathBuf;
use eonyx_core::{CompactionMode, CompactionTrigger, Record, Role};

use super::{Agent, ContextStatus};
use crate::error::AgentError;
use crate::limits as window;

/// Token usage the session's model steps reported, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionTokens {
    /// Model steps that reported usage.
    pub requests: u64,
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached: u64,
    /// Output tokens spent reasoning (part of `completion`).
    pub reasoning: u64,
}

impl SessionTokens {
    /// Cached over prompt tokens, in percent; `None` before any usage.
    pub fn cache_hit_percent(&self) -> Option<f64> {
        (self.prompt > 0).then(|| self.cached as f64 * 100.0 / self.prompt as f64)
    }
}

/// The last compaction of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastCompaction {
    pub trigger: CompactionTrigger,
    /// Absent in records written before cache-aware compaction.
    pub mode: Option<CompactionMode>,
    /// The provider wrote it (docs/compaction.md#native-compaction).
    pub native: bool,
    /// User messages its `## What the user said` kept verbatim and left
    /// out (docs/compaction.md#what-the-user-said).
    pub user_words: (u64, u64),
}

/// Everything `/status` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentStatus {
    pub model_key: String,
    pub model_name: String,
    /// `openai` or `anthropic`.
    pub provider: &'static str,
    pub base_url: String,
    /// The effective context window and where it came from (as `eonyx
    /// config` says it).
    pub window: u64,
    pub window_source: String,
    /// The `{ctx N%}` figures now.
    pub context: ContextStatus,
    /// Tokens at which an automatic compaction runs, when on.
    pub compaction_at: Option<u64>,
    pub tokens: SessionTokens,
    /// What the session and its tasks cost (docs/sessions.md, section "Cost");
    /// `None` without pricing.
    pub cost_usd: Option<f64>,
    pub compactions: u64,
    /// How many of them the provider wrote.
    pub native_compactions: u64,
    pub last_compaction: Option<LastCompaction>,
    /// `None` when memory is off.
    pub memory_entries: Option<usize>,
    /// The skills the model can load, by name.
    pub skills: Vec<String>,
    /// Parameters this model refused and no longer gets (`temperature`,
    /// `max_tokens`, `images`).
    pub refused: Vec<&'static str>,
    pub session_id: String,
    pub title: String,
    /// The session file (it exists once the session has a message).
    pub path: Utf8PathBuf,
    /// How `shell` commands run: the sandbox backend and what it allows,
    /// or why none works (`Sandbox::status`).
    pub sandbox: String,
    /// Each configured MCP server (docs/mcp.md), by name.
    pub mcp: Vec<crate::mcp::ServerStatus>,
    /// Tokens the MCP tools add to every request, and whether their
    /// schemas are deferred.
    pub mcp_tokens: u64,
    pub mcp_deferred: bool,
    /// The session's goal (any status but cleared).
    pub goal: Option<eonyx_core::goal::GoalRecord>,
    /// The current plan.
    pub plan: Option<eonyx_core::plan::WorkPlan>,
    /// The user's pins in force (docs/compaction.md#pins).
    pub pins: Vec<eonyx_core::pin::Pin>,
    /// Memory mining (docs/memory.md#mining): every request's tokens and
    /// cost so far, and this project's proposals waiting for review.
    pub mining: eonyx_store::mining::CostTotals,
    pub mining_waiting: usize,
}

impl Agent {
    /// What `/status` shows. Reads the session file for its token and
    /// compaction totals (the model-facing view holds only what came after
    /// the last compaction) and the limits cache for the window's source.
    pub fn status(&self) -> Result<AgentStatus, AgentError> {
        let id = self.session_id();
        let mut tokens = SessionTokens::default();
        let mut compactions = 0;
        let mut native_compactions = 0;
        let mut last_compaction = None;
        match self.store.read_all(id) {
            Ok(log) => {
                for r in &log.records {
                    match r {
                        Record::Message(m) if m.message.role == Role::Assistant => {
                            if let Some(u) = m.message.usage {
                                tokens.requests += 1;
                                tokens.prompt += u.prompt_tokens;
                                tokens.completion += u.completion_tokens;
                                tokens.cached += u.cached_tokens;
                                tokens.reasoning += u.reasoning_tokens;
                            }
                        }
                        Record::Compaction(c) => {
                            compactions += 1;
                            native_compactions += u64::from(c.native.is_some());
                            last_compaction = Some(LastCompaction {
                                trigger: c.trigger,
                                mode: c.mode,
                                native: c.native.is_some(),
                                user_words: c
                                    .user_words
                                    .as_ref()
                                    .map_or((0, 0), |u| (u.kept, u.left_out)),
                            });
                            // The native call's own usage counts too.
                            if let Some(u) = c.usage {
                                tokens.requests += 1;
                                tokens.prompt += u.prompt_tokens;
                                tokens.completion += u.completion_tokens;
                                tokens.cached += u.cached_tokens;
                                tokens.reasoning += u.reasoning_tokens;
                            }
                        }
                        _ => {}
                    }
                }
            }
            // Not born yet: no message, nothing to count.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        let cost_usd = match crate::cost::session_cost(&self.store, &self.config, id) {
            Ok(c) => c,
            Err(e) if e.is_not_found() => Some(0.0).filter(|_| self.config.model.pricing.is_some()),
            Err(e) => return Err(e.into()),
        };
        let model = &self.config.model;
        let mut notices = Vec::new();
        let cache = window::open_cache(self.store.data_dir(), &mut notices);
        let resolved = window::resolve_cached(model, Some(&cache));
        let context = self.context_status();
        let window_source = if resolved.tokens == context.window {
            resolved.describe(&window::configured_source(
                &self.config,
                &self.config.model_key,
            ))
        } else {
            "learned during this run".to_owned()
        };
        let quirks = self.models.provider.quirks();
        let refused = [
            (quirks.drop_temperature, "temperature"),
            (quirks.max_completion_tokens, "max_tokens"),
            (quirks.no_images, "images"),
            (quirks.no_reasoning_effort, "reasoning_effort"),
            (quirks.no_reasoning_content, "reasoning_content"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        // An unreadable mining state shows as none (mining itself says why).
        let mining = eonyx_store::mining::MiningStore::new(self.store.data_dir())
            .read()
            .unwrap_or_default();
        Ok(AgentStatus {
            model_key: self.config.model_key.clone(),
            model_name: model.name.clone(),
            provider: model.provider.as_str(),
            base_url: model.base_url.clone(),
            window: context.window,
            window_source,
            context,
            compaction_at: self.compaction.trigger.tokens,
            tokens,
            cost_usd,
            compactions,
            native_compactions,
            last_compaction,
            memory_entries: self
                .memory
                .as_ref()
                .map(|m| m.list().map(|e| e.len()))
                .transpose()?,
            skills: self
                .prompt
                .skills
                .skills
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            refused,
            session_id: id.to_string(),
            title: self.title().to_owned(),
            path: self.store.session_path(id),
            // How `shell` commands run (the first call probes the
            // backends, once per process).
            sandbox: self.tools.ctx.sandbox.status(),
            mcp: self.mcp.status(),
            mcp_tokens: self.mcp.catalog().tokens(),
            mcp_deferred: self.mcp.catalog().deferred(),
            goal: self.goal.clone(),
            plan: self.plan(),
            pins: self.pins().to_vec(),
            mining: mining.totals(),
            mining_waiting: mining.proposals_of(self.project.root.as_str()).count(),
        })
    }
}

impl Agent {
    /// A new turn of the user's session: its cost starts at nothing.
    pub(super) fn reset_spend(&self) {
        if let Ok(mut s) = self.inherit.spend.lock() {
            *s = eonyx_core::cost::Spend::default();
        }
    }

    /// One step's reported usage, priced with this agent's model (a task's
    /// child adds to its parent's turn).
    pub(super) fn add_spend(&self, u: &eonyx_core::Usage) {
        if let Ok(mut s) = self.inherit.spend.lock() {
            s.add(self.config.model.pricing.as_ref(), u);
        }
    }

    /// What the current turn has cost so far, for the user's session only.
    pub(super) fn turn_cost(&self) -> Option<f64> {
        if self.depth > 0 {
            return None;
        }
        self.inherit.spend.lock().ok().and_then(|s| s.usd())
    }
}
