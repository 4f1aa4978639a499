//! The model-facing history of a session, maintained incrementally.

use std::collections::HashMap;

use eonyx_core::plan::WorkPlan;
use eonyx_core::{
    CompactionConfig, CompactionRecord, Content, Message, MessageRecord, NativeCompaction, Part,
    Role,
};
use serde_json::Value;

use crate::estimate::RequestSize;
use crate::facts::Facts;

/// The first line of the message eonyx adds after a native compaction's
/// items: what it pins (docs/compaction.md#native-compaction).
pub const NATIVE_PINNED_HEADING: &str = "[Kept by eonyx after the compacted part: the current goal, plan, running jobs and pins, and what the user said, verbatim.]";

/// Tool arguments longer than this are shortened in collapse stubs.
const STUB_ARGS_CHARS: usize = 300;

/// What a [`ContextView::push`] did besides appending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PushOutcome {
    /// Tool results collapsed by a collapse pass this push triggered (0 =
    /// no pass: the request prefix is unchanged).
    pub collapsed: usize,
}

impl PushOutcome {
    /// Whether a collapse pass ran (the provider's prompt cache breaks once).
    pub fn collapse_pass(&self) -> bool {
        self.collapsed > 0
    }
}

#[derive(Debug, Clone)]
struct Slot {
    /// What is sent when it differs from the record (truncated, collapsed,
    /// usage stripped).
    over: Option<Message>,
    size: RequestSize,
    /// False for a tool result whose call is not in the view (never sent).
    sent: bool,
}

/// The messages a model receives for a session: the retained records after
/// the last compaction, tool output over the cap truncated visibly, old
/// tool results collapsed, plus the running summary.
///
/// Invariants: the collapsed set is a function of the sequence of records
/// pushed since the last compaction (replaying gives the same bytes);
/// between collapse passes and compactions [`ContextView::messages`] only
/// grows at the end; a tool result is sent only together with its call.
#[derive(Debug, Clone)]
pub struct ContextView {
    prune: bool,
    budget: u64,
    keep_recent: usize,
    cap_bytes: u64,
    summary: Option<String>,
    /// The provider's items when the last compaction was native
    /// (docs/compaction.md#native-compaction): sent first, the summary is
    /// then not in the system prompt.
    native: Option<NativeCompaction>,
    facts: Option<Value>,
    /// The goal and plan the last compaction pinned, rendered (empty when
    /// none; docs/compaction.md#what-is-pinned).
    pinned: String,
    /// The plan the last compaction pinned.
    pinned_plan: Option<WorkPlan>,
    /// The `## What the user said` section of the last compaction (empty
    /// when none; docs/compaction.md#what-the-user-said).
    said: Option<eonyx_core::said::UserWords>,
    first_kept_seq: u64,
    lead: Option<Message>,
    records: Vec<MessageRecord>,
    slots: Vec<Slot>,
    size: RequestSize,
    /// Tool call id → (tool name, arguments for a stub).
    calls: HashMap<String, (String, String)>,
    /// Indices (into `records`) of sent tool results, oldest first.
    tools: Vec<usize>,
    /// `tools[..collapsed]` are collapsed.
    collapsed: usize,
    /// `tools[..counted]` are outside the newest `keep_recent` results.
    counted: usize,
    /// Characters (as sent) of `tools[collapsed..counted]`.
    collapsible_chars: u64,
}

impl ContextView {
    /// An empty view (new session). `tool_output_cap_bytes` = 0: no cap.
    pub fn new(cfg: &CompactionConfig, tool_output_cap_bytes: u64) -> Self {
        Self {
            prune: cfg.prune,
            budget: cfg.tool_result_budget_chars,
            keep_recent: cfg.keep_recent_results as usize,
            cap_bytes: tool_output_cap_bytes,
            summary: None,
            native: None,
            facts: None,
            pinned: String::new(),
            pinned_plan: None,
            said: None,
            first_kept_seq: 0,
            lead: None,
            records: Vec::new(),
            slots: Vec::new(),
            size: RequestSize::default(),
            calls: HashMap::new(),
            tools: Vec::new(),
            collapsed: 0,
            counted: 0,
            collapsible_chars: 0,
        }
    }

