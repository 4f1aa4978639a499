//! Agent events as `session/update` notifications (docs/acp.md#updates):
//! answer text, tool calls with their kind, title, locations, raw input,
//! status and content (text, or a diff for edits), compactions.
//!
//! Notifications are sent from the agent's event sink as the events
//! happen (sending only queues them), so a tool call is always announced
//! before a permission request about it, and every update before the
//! answer to `session/prompt`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CompactionStatus, CompactionUpdate, ContentBlock, ContentChunk, Diff,
    Notice, NoticeSeverity, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionId as AcpSessionId, SessionNotification, SessionUpdate, ToolCall as AcpToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use camino::Utf8PathBuf;
use eonyx_agent::AgentEvent;
use eonyx_core::{CompactionRecord, ToolCall, ToolName};

use crate::approval::CurrentCall;
use crate::files::ClientFs;
use crate::lock;

/// Tool output shown in the client is cut at this many characters (the
/// session file and the model keep all of it).
const SHOWN_OUTPUT_CHARS: usize = 8_000;

/// Answer text is sent at most this often: the deltas in between go as
/// one chunk (a fast stream is hundreds of deltas a second; each message
/// costs the client a parse and a redraw). Any other update, and the end
/// of the turn, sends what is pending first.
const TEXT_EVERY: Duration = Duration::from_millis(25);

/// What the client can show besides the standard updates.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shows {
    /// `session.compaction`: compaction updates instead of a text line.
    pub compaction: bool,
    /// `session.notices`: notices and warnings as notice updates.
    pub notices: bool,
}

impl Shows {
    pub fn of(client: &ClientCapabilities) -> Self {
        let session = client.session.as_ref();
        Self {
            compaction: session.is_some_and(|s| s.compaction.is_some()),
            notices: session.is_some_and(|s| s.notices.is_some()),
        }
    }
}

/// One session's stream of updates.
pub struct Updates {
    cx: ConnectionTo<Client>,
    session: AcpSessionId,
    shows: Shows,
    root: Utf8PathBuf,
    current: CurrentCall,
    /// Edits in flight: the file's text before the tool ran.
    before: HashMap<String, (PathBuf, Option<String>)>,
    /// The diff of the call whose result comes next.
    diff: Option<Diff>,
    compactions: u64,
    /// Answer text not sent yet, and when text was last sent.
    text: String,
    /// Reasoning text not sent yet (sent on the same clock as the answer;
    /// at most one of the two is ever pending).
    thought: String,
    text_sent: Option<Instant>,
    /// The client's file system, when the file tools use it: it knows an
    /// edit's before and after.
    files: Option<Arc<ClientFs>>,
}

impl Updates {
    pub fn new(
        cx: ConnectionTo<Client>,
        session: AcpSessionId,
        shows: Shows,
        root: Utf8PathBuf,
        current: CurrentCall,
    ) -> Self {
        Self {
            cx,
            session,
            shows,
            root,
            current,
            before: HashMap::new(),
            diff: None,
            compactions: 0,
            text: String::new(),
            thought: String::new(),
            text_sent: None,
            files: None,
        }
    }

    /// Edits go through the client's file system.
    pub fn with_files(mut self, files: Option<Arc<ClientFs>>) -> Self {
        self.files = files;
        self
    }

    pub fn send(&mut self, update: SessionUpdate) {
        self.flush();
        self.send_now(update);
    }

