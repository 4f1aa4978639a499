//! The lines of a session file (docs/session-format.md#lines). Every line is one JSON object with a
//! `"type"`; readers skip types they do not know.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::goal::{GoalRecord, PinnedGoal};
use crate::id::SessionId;
use crate::message::Message;
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
pub struct MessageRecord {
    /// 1-based, strictly increasing within a session; shared with
    /// compaction records.
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub message: Message,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionTrigger {
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// summary (README, section "Skills").
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
}

impl CompactionRecord {
    /// What the summary section starts with: the pinned goal and plan
    /// (empty when there is neither).
    pub fn pinned_section(&self) -> String {
        crate::goal::pinned_section(self.goal.as_ref(), self.plan.as_ref())
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
                        | "summary_draft" | "goal"),
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
        fn typed<T: serde::de::DeserializeOwned>(line: &[u8]) -> Option<T> {
            serde_json::from_slice(line).ok()
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
mod tests {
    use super::*;
    use crate::message::{Role, ToolCall, Usage};

    #[test]
    fn message_line_matches_spec_shape() {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path":"a.txt"}),
        });
        m.usage = Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: 0,
            reasoning_tokens: 0,
            cache_write_tokens: 0,
        });
        let r = Record::Message(MessageRecord {
            seq: 3,
            ts: "2026-07-05T09:15:00Z".into(),
            message: m,
        });
        let line = r.to_line();
        assert_eq!(
            line,
            r#"{"type":"message","seq":3,"ts":"2026-07-05T09:15:00Z","role":"assistant","content":"","tool_calls":[{"id":"c1","name":"read_file","arguments":{"path":"a.txt"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"cached_tokens":0}}"#
        );
        match Record::parse_line(line.as_bytes()).unwrap() {
            ParsedLine::Record(r) => match *r {
                Record::Message(m) => assert_eq!(m.message.role, Role::Assistant),
                _ => panic!("wrong record"),
            },
            ParsedLine::Unknown(_) => panic!("unknown"),
        }
    }

    #[test]
    fn draft_and_ahead_compaction_lines_match_the_documented_shape() {
        let d = Record::SummaryDraft(SummaryDraftRecord {
            seq: 40,
            ts: "2026-07-05T10:59:00Z".into(),
            summary: "…".into(),
            first_kept_seq: 37,
            base_seq: Some(12),
            facts: None,
            mode: Some(CompactionMode::SharedPrefix),
            tokens_before: 78000,
            tokens_after: 11000,
            tokens: 900,
        });
        let line = d.to_line();
        assert_eq!(
            line,
            r#"{"type":"summary_draft","seq":40,"ts":"2026-07-05T10:59:00Z","summary":"…","first_kept_seq":37,"base_seq":12,"mode":"shared-prefix","tokens_before":78000,"tokens_after":11000,"tokens":900}"#
        );
        assert!(matches!(
            Record::parse_line(line.as_bytes()).unwrap(),
            ParsedLine::Record(r) if *r == d
        ));
        // A broken draft is a bad line, not an unknown type.
        assert!(Record::parse_line(br#"{"type":"summary_draft","seq":1}"#).is_err());
        let c = Record::Compaction(CompactionRecord {
            seq: 42,
            ts: "2026-07-05T11:00:00Z".into(),
            summary: "…".into(),
            first_kept_seq: 37,
            trigger: CompactionTrigger::Auto,
            tokens_before: 91000,
            tokens_after: 12000,
            mid_turn: false,
            focus: None,
            facts: None,
            skills: Vec::new(),
            mode: Some(CompactionMode::Ahead),
            draft_seq: Some(40),
            goal: None,
            plan: None,
        });
        assert_eq!(
            c.to_line(),
            r#"{"type":"compaction","seq":42,"ts":"2026-07-05T11:00:00Z","summary":"…","first_kept_seq":37,"trigger":"auto","tokens_before":91000,"tokens_after":12000,"mode":"ahead","draft_seq":40}"#
        );
    }

    #[test]
    fn child_headers_carry_parent_call_and_profile_and_old_headers_still_read() {
        let old = r#"{"type":"session","version":1,"id":"20260705T091500-1a2b3c4d","title":"1","created":"2026-07-05T09:15:00Z","cwd":"/p","project":"/p"}"#;
        let ParsedLine::Record(r) = Record::parse_line(old.as_bytes()).unwrap() else {
            panic!("unknown")
        };
        let Record::Session(mut h) = *r else {
            panic!("not a header")
        };
        assert!(!h.is_child());
        assert_eq!(
            Record::Session(h.clone()).to_line(),
            old,
            "no new fields written"
        );
        h.title = "1.1".into();
        h.parent = Some(SessionId::parse("20260705T091400-00000000").unwrap());
        h.parent_call = Some("call_1".into());
        h.profile = Some("explore".into());
        let line = Record::Session(h.clone()).to_line();
        assert!(
            line.ends_with(
                r#""parent":"20260705T091400-00000000","parent_call":"call_1","profile":"explore"}"#
            ),
            "{line}"
        );
        match Record::parse_line(line.as_bytes()).unwrap() {
            ParsedLine::Record(r) => assert_eq!(*r, Record::Session(h)),
            ParsedLine::Unknown(t) => panic!("unknown {t}"),
        }
    }

    #[test]
    fn model_record_line_matches_spec_shape() {
        let r = Record::Model(ModelRecord {
            key: "big".into(),
            reasoning_effort: Some(crate::config::ReasoningEffort::High),
            ts: "2026-07-05T10:00:00Z".into(),
        });
        let line = r.to_line();
        assert_eq!(
            line,
            r#"{"type":"model","key":"big","reasoning_effort":"high","ts":"2026-07-05T10:00:00Z"}"#
        );
        assert_eq!(r.seq(), None);
        match Record::parse_line(line.as_bytes()).unwrap() {
            ParsedLine::Record(back) => assert_eq!(*back, r),
            ParsedLine::Unknown(t) => panic!("unknown {t}"),
        }
        // No effort: the field is left out and reads back as none.
        let plain = r#"{"type":"model","key":"small","ts":"2026-07-05T10:00:00Z"}"#;
        let ParsedLine::Record(back) = Record::parse_line(plain.as_bytes()).unwrap() else {
            panic!("unknown")
        };
        assert_eq!(back.to_line(), plain);
        // A broken one is a bad line, not an unknown type.
        assert!(Record::parse_line(br#"{"type":"model","ts":"t"}"#).is_err());
    }

    #[test]
    fn unknown_types_and_extra_fields_are_tolerated() {
        assert!(matches!(
            Record::parse_line(br#"{"type":"future","x":1}"#).unwrap(),
            ParsedLine::Unknown(t) if t == "future"
        ));
        assert!(matches!(
            Record::parse_line(br#"{"type":"title","title":"a","ts":"t","extra":1}"#).unwrap(),
            ParsedLine::Record(_)
        ));
        assert!(Record::parse_line(b"{\"type\":\"message\"").is_err());
        assert!(Record::parse_line(b"[1,2]").is_err());
        assert!(Record::parse_line(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn the_current_plan_is_the_last_call_that_succeeded() {
        use crate::plan::WorkPlan;
        let rec = |seq: u64, message: Message| MessageRecord {
            seq,
            ts: String::new(),
            message,
        };
        let call = |id: &str, args: Value| {
            let mut m = Message::assistant("");
            m.tool_calls.push(ToolCall {
                id: id.into(),
                name: "plan".into(),
                arguments: args,
            });
            m
        };
        let one = serde_json::json!({"steps": [{"step": "one", "status": "pending"}]});
        let two = serde_json::json!({"steps": [{"step": "two", "status": "pending"}]});
        let mut failed = Message::tool_result("c2", "plan not changed");
        failed.is_error = true;
        let records = vec![
            rec(1, Message::user("go")),
            rec(2, call("c1", one)),
            rec(3, Message::tool_result("c1", "ok")),
            rec(4, call("c2", two.clone())),
            rec(5, failed),
        ];
        let p = current_plan(&records, None).unwrap();
        assert_eq!(p.steps[0].step, "one");
        // No call at all: the pinned plan.
        let pinned = WorkPlan::from_args(&two).unwrap();
        assert_eq!(current_plan(&records[..1], Some(&pinned)), Some(pinned));
        // A call without a result does not count.
        assert_eq!(current_plan(&records[..2], None), None);
    }

    #[test]
    fn a_line_parses_the_same_whether_type_comes_first_or_not() {
        let first = br#"{"type":"message","seq":3,"ts":"t","role":"user","content":"hi"}"#;
        let later = br#"{"seq":3,"ts":"t","role":"user","type":"message","content":"hi"}"#;
        let (Ok(ParsedLine::Record(a)), Ok(ParsedLine::Record(b))) =
            (Record::parse_line(first), Record::parse_line(later))
        else {
            panic!("both lines are message records");
        };
        assert_eq!(a, b);
        assert!(matches!(*a, Record::Message(ref m) if m.seq == 3));
        // A broken record with its type first still says what is wrong.
        let broken = br#"{"type":"message","seq":"x"}"#;
        let err = Record::parse_line(broken).unwrap_err().to_string();
        assert!(err.contains("malformed message record"), "{err}");
        // An unknown type first is still unknown, not an error.
        assert!(matches!(
            Record::parse_line(br#"{"type":"future","x":1}"#),
            Ok(ParsedLine::Unknown(t)) if t == "future"
        ));
    }
}
