//! The lines of a session file (docs/session-format.md#lines). Every line is one JSON object with a
//! `"type"`; readers skip types they do not know.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::goal::{GoalRecord, PinnedGoal};
use crate::id::SessionId;
use crate::message::{Content, Message, Reasoning, Role, ToolCall, Undo, Usage};
use crate::plan::WorkPlan;

/// Current session file format version.
pub const FORMAT_VERSION: u32 = 1;

/// First line of every session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    pub version: u32,
    pub id: SessionId,
    pub title: String,
    /// RFC 3339 UTC.
    pub created: String,
    /// Working directory the session was started in.
    pub cwd: String,
    /// Project root the session belongs to.
    pub project: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Set on a fork (docs/session-format.md#forks): the session and the
    /// `seq` it was copied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// For a child session (a `task`, docs/session-format.md#child-sessions):
    /// the session that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<SessionId>,
    /// For a child session: the id of the parent's `task` tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call: Option<String>,
    /// For a child session: the profile it runs with (`explore`, `general`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl SessionHeader {
    /// Whether this is a child session (started by a `task` call).
    pub fn is_child(&self) -> bool {
        self.parent.is_some()
    }

    /// The id every request of this session carries as its prompt-cache
    /// key: the first session of its chain of forks, so that a fork shares
    /// the original's prompt cache (docs/session-format.md#forks).
    pub fn cache_key(&self) -> &SessionId {
        match &self.forked_from {
            Some(f) => f.root.as_ref().unwrap_or(&f.id),
            None => &self.id,
        }
    }
}

/// Where a fork was copied from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The session forked.
    pub id: SessionId,
    /// The last record copied: the fork's history is that session's as of
    /// this `seq`.
    pub seq: u64,
    /// The first session of the chain when `id` was itself a fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<SessionId>,
}

/// A conversation message with its position and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "MessageLine")]
pub struct MessageRecord {
    /// 1-based, strictly increasing within a session; shared with
    /// compaction records.
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub message: Message,
}

/// A message line's fields read in one pass: `#[serde(flatten)]` (kept for
/// writing, where it costs nothing) would buffer every line into serde's
/// generic content before reading the message from it. The fields and
/// their defaults are [`Message`]'s; the `From` below names every field,
/// so a field added to `Message` without one here does not compile.
#[derive(Deserialize)]
struct MessageLine {
    seq: u64,
    ts: String,
    role: Role,
    #[serde(default)]
    content: Content,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    reasoning: Vec<Reasoning>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    undo: Option<Box<Undo>>,
    #[serde(default)]
    blocked: Option<String>,
}

impl From<MessageLine> for MessageRecord {
    fn from(l: MessageLine) -> Self {
        MessageRecord {
            seq: l.seq,
            ts: l.ts,
            message: Message {
                role: l.role,
                content: l.content,
                tool_calls: l.tool_calls,
                tool_call_id: l.tool_call_id,
                usage: l.usage,
                reasoning: l.reasoning,
                is_error: l.is_error,
                undo: l.undo,
                blocked: l.blocked,
            },
        }
    }
}

/// A rename: appended, never rewriting the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitleRecord {
    pub title: String,
    pub ts: String,
}

/// A model or effort switch (`/model`, docs/session-format.md#model-records):
/// appended like a rename; the last one holds for the rest of the session
/// and for whoever continues it (`eonyx run -c`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The config key of the model switched to (`models.<key>`).
    pub key: String,
    /// The effort chosen with it; absent: the model's configured
    /// `reasoning_effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<crate::config::ReasoningEffort>,
    pub ts: String,
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionTrigger {
    #[default]
    Auto,
    Manual,
    Overflow,
}

impl CompactionTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionTrigger::Auto => "auto",
            CompactionTrigger::Manual => "manual",
            CompactionTrigger::Overflow => "overflow",
        }
    }
}