    /// Send the pending answer text or reasoning.
    pub fn flush(&mut self) {
        if !self.thought.is_empty() {
            let thought = std::mem::take(&mut self.thought);
            self.text_sent = Some(Instant::now());
            self.send_now(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                ContentBlock::from(thought),
            )));
        }
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        self.text_sent = Some(Instant::now());
        self.send_now(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text),
        )));
    }

    fn answer_delta(&mut self, delta: &str) {
        if !self.thought.is_empty() {
            self.flush();
        }
        self.text.push_str(delta);
        if self.text_sent.is_none_or(|t| t.elapsed() >= TEXT_EVERY) {
            self.flush();
        }
    }

    /// Reasoning (or its summary) as `agent_thought_chunk` updates, batched
    /// like the answer (docs/acp.md#updates).
    fn thought_delta(&mut self, delta: &str) {
        if !self.text.is_empty() {
            self.flush();
        }
        self.thought.push_str(delta);
        if self.text_sent.is_none_or(|t| t.elapsed() >= TEXT_EVERY) {
            self.flush();
        }
    }

    fn send_now(&self, update: SessionUpdate) {
        // A closed connection drops updates; the turn still completes
        // and is saved.
        let _ = self
            .cx
            .send_notification(SessionNotification::new(self.session.clone(), update));
    }

    /// Text from eonyx (a slash command's output, a compaction line).
    pub fn text(&mut self, text: impl Into<String>) {
        self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text.into()),
        )));
    }

    /// A notice or warning: on stderr, and as a notice update to clients
    /// that announce them.
    fn notice(&mut self, severity: NoticeSeverity, text: String) {
        crate::diag(&text);
        if self.shows.notices {
            self.send(SessionUpdate::Notice(Notice::new(severity, text)));
        }
    }

    /// Show one agent event.
    pub fn event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta(t) => self.answer_delta(&t),
            AgentEvent::ReasoningDelta(t) => self.thought_delta(&t),
            AgentEvent::Plan(plan) => self.send(SessionUpdate::Plan(acp_plan(&plan))),
            AgentEvent::Goal(goal) => self.notice(
                NoticeSeverity::Info,
                format!("goal {}: {}", goal.status.as_str(), goal.text),
            ),
            AgentEvent::GoalContinue {
                turns_used,
                max_turns,
            } => self.notice(
                NoticeSeverity::Info,
                format!("continuing the goal ({turns_used}/{max_turns})"),
            ),
            AgentEvent::ToolCall(call) => self.tool_call(&call),
            AgentEvent::FileChanged(change) => {
                let _ = change;
                self.file_changed();
            }
            AgentEvent::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => self.tool_result(call_id, &output, is_error),
            AgentEvent::CompactionStarted { trigger } => {
                self.compactions += 1;
                if self.shows.compaction {
                    self.send(SessionUpdate::CompactionUpdate(CompactionUpdate::new(
                        self.compaction_id(),
                        CompactionStatus::InProgress,
                    )));
                } else {
                    self.text(format!(
                        "\n[eonyx: compacting the conversation ({})…]\n",
                        trigger.as_str()
                    ));
                }
            }
            AgentEvent::Compacted(record) => self.compacted(&record),
            AgentEvent::Notice(n) => self.notice(NoticeSeverity::Info, n),
            AgentEvent::Warning(w) => self.notice(NoticeSeverity::Warning, w),
            AgentEvent::MemoryChanged { action, entry } => self.notice(
                NoticeSeverity::Info,
                format!(
                    "memory {action}: [{}] {}",
                    entry.id.as_deref().unwrap_or("?"),
                    entry.text
                ),
            ),
            AgentEvent::Debug(d) => {
                if debugging() {
                    crate::diag(&d);
                }
            }
            AgentEvent::TaskStarted {
                call_id,
                session,
                profile,
                description,
            } => self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::InProgress)
                    .title(format!("Task ({profile}): {description} [{session}]")),
            ))),
            // A hook that blocked, denied or stopped something is worth a
            // line in the editor, as in the REPL (docs/hooks.md#answers).
            AgentEvent::Hook {
                event,
                command,
                decision: Some(decision @ ("block" | "deny" | "stop")),
                reason,
                ..
            } => self.notice(
                NoticeSeverity::Info,
                format!(
                    "{event} hook `{command}` {decision}: {}",
                    reason.unwrap_or_default()
                ),
            ),
            AgentEvent::Hook { .. } => {}
            // A job's start and exit update the `shell` call that started
            // it (docs/tools.md#jobs).
            AgentEvent::JobStarted {
                id,
                command,
                log,
                call_id: Some(call_id),
            } => self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id,
                ToolCallUpdateFields::new()
                    .title(format!("Job {id}: {command} (running; log {log})")),
            ))),
            AgentEvent::JobExited {
                id,
                command,
                status,
                secs,
                call_id: Some(call_id),
            } => self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id,
                ToolCallUpdateFields::new()
                    .title(format!("Job {id}: {command} ({status} after {secs} s)")),
            ))),
            // A task's child works inside the task's tool call; its own
            // steps are not shown as calls of this session.
            AgentEvent::Task { .. }
            | AgentEvent::TaskCompleted { .. }
            | AgentEvent::StepStarted { .. }
            | AgentEvent::StepUsage(_)
            | AgentEvent::SummaryDraft(_)
            | AgentEvent::JobStarted { call_id: None, .. }
            | AgentEvent::JobExited { call_id: None, .. }
            | AgentEvent::Tool(_) => {}
        }
    }

    fn compaction_id(&self) -> String {
        format!("compaction-{}", self.compactions)
    }

    /// A compaction was saved: the protocol's update to clients that
    /// announce it, else a line of text.
    pub fn compacted(&mut self, record: &CompactionRecord) {
        if self.shows.compaction {
            if self.compactions == 0 {
                self.compactions = 1;
            }
            let update = CompactionUpdate::new(self.compaction_id(), CompactionStatus::Completed)
                .summary(Some(vec![ContentBlock::from(record.summary.clone())]));
            self.send(SessionUpdate::CompactionUpdate(update));
        } else {
            self.text(compaction_line(record));
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        *lock(&self.current) = Some(call.id.clone());
        let shown = describe(call, &self.root);
        if let Some(path) = &shown.edited {
            let before = match self.files {
                Some(_) => None,
                None => std::fs::read_to_string(path).ok(),
            };
            self.before.insert(call.id.clone(), (path.clone(), before));
        }
        let update = AcpToolCall::new(call.id.clone(), shown.title)
            .kind(shown.kind)
            .status(ToolCallStatus::InProgress)
            .locations(shown.locations)
            .raw_input(call.arguments.clone());
        self.send(SessionUpdate::ToolCall(update));
    }

    /// `write_file` / `edit_file` changed the file of the call in
    /// progress: its diff goes with the result.
    fn file_changed(&mut self) {
        let Some(id) = lock(&self.current).clone() else {
            return;
        };
        let Some((path, before)) = self.before.remove(&id) else {
            return;
        };
        let (before, after) = match self.files.as_ref().and_then(|f| f.take_change(&path)) {
            Some(change) => change,
            None => (before, std::fs::read_to_string(&path).unwrap_or_default()),
        };
        self.diff = Some(Diff::new(path, after).old_text(before));
    }

    fn tool_result(&mut self, call_id: String, output: &str, is_error: bool) {
        self.before.remove(&call_id);
        let mut content = Vec::new();
        if let Some(diff) = self.diff.take() {
            content.push(ToolCallContent::Diff(diff));
        }
        content.push(ToolCallContent::from(eonyx_core::text::ellipsize(
            output,
            SHOWN_OUTPUT_CHARS,
        )));
        let status = if is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new().status(status).content(content),
        )));
        *lock(&self.current) = None;
    }
}

