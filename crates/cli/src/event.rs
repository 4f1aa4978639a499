//! The JSON events of `--json` (docs/cli.md#json-events): one variant per
//! event `type`, with its fields in the order the docs list them. Every
//! event line on stdout is an [`Event`] rendered by [`Event::to_line`].
//!
//! Invariant: a JSON event is written only through [`Event`]; no `json!`
//! builds one.

use eonyx_agent::AgentStatus;
use eonyx_core::goal::GoalStatus;
use eonyx_core::memory::MemoryScope;
use eonyx_core::plan::PlanStep;
use eonyx_core::{CompactionMode, CompactionRecord, CompactionTrigger, FinishReason, Usage};
use serde::Serialize;
use serde_json::Value;

/// One line of `--json` output.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event<'a> {
    /// The session in use (`run` and batch runs, before the first turn).
    Session {
        id: &'a str,
        /// For a new session: the number it takes with its first message.
        title: &'a str,
        resumed: bool,
        /// Messages so far.
        messages: u64,
    },
    TurnStarted {
        input: &'a str,
    },
    /// A piece of the answer as it streams.
    Text {
        delta: &'a str,
    },
    /// A piece of the model's reasoning (or its summary), apart from the
    /// answer.
    Reasoning {
        delta: &'a str,
    },
    ToolCall {
        id: &'a str,
        name: &'a str,
        arguments: &'a Value,
    },
    ToolResult {
        id: &'a str,
        name: &'a str,
        is_error: bool,
        /// Length of the whole output.
        bytes: usize,
        /// Its first 200 characters on one line.
        preview: String,
    },
    FileChanged {
        /// Relative to the project root when inside it.
        path: &'a str,
        /// Lines added and removed.
        added: usize,
        removed: usize,
    },
    /// A background job started (docs/tools.md#jobs).
    JobStarted {
        job: u32,
        command: &'a str,
        log: &'a str,
    },
    /// A background job ended: `exited N` or `killed by SIGNAME`.
    JobExited {
        job: u32,
        command: &'a str,
        status: &'a str,
        secs: u64,
    },
    Recall {
        query: &'a str,
        scope: &'a str,
        /// All matches, including those past the limit.
        matches: u64,
        returned: u64,
    },
    /// A `web_fetch` call completed (docs/cli.md#json-events).
    WebFetch {
        /// The final URL, after same-host redirects.
        url: &'a str,
        status: u16,
        /// Bytes of the body read.
        bytes: u64,
        cached: bool,
    },
    /// A compaction during a turn (automatic, or after an overflow).
    Compaction {
        trigger: CompactionTrigger,
        tokens_before: u64,
        tokens_after: u64,
        first_kept_seq: u64,
        mid_turn: bool,
        mode: Option<CompactionMode>,
        /// With `mode: "ahead"`: the `summary_draft` record applied (absent
        /// otherwise).
        #[serde(skip_serializing_if = "Option::is_none")]
        draft_seq: Option<u64>,
        /// `true` when the provider wrote the compacted part
        /// (docs/compaction.md#native-compaction); absent otherwise.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        native: bool,
        /// What `## What the user said` holds (docs/compaction.md#what-the-user-said).
        user_words: UserWordsCount,
    },
    /// A summary is being written ahead, in the background (batch runs:
    /// written before the `turn_completed` of the turn after which it
    /// started).
    SummaryDraftStarted {
        first_kept_seq: u64,
    },
    /// A summary written ahead was saved; the next compaction applies it
    /// with no summarizer call.
    SummaryDraft {
        seq: u64,
        first_kept_seq: u64,
        /// The summary's size.
        tokens: u64,
    },
    /// `eonyx compact --json`: the session and the whole record written.
    #[serde(rename = "compaction")]
    CompactedSession {
        session: &'a str,
        record: &'a CompactionRecord,
    },
    Notice {
        message: &'a str,
    },
    Warning {
        message: &'a str,
    },
    /// A hook ran (docs/hooks.md#events-and-json): its event, command,
    /// exit code (`null`: timed out or could not start), decision (`block`,
    /// `deny`, `ask`, `allow`, `stop` or `null`) and milliseconds.
    Hook {
        event: &'a str,
        command: &'a str,
        exit_code: Option<i32>,
        decision: Option<&'a str>,
        ms: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    MemoryChanged {
        /// `add` or `forget`.
        action: &'a str,
        id: &'a str,
        scope: MemoryScope,
        text: &'a str,
        session: Option<&'a str>,
    },
    /// A memory proposed from a past session (docs/memory.md#mining): waiting
    /// for review, or with `accepted` = the memory entry's id (`auto`).
    MemoryProposed {
        id: &'a str,
        text: &'a str,
        scope: MemoryScope,
        session: &'a str,
        seq: Option<u64>,
        accepted: Option<&'a str>,
    },
    /// A past session was mined: the proposals kept and the request's
    /// tokens and cost (`status`: `mined`, or `retry` / `failed` for a
    /// reply that was not the JSON asked for).
    MemoryMined {
        session: &'a str,
        title: &'a str,
        proposals: u64,
        tokens: u64,
        prompt_tokens: u64,
        completion_tokens: u64,
        cost_usd: Option<f64>,
        status: &'a str,
    },
    /// `/rewind` (REPL and batch): what it did.
    Rewind {
        /// The conversation is the one as of this seq.
        to_seq: u64,
        /// User turns rewound.
        turns: usize,
        /// Files put back as they were before those turns.
        restored: &'a [String],
        /// Files those turns created, removed.
        removed: &'a [String],
        /// Files not touched, and why (changed since eonyx wrote them…).
        left_alone: Vec<PathReason<'a>>,
        /// Files restored to a later version than the turns', and why.
        notes: Vec<PathReason<'a>>,
        /// Shell commands of those turns: not undone.
        not_undone: &'a [String],
        /// `--keep-files`: files were left as they are.
        keep_files: bool,
    },
    /// `/fork`: the session now in use is a fork.
    Fork {
        id: &'a str,
        title: &'a str,
        forked_from: ForkPoint<'a>,
    },
    /// A `!command` ran; its command and output went into the conversation.
    Command {
        command: &'a str,
        /// `exit status: N`, `timed out after Ns` or `interrupted`.
        outcome: &'a str,
        is_error: bool,
        /// Output bytes the command wrote.
        bytes: usize,
        /// Bytes of it left out of the conversation (`tools.output_cap_bytes`).
        cut: usize,
    },
    /// `/status`: where the model, window, tokens and cache stand.
    Status(Box<StatusEvent<'a>>),
    /// Only with `EONYX_DEBUG` set.
    Debug {
        message: &'a str,
    },
    /// A `task` call started (or continued) a child session.
    TaskStarted {
        /// The `task` tool call's id (the `task` field of the child's
        /// own events).
        id: &'a str,
        session: &'a str,
        profile: &'a str,
        description: &'a str,
    },
    /// A `plan` call replaced the plan (docs/tools.md#plan).
    Plan {
        steps: &'a [PlanStep],
        note: Option<&'a str>,
    },
    /// The goal was set or its status changed (the `goal` record saved).
    Goal {
        text: &'a str,
        status: GoalStatus,
        turns_used: u32,
        max_turns: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        evidence: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// eonyx continues the active goal by itself: continuation
    /// `turns_used` of `max_turns` is sent next.
    GoalContinue {
        turns_used: u32,
        max_turns: u32,
    },
    /// A task's child finished: answered, or `is_error` (failed or
    /// interrupted).
    TaskCompleted {
        id: &'a str,
        session: &'a str,
        steps: u32,
        is_error: bool,
    },
    TurnCompleted {
        /// The final answer.
        text: &'a str,
        steps: u32,
        max_steps_reached: bool,
        /// Of the turn's last step (see [`finish_reason`]).
        finish_reason: Option<String>,
        usage: EventUsage,
    },
    /// Every failure, exactly once per command.
    Error {
        class: &'a str,
        message: &'a str,
    },
}

/// A file and why (in a `rewind` event).
#[derive(Debug, Serialize)]
pub struct PathReason<'a> {
    pub path: &'a str,
    pub reason: &'a str,
}

/// Where a fork was copied from (in a `fork` event).
#[derive(Debug, Serialize)]
pub struct ForkPoint<'a> {
    pub id: &'a str,
    pub seq: u64,
}