    /// The view of a resumed session: the last compaction record (if any)
    /// and the message records after it (those before its `first_kept_seq`
    /// are ignored).
    pub fn from_effective(
        cfg: &CompactionConfig,
        tool_output_cap_bytes: u64,
        summary: Option<&CompactionRecord>,
        records: Vec<MessageRecord>,
    ) -> Self {
        let mut v = Self::new(cfg, tool_output_cap_bytes);
        if let Some(rec) = summary {
            v.set_summary(rec);
        }
        for r in records {
            if r.seq >= v.first_kept_seq {
                v.push(r);
            }
        }
        v
    }

    fn set_summary(&mut self, rec: &CompactionRecord) {
        if let Some(native) = &rec.native {
            self.set_native(rec, native);
            return;
        }
        self.native = None;
        self.summary = Some(rec.summary.clone());
        self.facts = rec.facts.clone();
        self.pinned = rec.pinned_section();
        self.pinned_plan = rec.plan.clone();
        self.said = rec.user_words.as_deref().cloned();
        self.first_kept_seq = rec.first_kept_seq;
        self.lead = rec.mid_turn.then(|| {
            let facts = Facts::from_value(rec.facts.as_ref());
            let text = match facts.turn_request {
                Some(req) => format!(
                    "[The conversation was compacted in the middle of this turn; the summary in the system prompt covers its earlier steps. This turn's request was:]\n\n{req}"
                ),
                None => "[The conversation was compacted in the middle of this turn; the summary in the system prompt covers its earlier steps. Continue the task.]".to_owned(),
            };
            Message::user(text)
        });
        self.size = self
            .lead
            .as_ref()
            .map(RequestSize::of_message)
            .unwrap_or_default();
    }