/// `EONYX_DEBUG` is set (read once: debug events can come per step).
fn debugging() -> bool {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("EONYX_DEBUG").is_some())
}

/// A compaction as one line, for clients without compaction updates.
pub fn compaction_line(record: &CompactionRecord) -> String {
    format!(
        "\n[eonyx: conversation compacted ({}): ~{} → ~{} tokens; the summary and recent messages go on]\n",
        record.trigger.as_str(),
        record.tokens_before,
        record.tokens_after
    )
}

/// How a tool call is shown.
pub struct Shown {
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<ToolCallLocation>,
    /// The file `write_file` / `edit_file` changes.
    pub edited: Option<PathBuf>,
}

/// Title, kind and locations of a call (docs/acp.md#updates).
pub fn describe(call: &ToolCall, root: &Utf8PathBuf) -> Shown {
    let arg = |k: &str| call.arguments.get(k).and_then(|v| v.as_str());
    let path = arg("path").map(|p| {
        let p = Utf8PathBuf::from(p);
        if p.is_absolute() {
            p.into_std_path_buf()
        } else {
            root.join(p).into_std_path_buf()
        }
    });
    let line = call
        .arguments
        .get("offset")
        .and_then(serde_json::Value::as_u64)
        .and_then(|l| u32::try_from(l).ok());
    let location = |p: &Option<PathBuf>| -> Vec<ToolCallLocation> {
        p.iter()
            .map(|p| ToolCallLocation::new(p.clone()).line(line))
            .collect()
    };
    let shown_path = arg("path").unwrap_or(".").to_owned();
    // Hidden characters and newlines escaped: a title cannot rewrite what
    // the client shows.
    let one_line =
        |s: &str| eonyx_core::text::ellipsize(&eonyx_core::text::escape_controls(s, true), 120);
    let (title, kind) = match ToolName::parse(&call.name) {
        Some(ToolName::ReadFile) => (format!("Read {shown_path}"), ToolKind::Read),
        Some(ToolName::ListDir) => (format!("List {shown_path}"), ToolKind::Read),
        Some(ToolName::Grep) => (
            format!(
                "Grep {} in {shown_path}",
                one_line(arg("pattern").unwrap_or(""))
            ),
            ToolKind::Search,
        ),
        Some(ToolName::Shell) => (
            one_line(arg("command").unwrap_or("shell")),
            ToolKind::Execute,
        ),
        Some(ToolName::WriteFile) => (format!("Write {shown_path}"), ToolKind::Edit),
        Some(ToolName::EditFile) => (format!("Edit {shown_path}"), ToolKind::Edit),
        Some(ToolName::Recall) => (
            format!("Recall {}", one_line(arg("query").unwrap_or(""))),
            ToolKind::Search,
        ),
        Some(ToolName::Skill) => (
            format!("Skill {}", arg("name").unwrap_or("")),
            ToolKind::Read,
        ),
        Some(ToolName::WebFetch) => (
            format!("Fetch {}", one_line(arg("url").unwrap_or(""))),
            ToolKind::Fetch,
        ),
        Some(ToolName::Memory) => ("Memory".to_owned(), ToolKind::Think),
        Some(ToolName::Task) => (
            format!("Task: {}", one_line(arg("description").unwrap_or(""))),
            ToolKind::Think,
        ),
        Some(_) | None => (call.name.clone(), ToolKind::Other),
    };
    let edited = matches!(
        ToolName::parse(&call.name),
        Some(ToolName::WriteFile | ToolName::EditFile)
    )
    .then(|| path.clone())
    .flatten();
    let locations = match ToolName::parse(&call.name) {
        Some(
            ToolName::ReadFile
            | ToolName::ListDir
            | ToolName::Grep
            | ToolName::WriteFile
            | ToolName::EditFile,
        ) => location(&path),
        _ => Vec::new(),
    };
    Shown {
        title,
        kind,
        locations,
        edited,
    }
}

/// The model's plan as ACP's: the whole list each time, every entry of the
/// same (medium) priority since eonyx's plan has none.
pub fn acp_plan(plan: &eonyx_core::plan::WorkPlan) -> Plan {
    use eonyx_core::plan::StepStatus;
    Plan::new(
        plan.steps
            .iter()
            .map(|s| {
                let status = match s.status {
                    StepStatus::Pending => PlanEntryStatus::Pending,
                    StepStatus::InProgress => PlanEntryStatus::InProgress,
                    StepStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(s.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}