/// A compaction: everything before `first_kept_seq` is represented by
/// `summary` in requests from now on. The messages stay in the file.
/// The default is an empty one (a record being built).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    pub seq: u64,
    pub ts: String,
    pub summary: String,
    pub first_kept_seq: u64,
    pub trigger: CompactionTrigger,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Set when the boundary lies inside a user turn (a long tool loop).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mid_turn: bool,
    /// Focus text given to `/compact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// Mechanically gathered exact facts (paths, commands); structure owned
    /// by the compact crate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Value>,
    /// Names of the skills loaded (with the `skill` tool) before this
    /// boundary, this compaction's span and the earlier ones, in the order
    /// they were first loaded; their bodies are re-attached after the
    /// summary (docs/skills.md, section "Skills").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// How the summary was asked for (absent in records written before
    /// cache-aware compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CompactionMode>,
    /// With `mode: "ahead"`: the `seq` of the [`SummaryDraftRecord`] the
    /// summary was taken from (docs/session-format.md#summary-draft-records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_seq: Option<u64>,
    /// The goal as it stood when the compaction was made (not cleared),
    /// pinned verbatim at the top of the summary section
    /// (docs/compaction.md#what-is-pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<PinnedGoal>,
    /// The plan as it stood when the compaction was made, pinned likewise;
    /// the current plan while no later `plan` call replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<WorkPlan>,
    /// The background jobs running when the compaction was made, pinned
    /// likewise (docs/tools.md#jobs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<crate::job::PinnedJob>,
    /// Set when the provider wrote the compacted part itself
    /// (docs/compaction.md#native-compaction): its items replace the
    /// history before `first_kept_seq` in every later request of that
    /// model, byte for byte; `summary` then holds what a reader is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Box<crate::native::NativeCompaction>>,
    /// The compaction call's own usage (native compactions), counted in
    /// the session's tokens and cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::message::Usage>,
    /// The user's pins in force when the compaction was made, pinned
    /// likewise (docs/compaction.md#pins); with the `pin` records after it,
    /// the pins in force.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<crate::pin::Pin>,
    /// What the user said before `first_kept_seq`, rebuilt from the
    /// session file at this compaction (docs/compaction.md#what-the-user-said):
    /// sent after the summary and the exact facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_words: Option<Box<crate::said::UserWords>>,
}

impl CompactionRecord {
    /// What the summary section starts with: the pinned goal, plan,
    /// running jobs and the user's pins (empty when there is none of them).
    pub fn pinned_section(&self) -> String {
        let mut s = crate::goal::pinned_section(self.goal.as_ref(), self.plan.as_ref());
        for part in [
            crate::job::pinned_jobs(&self.jobs),
            crate::pin::pinned_pins(&self.pins),
        ] {
            if part.is_empty() {
                continue;
            }
            if !s.is_empty() {
                s.push_str("\n\n");
            }
            s.push_str(&part);
        }
        s
    }

    /// The `## What the user said` section (empty when there is none).
    pub fn user_words_text(&self) -> &str {
        self.user_words.as_ref().map_or("", |u| u.text.as_str())
    }
}

/// The plan of a run of records (oldest first): the last `plan` call whose
/// result is not an error; `pinned` (the compaction record's) when there
/// is none among them. A call whose result is missing (an interrupted
/// step) does not count.
pub fn current_plan(records: &[MessageRecord], pinned: Option<&WorkPlan>) -> Option<WorkPlan> {
    // Tool messages come after their call: walk back collecting the ids of
    // successful results until a matching call.
    let mut ok_results: Vec<&str> = Vec::new();
    for r in records.iter().rev() {
        let m = &r.message;
        match m.role {
            crate::message::Role::Tool if !m.is_error => {
                if let Some(id) = m.tool_call_id.as_deref() {
                    ok_results.push(id);
                }
            }
            crate::message::Role::Assistant => {
                for call in m.tool_calls.iter().rev() {
                    if crate::tool::ToolName::parse(&call.name) == Some(crate::tool::ToolName::Plan)
                        && ok_results.contains(&call.id.as_str())
                        && let Ok(p) = WorkPlan::from_args(&call.arguments)
                    {
                        return Some(p);
                    }
                }
            }
            _ => {}
        }
    }
    pinned.cloned()
}

/// A summary written ahead of time, in the background, while eonyx was
/// idle (docs/compaction.md#ahead-of-time-summaries). It changes nothing by
/// itself: a later compaction may apply it (a [`CompactionRecord`] with
/// `mode: "ahead"` and `draft_seq`) when it still builds on the latest
/// compaction. Versions that do not know the type skip it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryDraftRecord {
    pub seq: u64,
    pub ts: String,
    /// The summary as a compaction record would hold it: the model's text
    /// plus the exact-facts section.
    pub summary: String,
    /// The boundary the summary was written for: it replaces every
    /// message with a smaller `seq`.
    pub first_kept_seq: u64,
    /// The `seq` of the compaction record the summary builds on (merges);
    /// absent when the session had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_seq: Option<u64>,
    /// The exact facts of the summarized span merged with the base's, as
    /// in [`CompactionRecord::facts`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Value>,
    /// Which summarizer request wrote it (`shared-prefix` or `transcript`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CompactionMode>,
    /// The estimated request when the draft was started.
    pub tokens_before: u64,
    /// The estimated request had the draft been applied at once.
    pub tokens_after: u64,
    /// The summary's size in tokens (the summarizer's count when it
    /// reported one, else the estimate).
    pub tokens: u64,
}

/// How the summarizer was asked: the conversation as it would be sent next
/// plus one instruction (`shared-prefix`, reuses the prompt cache), or the
/// standalone transcript request (`transcript`, the fallback).
/// `ahead`: the summary is a [`SummaryDraftRecord`] written earlier in the
/// background; no summarizer was called at the compaction itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionMode {
    SharedPrefix,
    Transcript,
    Ahead,
}

impl CompactionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionMode::SharedPrefix => "shared-prefix",
            CompactionMode::Transcript => "transcript",
            CompactionMode::Ahead => "ahead",
        }
    }
}