/// The fields of a `status` event (docs/cli.md#json-events).
#[derive(Debug, Serialize)]
pub struct StatusEvent<'a> {
    /// The model key from the config.
    pub model: &'a str,
    /// The model id sent to the API.
    pub model_name: &'a str,
    pub provider: &'a str,
    pub base_url: &'a str,
    pub window: u64,
    /// Where the window came from, as `eonyx config` says it.
    pub window_source: &'a str,
    /// The `{ctx}` figures: estimated next request, in tokens and percent.
    pub ctx_tokens: u64,
    pub ctx_percent: f64,
    /// Tokens at which automatic compaction runs (`null`: off).
    pub compaction_at: Option<u64>,
    pub usage: StatusUsage,
    /// What the session and its tasks cost in USD; absent without pricing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub compactions: u64,
    pub last_compaction: Option<StatusCompaction>,
    /// `null` when memory is off.
    pub memory_entries: Option<usize>,
    /// Memory mining so far: requests, tokens, cost (docs/memory.md#mining),
    /// and this project's proposals waiting for review.
    pub mining: eonyx_store::mining::CostTotals,
    pub memory_proposed: usize,
    pub skills: &'a [String],
    /// Parameters this model refused (`temperature`, `max_tokens`, `images`).
    pub refused: &'a [&'static str],
    pub session: &'a str,
    pub title: &'a str,
    pub path: &'a str,
    /// How `shell` commands run (the `eonyx config` sandbox line).
    pub sandbox: &'a str,
    /// Each configured MCP server (docs/mcp.md).
    pub mcp_servers: Vec<StatusMcpServer<'a>>,
    /// Tokens the MCP tools add to every request.
    pub mcp_tokens: u64,
    pub mcp_deferred: bool,
    /// The session's goal (`null`: none).
    pub goal: Option<StatusGoal<'a>>,
    /// The plan's progress (`null`: no plan).
    pub plan: Option<StatusPlan<'a>>,
    /// The user's pins in force (docs/compaction.md#pins).
    pub pins: &'a [eonyx_core::pin::Pin],
}