    /// A native compaction: its items go first (counted by their bytes
    /// until the next usage report), then eonyx's pinned section (goal,
    /// plan and whatever else a compaction pins) and what the user said as
    /// its own user message, with the mid-turn note when the boundary lies
    /// inside a turn.
    fn set_native(&mut self, rec: &CompactionRecord, native: &NativeCompaction) {
        self.summary = Some(rec.summary.clone());
        self.native = Some(native.clone());
        self.facts = rec.facts.clone();
        self.pinned = rec.pinned_section();
        self.pinned_plan = rec.plan.clone();
        self.said = rec.user_words.as_deref().cloned();
        self.first_kept_seq = rec.first_kept_seq;
        let mut lead = Vec::new();
        let kept: Vec<&str> = [self.pinned.as_str(), self.said()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        if !kept.is_empty() {
            lead.push(format!("{NATIVE_PINNED_HEADING}\n\n{}", kept.join("\n\n")));
        }
        if rec.mid_turn {
            let facts = Facts::from_value(rec.facts.as_ref());
            lead.push(match facts.turn_request {
                Some(req) => format!(
                    "[The conversation was compacted in the middle of this turn; the compacted part above covers its earlier steps. This turn's request was:]\n\n{req}"
                ),
                None => "[The conversation was compacted in the middle of this turn; the compacted part above covers its earlier steps. Continue the task.]".to_owned(),
            });
        }
        self.lead = (!lead.is_empty()).then(|| Message::user(lead.join("\n\n")));
        let mut size = self
            .lead
            .as_ref()
            .map(RequestSize::of_message)
            .unwrap_or_default();
        size.chars += native.chars();
        self.size = size;
    }

    /// Append a record (user, assistant or tool message). May run a collapse
    /// pass when a tool result pushes the collapsible output over the budget.
    pub fn push(&mut self, rec: MessageRecord) -> PushOutcome {
        let idx = self.records.len();
        let m = &rec.message;
        let mut outcome = PushOutcome::default();
        let tool = if m.role == Role::Tool {
            m.tool_call_id
                .as_ref()
                .and_then(|id| self.calls.get(id))
                .and_then(|(name, _)| eonyx_core::ToolName::parse(name))
        } else {
            None
        };
        let whole = tool.is_some_and(eonyx_core::ToolName::kept_whole);
        let uncut = whole || tool.is_some_and(eonyx_core::ToolName::cuts_own_output);
        let slot = match m.role {
            Role::User => Slot {
                over: None,
                size: RequestSize::of_message(m),
                sent: true,
            },
            Role::Assistant => {
                for c in &m.tool_calls {
                    let args: String = c.arguments_json();
                    let args = eonyx_core::text::ellipsize(&args, STUB_ARGS_CHARS);
                    self.calls.insert(c.id.clone(), (c.name.clone(), args));
                }
                let over = m.usage.is_some().then(|| {
                    let mut o = m.clone();
                    o.usage = None;
                    o
                });
                Slot {
                    over,
                    size: RequestSize::of_message(m),
                    sent: true,
                }
            }
            Role::Tool => {
                let known = m
                    .tool_call_id
                    .as_ref()
                    .is_some_and(|id| self.calls.contains_key(id));
                if known {
                    let over = if uncut {
                        None
                    } else {
                        truncate_visibly(m, self.cap_bytes)
                    };
                    let size = RequestSize::of_message(over.as_ref().unwrap_or(m));
                    Slot {
                        over,
                        size,
                        sent: true,
                    }
                } else {
                    Slot {
                        over: None,
                        size: RequestSize::default(),
                        sent: false,
                    }
                }
            }
        };
        let is_result = m.role == Role::Tool && slot.sent && !whole;
        self.size += slot.size;
        self.slots.push(slot);
        self.records.push(rec);
        if is_result {
            self.tools.push(idx);
            let old = self.tools.len().saturating_sub(self.keep_recent);
            while self.counted < old {
                let i = self.tools[self.counted];
                if self.counted >= self.collapsed {
                    self.collapsible_chars += self.slots[i].size.chars as u64;
                }
                self.counted += 1;
            }
            if self.prune && self.budget > 0 && self.collapsible_chars > self.budget {
                outcome.collapsed = self.collapse_pass();
            }
        }
        outcome
    }

    /// Make room when one long turn is over budget: collapse the oldest
    /// results outside the newest `keep_recent_results` (which stay whole),
    /// beyond what the budget asked for, until `chars` characters were freed
    /// or none are left. Returns how many results were collapsed.
    ///
    /// Unlike budget passes this depends on the trigger, not only on the
    /// history; a resumed session reaches the same state at its first
    /// trigger check.
    pub fn collapse_for_room(&mut self, chars: usize) -> usize {
        if !self.prune {
            return 0;
        }
        let before = self.size.chars;
        let mut n = 0;
        while before.saturating_sub(self.size.chars) < chars && self.collapsed < self.counted {
            self.collapse_one();
            n += 1;
        }
        n
    }

    /// Collapse the oldest counted results until the collapsible output is at
    /// most half the budget.
    fn collapse_pass(&mut self) -> usize {
        let mut n = 0;
        while self.collapsible_chars > self.budget / 2 && self.collapsed < self.counted {
            self.collapse_one();
            n += 1;
        }
        n
    }

    /// Collapse `tools[self.collapsed]`, keeping the running totals.
    fn collapse_one(&mut self) {
        let i = self.tools[self.collapsed];
        let old = self.slots[i].size;
        let stub = self.stub(i);
        let new = RequestSize::of_message(&stub);
        self.size.chars = self.size.chars - old.chars + new.chars;
        self.size.images = self.size.images - old.images + new.images;
        self.collapsible_chars = self.collapsible_chars.saturating_sub(old.chars as u64);
        self.slots[i] = Slot {
            over: Some(stub),
            size: new,
            sent: true,
        };
        self.collapsed += 1;
    }

    fn stub(&self, i: usize) -> Message {
        let m = &self.records[i].message;
        let id = m.tool_call_id.clone().unwrap_or_default();
        let (name, args) = self
            .calls
            .get(&id)
            .cloned()
            .unwrap_or_else(|| ("unknown".to_owned(), "{}".to_owned()));
        let chars = m.content.text_chars();
        let images = m.content.image_count();
        let images = if images > 0 {
            format!(" and {images} image(s)")
        } else {
            String::new()
        };
        Message::tool_result(
            id,
            format!(
                "[tool result collapsed to save context: `{name}` called with {args} returned {chars} characters{images}. The full output is kept in the session; call the tool again if you need it.]"
            ),
        )
    }

    /// The messages sent to the model, in order.
    pub fn messages(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.records.len() + 1);
        if let Some(l) = &self.lead {
            out.push(l.clone());
        }
        for (r, s) in self.records.iter().zip(&self.slots) {
            if s.sent {
                out.push(s.over.clone().unwrap_or_else(|| r.message.clone()));
            }
        }
        out
    }

    /// The provider's items when the last compaction was native.
    pub fn native(&self) -> Option<&NativeCompaction> {
        self.native.as_ref()
    }