/// A rewind (docs/session-format.md#rewind-records): from this record on,
/// the model-facing view is the view as of `to_seq` (the view right after
/// the record with that `seq` was written). Nothing is removed from the
/// file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindRecord {
    pub seq: u64,
    pub ts: String,
    /// 0 rewinds to before the first message. A record whose `to_seq` is
    /// not below its own `seq` changes nothing.
    pub to_seq: u64,
}

impl RewindRecord {
    /// Whether this record changes the view (its target lies before it).
    pub fn is_effective(&self) -> bool {
        self.to_seq < self.seq
    }
}

/// One parsed line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Record {
    Session(SessionHeader),
    Message(MessageRecord),
    Title(TitleRecord),
    Model(ModelRecord),
    Compaction(CompactionRecord),
    #[serde(rename = "summary_draft")]
    SummaryDraft(SummaryDraftRecord),
    Rewind(RewindRecord),
    Goal(GoalRecord),
    Job(crate::job::JobRecord),
    Pin(crate::pin::PinRecord),
}

impl Record {
    /// The record's `seq`, for the types that have one (message,
    /// compaction, rewind, summary draft: they share one sequence).
    pub fn seq(&self) -> Option<u64> {
        match self {
            Record::Message(m) => Some(m.seq),
            Record::Compaction(c) => Some(c.seq),
            Record::Rewind(r) => Some(r.seq),
            Record::SummaryDraft(d) => Some(d.seq),
            Record::Goal(g) => Some(g.seq),
            Record::Job(j) => Some(j.seq),
            Record::Pin(p) => Some(p.seq),
            Record::Session(_) | Record::Title(_) | Record::Model(_) => None,
        }
    }
}

/// What parsing one line produced.
#[derive(Debug)]
pub enum ParsedLine {
    Record(Box<Record>),
    /// Valid JSON object with a `type` this version does not know.
    Unknown(String),
}

#[derive(Debug, thiserror::Error)]
#[error("not a session record: {0}")]
pub struct RecordError(String);

impl Record {
    /// Parse one line. Unknown `type`s are reported as [`ParsedLine::Unknown`];
    /// anything that is not a JSON object with a known, well-formed shape is
    /// an error.
    pub fn parse_line(line: &[u8]) -> Result<ParsedLine, RecordError> {
        if let Some(r) = Self::parse_tagged_first(line) {
            return Ok(ParsedLine::Record(Box::new(r)));
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(r) => Ok(ParsedLine::Record(Box::new(r))),
            Err(e) => {
                // Distinguish "unknown type" from "broken line".
                let v: Value =
                    serde_json::from_slice(line).map_err(|_| RecordError(e.to_string()))?;
                match v.get("type").and_then(Value::as_str) {
                    Some(
                        t @ ("session" | "message" | "title" | "model" | "compaction" | "rewind"
                        | "summary_draft" | "goal" | "job" | "pin"),
                    ) => Err(RecordError(format!("malformed {t} record: {e}"))),
                    Some(t) => Ok(ParsedLine::Unknown(t.to_owned())),
                    None => Err(RecordError("missing \"type\"".to_owned())),
                }
            }
        }
    }

    /// The fast path for lines as eonyx writes them, `"type"` first: the
    /// record's own struct parsed straight from the line (the enum's
    /// internal tag would buffer every line into serde's generic content
    /// first). `None` sends the line down the general path, which also
    /// says what is wrong with a broken one.
    fn parse_tagged_first(line: &[u8]) -> Option<Record> {
        const PREFIX: &[u8] = br#"{"type":""#;
        let rest = line.strip_prefix(PREFIX)?;
        let end = rest.iter().position(|&b| b == b'"')?;
        // Checked as UTF-8 once, not string by string.
        let line = std::str::from_utf8(line).ok()?;
        fn typed<T: serde::de::DeserializeOwned>(line: &str) -> Option<T> {
            serde_json::from_str(line).ok()
        }
        match &rest[..end] {
            b"message" => typed(line).map(Record::Message),
            b"compaction" => typed(line).map(Record::Compaction),
            b"session" => typed(line).map(Record::Session),
            b"title" => typed(line).map(Record::Title),
            b"model" => typed(line).map(Record::Model),
            b"summary_draft" => typed(line).map(Record::SummaryDraft),
            b"rewind" => typed(line).map(Record::Rewind),
            b"goal" => typed(line).map(Record::Goal),
            b"job" => typed(line).map(Record::Job),
            b"pin" => typed(line).map(Record::Pin),
            _ => None,
        }
    }

    /// The line for this record, without the trailing newline.
    pub fn to_line(&self) -> String {
        // Serializing these types cannot fail: no maps with non-string keys,
        // no non-finite floats are constructed by eonyx.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                r#"{{"type":"error","error":{}}}"#,
                Value::String(e.to_string())
            )
        })
    }
}

#[cfg(test)]
mod tests;