/// The goal in a `status` event.
#[derive(Debug, Serialize)]
pub struct StatusGoal<'a> {
    pub text: &'a str,
    pub status: GoalStatus,
    pub turns_used: u32,
    pub max_turns: u32,
}

/// The plan in a `status` event.
#[derive(Debug, Serialize)]
pub struct StatusPlan<'a> {
    pub completed: usize,
    pub steps: usize,
    /// The step in progress.
    pub in_progress: Option<&'a str>,
}

/// One MCP server in a `status` event.
#[derive(Debug, Serialize)]
pub struct StatusMcpServer<'a> {
    pub name: &'a str,
    /// `ready`, `failed`, `crashed`, `disabled`, `starting`.
    pub state: &'static str,
    /// Why it failed or crashed.
    pub reason: Option<&'a str>,
    pub tools: usize,
}

impl<'a> StatusEvent<'a> {
    pub fn new(s: &'a AgentStatus) -> Self {
        Self {
            model: &s.model_key,
            model_name: &s.model_name,
            provider: s.provider,
            base_url: &s.base_url,
            window: s.window,
            window_source: &s.window_source,
            ctx_tokens: s.context.estimate,
            ctx_percent: (s.context.percent * 10.0).round() / 10.0,
            compaction_at: s.compaction_at,
            usage: StatusUsage {
                requests: s.tokens.requests,
                prompt_tokens: s.tokens.prompt,
                completion_tokens: s.tokens.completion,
                cached_tokens: s.tokens.cached,
                reasoning_tokens: s.tokens.reasoning,
                cache_hit_percent: s
                    .tokens
                    .cache_hit_percent()
                    .map(|p| (p * 10.0).round() / 10.0),
            },
            cost_usd: s.cost_usd,
            compactions: s.compactions,
            last_compaction: s.last_compaction.map(|c| StatusCompaction {
                trigger: c.trigger,
                mode: c.mode,
                native: c.native,
                user_words: UserWordsCount {
                    kept: c.user_words.0,
                    left_out: c.user_words.1,
                },
            }),
            memory_entries: s.memory_entries,
            mining: s.mining,
            memory_proposed: s.mining_waiting,
            skills: &s.skills,
            refused: &s.refused,
            session: &s.session_id,
            title: &s.title,
            path: s.path.as_str(),
            sandbox: &s.sandbox,
            mcp_servers: s
                .mcp
                .iter()
                .map(|m| StatusMcpServer {
                    name: &m.name,
                    state: m.state.label(),
                    reason: m.state.reason(),
                    tools: m.tools,
                })
                .collect(),
            mcp_tokens: s.mcp_tokens,
            mcp_deferred: s.mcp_deferred,
            goal: s.goal.as_ref().map(|g| StatusGoal {
                text: &g.text,
                status: g.status,
                turns_used: g.turns_used,
                max_turns: g.max_turns,
            }),
            plan: s.plan.as_ref().map(|p| StatusPlan {
                completed: p.completed(),
                steps: p.steps.len(),
                in_progress: p.in_progress().map(|s| s.step.as_str()),
            }),
            pins: &s.pins,
        }
    }
}

