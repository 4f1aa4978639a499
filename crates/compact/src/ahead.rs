//! Ahead-of-time summaries (docs/compaction.md#ahead-of-time-summaries):
//! the summary for the boundary as it stands is written in the background
//! while the session is idle ([`write_draft`], an independent future that
//! owns everything it reads), kept as a [`SummaryDraftRecord`], and turned
//! into the compaction record when the trigger fires ([`record_from_draft`])
//! with no summarizer call.
//!
//! Invariant: a compaction applied from a draft holds exactly what a
//! synchronous compaction with the draft's boundary would hold, besides
//! the model's text: the exact facts and the token figures are computed
//! when it is applied, by the same function ([`crate::compact`]'s record
//! step), from the records as they are then.

use std::sync::Arc;

use eonyx_core::provider::CancellationToken;
use eonyx_core::{
    ChatRequest, CompactionConfig, CompactionMode, CompactionRecord, CompactionTrigger, Provider,
    SummaryDraftRecord,
};

use crate::estimate::{Estimator, RequestSize};
use crate::plan::Plan;
use crate::view::ContextView;
use crate::{CompactError, CompactInput, compact, finish_record, strip_facts};

/// What a background summary works on, owned, so the job outlives the
/// borrow of the session that started it.
#[derive(Debug, Clone)]
pub struct DraftInput {
    /// The summarizer's model id (for the transcript request).
    pub model_name: String,
    /// The view when the draft was started (the job reads only the records
    /// the plan compacts, and the previous summary).
    pub view: ContextView,
    pub plan: Plan,
    pub cfg: CompactionConfig,
    pub estimator: Estimator,
    /// The summarizer's context window.
    pub window: u64,
    /// System prompt and tool definitions, in characters.
    pub system_chars: usize,
    /// The request the conversation would send now (`None`: the transcript
    /// summarizer, see [`compact`]).
    pub next: Option<ChatRequest>,
    /// The `seq` of the compaction record the view starts from.
    pub base_seq: Option<u64>,
    /// Whether the agent pins a goal or plan (the summarizer is told).
    pub pinned: crate::Pinned,
    /// Which user messages eonyx keeps verbatim (the summarizer is told).
    pub said_note: Option<String>,
}

impl DraftInput {
    fn compact_input(&self) -> CompactInput<'_> {
        CompactInput {
            model_name: &self.model_name,
            view: &self.view,
            plan: &self.plan,
            cfg: &self.cfg,
            focus: None,
            trigger: CompactionTrigger::Auto,
            estimator: &self.estimator,
            window: self.window,
            system_chars: self.system_chars,
            next: self.next.as_ref(),
            pinned: self.pinned,
            said_note: self.said_note.as_deref(),
        }
    }
}

/// What a background summary produced, and the diagnostics it would have
/// sent to a debug sink.
#[derive(Debug)]
pub struct DraftOutcome {
    /// The draft to append (`seq`/`ts` left as 0/"" for the store writer).
    pub result: Result<SummaryDraftRecord, CompactError>,
    pub debug: Vec<String>,
}

/// Write the summary for `input.plan` with the summarizer `provider`, as
/// [`compact`] would (shared-prefix request, the transcript as fallback).
/// Cancelling `cancel` (or dropping the future) stops it; nothing is ever
/// written here.
pub async fn write_draft(
    provider: Arc<dyn Provider>,
    input: DraftInput,
    cancel: CancellationToken,
) -> DraftOutcome {
    let mut debug = Vec::new();
    let result = {
        let mut sink = |m: String| debug.push(m);
        compact(provider.as_ref(), input.compact_input(), &mut sink, cancel).await
    };
    let result = result.map(|rec| SummaryDraftRecord {
        seq: 0,
        ts: String::new(),
        tokens: input
            .estimator
            .tokens_for(RequestSize::new(rec.summary.chars().count(), 0)),
        summary: rec.summary,
        first_kept_seq: rec.first_kept_seq,
        base_seq: input.base_seq,
        facts: rec.facts,
        mode: rec.mode,
        tokens_before: rec.tokens_before,
        tokens_after: rec.tokens_after,
    });
    DraftOutcome { result, debug }
}

/// The plan that compacts everything before `first_kept_seq` in `view`,
/// when that is a boundary the view can take: at a user message it holds,
/// with at least one record before it. `None` otherwise.
pub fn plan_at(view: &ContextView, first_kept_seq: u64) -> Option<Plan> {
    let records = view.records();
    let at = records.iter().position(|r| r.seq >= first_kept_seq)?;
    let r = &records[at];
    (at > 0 && r.seq == first_kept_seq && r.message.role == eonyx_core::Role::User).then_some(
        Plan {
            first_kept_seq,
            compacted_len: at,
            mid_turn: false,
        },
    )
}

/// Whether `draft` can stand in for a compaction of `view` whose own
/// boundary would be `boundary`: it builds on the compaction the view
/// starts from (`base_seq`) and its boundary is inside the view, at or
/// before `boundary`. Returns the draft's plan.
pub fn draft_applies(
    draft: &SummaryDraftRecord,
    view: &ContextView,
    base_seq: Option<u64>,
    boundary: u64,
) -> Option<Plan> {
    if draft.base_seq != base_seq || draft.first_kept_seq > boundary {
        return None;
    }
    plan_at(view, draft.first_kept_seq)
}

/// The compaction record that applies `draft` (`mode: "ahead"`, its
/// `draft_seq`): the draft's text, and the facts and token figures of
/// `input` (whose plan must be the draft's, see [`draft_applies`]), as
/// [`compact`] computes them.
pub fn record_from_draft(
    draft: &SummaryDraftRecord,
    input: CompactInput<'_>,
) -> Result<CompactionRecord, CompactError> {
    let text = strip_facts(&draft.summary).to_owned();
    let mut rec = finish_record(text, CompactionMode::Ahead, &input)?;
    rec.draft_seq = Some(draft.seq);
    Ok(rec)
}
