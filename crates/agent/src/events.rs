mod flushing;
mod handle;

pub(crate) use flushing::Flushing;
pub use handle::Events;

use eonyx_core::memory::MemoryEntry;
use eonyx_core::{CompactionRecord, SessionId, SummaryDraftRecord, ToolCall, Usage};

/// What the agent reports while it works; the frontend decides how to show
/// it (stream to stdout, JSON events, spinners on stderr).
#[derive(Debug, Clone)]
pub enum AgentEvent {
    /// A provider step starts (waiting for the first token).
    StepStarted { step: u32 },
    /// A piece of the assistant's answer.
    TextDelta(String),
    /// A piece of the model's reasoning (or its summary): shown apart from
    /// the answer, never on stdout.
    ReasoningDelta(String),
    /// The assistant asked for a tool.
    ToolCall(ToolCall),
    /// A tool finished; `output` is what was saved (whole).
    ToolResult {
        call_id: String,
        name: String,
        output: String,
        is_error: bool,
    },
    /// `write_file` / `edit_file` changed a file (after it was saved).
    FileChanged(crate::tools::FileChange),
    /// A compaction begins.
    CompactionStarted {
        trigger: eonyx_core::CompactionTrigger,
    },
    /// A compaction was saved (`mode: "ahead"` when it applied a summary
    /// written ahead).
    Compacted(Box<CompactionRecord>),
    /// A summary written ahead, in the background, was saved.
    SummaryDraft(SummaryDraftRecord),
    /// A provider step finished with this usage.
    StepUsage(Usage),
    /// A one-line notice for stderr (changed context files, loop breaker…).
    Notice(String),
    /// A warning for stderr.
    Warning(String),
    /// A memory entry was added or forgotten (the `memory` tool,
    /// `/remember`): one line on stderr, a `memory_changed` JSON event.
    MemoryChanged {
        /// `"add"` or `"forget"`.
        action: &'static str,
        entry: MemoryEntry,
    },
    /// A diagnostic shown only when debugging (`EONYX_DEBUG`), e.g. why a
    /// compaction fell back to the transcript summarizer.
    Debug(String),
    /// A tool did something the user is told about directly.
    Tool(crate::tools::ToolEvent),
    /// A `task` call started (or continued) a child session.
    TaskStarted {
        /// The `task` tool call's id.
        call_id: String,
        session: SessionId,
        profile: String,
        description: String,
    },
    /// An event of the child agent running the task `call_id` (its steps,
    /// tool calls, notices…; nested for a child's own tasks).
    Task {
        call_id: String,
        event: Box<AgentEvent>,
    },
    /// A hook ran (docs/hooks.md): one per command, when it ended.
    Hook {
        event: eonyx_core::hooks::HookEvent,
        command: String,
        /// `None`: timed out or could not start.
        exit_code: Option<i32>,
        /// `block`, `deny`, `ask`, `allow`, `stop`, or none.
        decision: Option<&'static str>,
        millis: u64,
        /// Why, when it blocked, denied or stopped something.
        reason: Option<String>,
    },
    /// A `plan` call replaced the plan (docs/tools.md#plan).
    Plan(eonyx_core::plan::WorkPlan),
    /// The goal was set or its status changed (the record as saved).
    Goal(eonyx_core::goal::GoalRecord),
    /// eonyx continues an active goal by itself: the continuation
    /// `turns_used` of `max_turns` is about to be sent.
    GoalContinue { turns_used: u32, max_turns: u32 },
    /// A background job started (docs/tools.md#jobs); `call_id` is the
    /// `shell` call that started it.
    JobStarted {
        id: u32,
        command: String,
        log: String,
        call_id: Option<String>,
    },
    /// A background job ended (`status`: `exited 0`, `killed by SIGTERM`).
    JobExited {
        id: u32,
        command: String,
        status: String,
        secs: u64,
        call_id: Option<String>,
    },
    /// A task's child finished (answered, failed or was interrupted).
    TaskCompleted {
        call_id: String,
        session: SessionId,
        steps: u32,
        is_error: bool,
    },
}