/// This session's tokens in a `status` event.
#[derive(Debug, Serialize)]
pub struct StatusUsage {
    /// Model steps that reported usage.
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// Output tokens spent reasoning (part of `completion_tokens`).
    pub reasoning_tokens: u64,
    /// Cached over prompt tokens, percent (`null` before any usage).
    pub cache_hit_percent: Option<f64>,
}

impl Event<'_> {
    /// The `compaction` event of a compaction record.
    pub fn compaction(rec: &CompactionRecord) -> Event<'static> {
        Event::Compaction {
            trigger: rec.trigger,
            tokens_before: rec.tokens_before,
            tokens_after: rec.tokens_after,
            first_kept_seq: rec.first_kept_seq,
            mid_turn: rec.mid_turn,
            mode: rec.mode,
            draft_seq: rec.draft_seq,
            native: rec.native.is_some(),
            user_words: UserWordsCount::of(rec),
        }
    }
}

/// How many user messages a compaction kept verbatim and left out (for
/// `recall`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct UserWordsCount {
    pub kept: u64,
    pub left_out: u64,
}

impl UserWordsCount {
    pub fn of(record: &eonyx_core::CompactionRecord) -> Self {
        record
            .user_words
            .as_ref()
            .map_or_else(Self::default, |u| Self {
                kept: u.kept,
                left_out: u.left_out,
            })
    }
}

/// The last compaction in a `status` event.
#[derive(Debug, Serialize)]
pub struct StatusCompaction {
    pub trigger: CompactionTrigger,
    pub mode: Option<CompactionMode>,
    /// The provider wrote it (docs/compaction.md#native-compaction).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub native: bool,
    /// What its `## What the user said` holds.
    pub user_words: UserWordsCount,
}

/// The `usage` of a `turn_completed` event.
#[derive(Debug, Serialize)]
pub struct EventUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// Output tokens spent reasoning (part of `completion_tokens`).
    pub reasoning_tokens: u64,
    /// What the turn cost in USD, its tasks included (docs/sessions.md, section
    /// "Cost"); absent without pricing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl EventUsage {
    pub fn new(u: &Usage, cost_usd: Option<f64>) -> Self {
        Self {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.cached_tokens,
            reasoning_tokens: u.reasoning_tokens,
            cost_usd,
        }
    }
}

/// An event of a task's child agent: the event's own fields plus `task`,
/// the id of the `task` call that runs the child.
#[derive(Debug, Serialize)]
struct ChildEvent<'e, 'a> {
    #[serde(flatten)]
    event: &'e Event<'a>,
    task: &'e str,
}

impl Event<'_> {
    /// The event as one line of JSON (no newline). It goes through
    /// [`serde_json::Value`] with every object's keys, nested ones too,
    /// sorted: the output these events have always had (serde_json keeps
    /// insertion order in the tree, `preserve_order`, which the ACP crate
    /// turns on).
    pub fn to_line(&self) -> serde_json::Result<String> {
        Ok(sorted(serde_json::to_value(self)?).to_string())
    }

    /// The event of a task's child, with `task` = the task call's id.
    pub fn to_child_line(&self, task: &str) -> serde_json::Result<String> {
        Ok(sorted(serde_json::to_value(ChildEvent { event: self, task })?).to_string())
    }
}

/// `v` with the keys of every object in it sorted.
pub fn sorted(mut v: serde_json::Value) -> serde_json::Value {
    v.sort_all_objects();
    v
}

/// The API-neutral name of a finish reason for JSON events.
pub fn finish_reason(f: &FinishReason) -> String {
    match f {
        FinishReason::Stop => "stop".to_owned(),
        FinishReason::Length => "length".to_owned(),
        FinishReason::ToolCalls => "tool_calls".to_owned(),
        FinishReason::ContentFilter(_) => "content_filter".to_owned(),
        FinishReason::Other(s) => s.clone(),
    }
}

#[cfg(test)]
mod tests;