    /// The sent messages of the first `n` retained records (the part a
    /// compaction at that boundary replaces), without the lead message.
    pub fn sent_messages(&self, n: usize) -> Vec<Message> {
        self.records
            .iter()
            .zip(&self.slots)
            .take(n)
            .filter(|(_, s)| s.sent)
            .map(|(r, s)| s.over.clone().unwrap_or_else(|| r.message.clone()))
            .collect()
    }

    /// The running summary (model text plus the exact-facts section).
    pub fn summary(&self) -> Option<&str> {
        self.summary.as_deref()
    }

    /// The goal and plan the last compaction pinned, as the summary
    /// section starts with them (empty when none).
    pub fn pinned(&self) -> &str {
        &self.pinned
    }

    /// The `## What the user said` section of the last compaction, as the
    /// summary section ends with it (empty when none).
    pub fn said(&self) -> &str {
        self.said.as_ref().map_or("", |u| u.text.as_str())
    }

    /// The last compaction's `## What the user said` with its counts.
    pub fn user_words(&self) -> Option<&eonyx_core::said::UserWords> {
        self.said.as_ref()
    }

    /// The current plan: the last successful `plan` call among the
    /// retained records, else the one the last compaction pinned
    /// (docs/tools.md#plan).
    pub fn plan(&self) -> Option<WorkPlan> {
        eonyx_core::record::current_plan(&self.records, self.pinned_plan.as_ref())
    }

    /// The `facts` of the last compaction record.
    pub fn facts(&self) -> Option<&Value> {
        self.facts.as_ref()
    }

    /// Size of the messages as sent (not the system prompt or tools). O(1).
    pub fn size(&self) -> RequestSize {
        self.size
    }

    /// The retained records, unmodified (as in the session file).
    pub fn records(&self) -> &[MessageRecord] {
        &self.records
    }

    /// Sequence number of the newest record (or of the last compacted one).
    pub fn last_seq(&self) -> u64 {
        self.records
            .last()
            .map(|r| r.seq)
            .unwrap_or(self.first_kept_seq.saturating_sub(1))
    }

    /// `first_kept_seq` of the last compaction applied (0 = none).
    pub fn first_kept_seq(&self) -> u64 {
        self.first_kept_seq
    }

    /// Number of tool results currently collapsed.
    pub fn collapsed_count(&self) -> usize {
        self.collapsed
    }

    /// Apply a compaction: drop the records before `first_kept_seq`, take
    /// the new summary, and rebuild the collapse state from the kept records
    /// (exactly what [`ContextView::from_effective`] gives on resume).
    pub fn apply(&mut self, rec: &CompactionRecord) {
        let records = std::mem::take(&mut self.records);
        let mut fresh = Self {
            prune: self.prune,
            budget: self.budget,
            keep_recent: self.keep_recent,
            cap_bytes: self.cap_bytes,
            ..Self::new(&CompactionConfig::default(), 0)
        };
        fresh.set_summary(rec);
        for r in records {
            if r.seq >= fresh.first_kept_seq {
                fresh.push(r);
            }
        }
        *self = fresh;
    }

    /// Per-record size as sent (0 for records that are not sent).
    pub(crate) fn sent_size(&self, i: usize) -> RequestSize {
        self.slots
            .get(i)
            .filter(|s| s.sent)
            .map(|s| s.size)
            .unwrap_or_default()
    }
}

/// Tool output over `cap` bytes: keep the head, say how much was cut.
fn truncate_visibly(m: &Message, cap: u64) -> Option<Message> {
    if cap == 0 {
        return None;
    }
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let cut = |text: &str| -> Option<String> {
        if text.len() <= cap {
            return None;
        }
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let removed = text.len() - end;
        Some(format!(
            "{}\n\n[output truncated: {removed} of {} bytes cut (tool output cap {cap} bytes); the full output is kept in the session]",
            &text[..end],
            text.len()
        ))
    };
    let content = match &m.content {
        Content::Text(t) => Content::Text(cut(t)?),
        Content::Parts(parts) => {
            let mut changed = false;
            let parts = parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => match cut(text) {
                        Some(t) => {
                            changed = true;
                            Part::Text { text: t }
                        }
                        None => p.clone(),
                    },
                    other => other.clone(),
                })
                .collect();
            if !changed {
                return None;
            }
            Content::Parts(parts)
        }
    };
    let mut o = m.clone();
    o.content = content;
    o.usage = None;
    Some(o)
}
