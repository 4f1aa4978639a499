//! Compaction policy for eonyx (docs/compaction.md): when to compact, what the model
//! sees, where the boundary goes, and the summarizer call.
//!
//! - [`trigger`] turns config and model limits into the token trigger
//!   (`min(threshold% × window, window − headroom, max_input − buffer)`).
//! - [`Estimator`] estimates a whole request from the last provider-reported
//!   prompt tokens plus what was added since, learning chars-per-token.
//! - [`ContextView`] is the model-facing history, kept incrementally: tool
//!   output over the cap truncated visibly, old tool results collapsed
//!   (AXL budget/halving semantics), O(1) size.
//! - [`plan`] picks the boundary, [`compact`] asks the summarizer and
//!   returns the [`eonyx_core::CompactionRecord`] to persist, with exact
//!   facts (paths, commands) gathered mechanically.
//! - [`AutoGuard`] stops auto compaction after repeated useless ones.
//! - [`write_draft`] writes a summary ahead of time, in the background, as
//!   an independent future; [`record_from_draft`] turns it into the
//!   compaction record when the trigger fires.
//!
//! Invariants: this crate never writes, prints or mutates session state —
//! [`compact`] only returns a record, so a failed or cancelled compaction
//! loses nothing. Boundaries lie only at user messages, or inside the
//! current turn strictly after a complete tool exchange; a tool result is
//! never sent without its call. The collapsed set is a deterministic
//! function of the records since the last compaction, so a resumed session
//! sends the same bytes, and between collapse passes and compactions the
//! request only grows at the end (prompt caches keep hitting). Exact facts
//! never depend on the model's text.

mod ahead;
mod budget;
mod cut;
mod estimate;
mod facts;
mod guard;
mod native;
mod plan;
mod said;
mod shared;
mod summary;
mod trigger;
mod view;

#[cfg(test)]
mod tests;

pub use ahead::{DraftInput, DraftOutcome, draft_applies, plan_at, record_from_draft, write_draft};
pub use cut::CUT_SUMMARY_NOTE;

pub use budget::{
    INSTRUCTION_CHARS_PER_TOKEN, MIN_RESERVED_SUMMARY_TOKENS, RESERVED_SUMMARY_FRACTION,
    min_shared_budget, reserved_summary_tokens, summary_max_tokens,
};
pub use estimate::{
    Estimator, MAX_CHARS_PER_TOKEN, MIN_CHARS_PER_TOKEN, RequestSize, request_size,
};
pub use facts::{CommandFact, FACTS_HEADING, Facts, SearchFact, strip_facts};
pub use guard::AutoGuard;
pub use native::{NATIVE_INSTRUCTIONS, native_instructions, native_record, native_request};
pub use plan::{Plan, PlanError, plan};
pub use said::{
    Said, USER_WORDS_MAX_TOKENS, USER_WORDS_WINDOW_SHARE, said_text, user_words, user_words_budget,
};
pub use shared::{SharedCut, instruction as shared_prefix_instruction, shared_prefix_request};
pub use summary::{SECTIONS, SUMMARY_TEMPERATURE, summary_request};
pub use trigger::{
    Limits, Trigger, overflow_target, request_target, summarizer_reserve, tail_budget, trigger,
};
pub use view::{ContextView, NATIVE_PINNED_HEADING, PushOutcome};

use eonyx_core::provider::CancellationToken;
use eonyx_core::{
    ChatRequest, ChatResponse, CompactionConfig, CompactionMode, CompactionRecord,
    CompactionTrigger, Provider, ProviderError, Role,
};

/// Why a compaction failed. Nothing was written in any case.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("compaction cancelled; the conversation is unchanged")]
    Cancelled,
    #[error("compaction failed: the summarizer call failed ({0}); the conversation is unchanged")]
    Summarizer(#[source] ProviderError),
    #[error(
        "compaction failed: the summarizer returned an empty summary; the conversation is unchanged (try again, or set compaction.model to a stronger model)"
    )]
    EmptySummary,
    #[error("compaction failed: {0}")]
    Plan(#[from] PlanError),
}

/// Heading the prompt crate puts before the summary (used for estimates).
const SUMMARY_HEADING_CHARS: usize = "# Summary of earlier conversation\n\n".len();

/// What one compaction works on: everything [`compact`] and its steps
/// read, besides the provider, the debug sink and the cancel token.
#[derive(Clone, Copy)]
pub struct CompactInput<'a> {
    /// The summarizer's model id (for the transcript request).
    pub model_name: &'a str,
    pub view: &'a ContextView,
    pub plan: &'a Plan,
    pub cfg: &'a CompactionConfig,
    /// What the user asked the summary to focus on (`/compact FOCUS`).
    pub focus: Option<&'a str>,
    pub trigger: CompactionTrigger,
    pub estimator: &'a Estimator,
    /// The effective context window of the summarizer model (the
    /// transcript is bounded to fit it).
    pub window: u64,
    /// The size of everything in the request besides the messages (system
    /// prompt with the current summary, tool definitions), for
    /// `tokens_before` / `tokens_after`.
    pub system_chars: usize,
    /// The request the conversation would send now, when the summarizer is
    /// the session's own model (see [`compact`]).
    pub next: Option<&'a ChatRequest>,
    /// What eonyx pins at the top of the summary section itself: the
    /// summarizer is told so (docs/compaction.md#what-is-pinned).
    pub pinned: Pinned,
    /// Which user messages eonyx keeps verbatim itself after the summary
    /// ([`Said::note`]; docs/compaction.md#what-the-user-said): the
    /// summarizer is told, so it spends its words on the rest.
    pub said_note: Option<&'a str>,
}

/// Whether the agent pins a goal or a plan above the summary
/// (docs/compaction.md#what-is-pinned). The pinned text itself is the
/// agent's to put in the record; the summarizer is only told it is kept,
/// so it need not repeat it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pinned {
    #[default]
    Nothing,
    GoalOrPlan,
}

/// What the summarizer is told eonyx keeps itself: [`eonyx_core::goal::PINNED_NOTE`]
/// when something is pinned, and which user messages it keeps verbatim
/// (empty when neither).
fn kept_notes(input: &CompactInput<'_>) -> String {
    let mut notes = Vec::new();
    if input.pinned != Pinned::Nothing {
        notes.push(eonyx_core::goal::PINNED_NOTE);
    }
    if let Some(n) = input.said_note {
        notes.push(n);
    }
    notes.join("\n")
}

/// Append `notes` to the instruction (the last message) of a summarizer
/// request.
fn add_notes(req: &mut ChatRequest, notes: &str) {
    if notes.is_empty() {
        return;
    }
    if let Some(eonyx_core::Message {
        content: eonyx_core::Content::Text(t),
        ..
    }) = req.messages.last_mut()
    {
        t.push('\n');
        t.push_str(notes);
    }
}

/// Send the summarizer request `req` (its notes already in it), cancelled
/// with `cancel` (`None`: cancelled before it finished).
async fn ask_summarizer(
    provider: &dyn Provider,
    req: &mut ChatRequest,
    cancel: &CancellationToken,
) -> Option<Result<ChatResponse, ProviderError>> {
    req.cancel = cancel.child_token();
    cut::send(provider, req, cancel).await
}

/// Run the summarizer for `plan` and build the compaction record to persist
/// (`seq`/`ts` left as 0/"" for the store writer to fill).
///
/// `input.next` is the request the conversation would send now, when the
/// summarizer is the session's own model: the summary is then asked for
/// with that request plus one instruction (`mode: "shared-prefix"`, see
/// [`shared_prefix_request`]), which reuses the provider's prompt cache.
/// When it does not fit, or the attempt is refused, calls a tool or says
/// nothing, the standalone transcript request is used (`mode:
/// "transcript"`) and `debug` is told why.
pub async fn compact(
    provider: &dyn Provider,
    input: CompactInput<'_>,
    debug: &mut (dyn FnMut(String) + Send),
    cancel: CancellationToken,
) -> Result<CompactionRecord, CompactError> {
    if input.plan.compacted(input.view).is_empty() {
        return Err(PlanError::NothingToCompact.into());
    }
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    let shared = match input.next {
        Some(next) => summarize_shared(provider, next, &input, debug, &cancel).await?,
        None => None,
    };
    let (text, mode) = match shared {
        Some(text) => (text, CompactionMode::SharedPrefix),
        None => (
            summarize_transcript(provider, &input, &cancel).await?,
            CompactionMode::Transcript,
        ),
    };
    finish_record(text, mode, &input)
}

/// The shared-prefix attempt: `Ok(None)` (and a note to `debug`) when it
/// does not fit or fails in a way the transcript request may not.
async fn summarize_shared(
    provider: &dyn Provider,
    next: &ChatRequest,
    input: &CompactInput<'_>,
    debug: &mut (dyn FnMut(String) + Send),
    cancel: &CancellationToken,
) -> Result<Option<String>, CompactError> {
    let records = input.view.records();
    let kept_from = input.plan.compacted_len.min(records.len());
    // Messages after the last assistant one that stay verbatim: the
    // request may leave them out to make room (see `SharedCut`).
    let tail_from = records
        .iter()
        .rposition(|r| r.message.role == Role::Assistant)
        .map_or(0, |a| a + 1);
    let cut = SharedCut {
        first_kept: records.get(kept_from),
        kept: records.len() - kept_from,
        unsent: if tail_from >= kept_from {
            records.len() - tail_from
        } else {
            0
        },
    };
    let Some(mut req) = shared::shared_prefix_request_noted(
        next,
        cut,
        input.view.summary().is_some(),
        input.focus,
        &kept_notes(input),
        input.cfg,
        input.window,
        input.estimator,
    ) else {
        debug(format!(
            "compaction: the conversation's request leaves too little of the {}-token window for the instruction and the summary; using the transcript summarizer",
            input.window
        ));
        return Ok(None);
    };
    // A summary cut at the output cap is kept with its note, never asked
    // for again: one summarizer request per compaction.
    let sent = ask_summarizer(provider, &mut req, cancel)
        .await
        .map(|r| r.map(cut::mark_if_cut));
    let why = match sent {
        None | Some(Err(ProviderError::Cancelled)) => return Err(CompactError::Cancelled),
        Some(Err(e)) => format!("the shared-prefix request failed ({e})"),
        Some(Ok(r)) => match shared::usable_reply(&r.message) {
            Ok(text) => {
                let text = strip_facts(text.trim()).trim().to_owned();
                if !text.is_empty() {
                    return Ok(Some(text));
                }
                "the summarizer returned no summary".to_owned()
            }
            Err(why) => why.to_owned(),
        },
    };
    debug(format!(
        "compaction: {why}; falling back to the transcript summarizer"
    ));
    Ok(None)
}

/// Today's standalone summarizer: a transcript of the compacted messages.
async fn summarize_transcript(
    provider: &dyn Provider,
    input: &CompactInput<'_>,
    cancel: &CancellationToken,
) -> Result<String, CompactError> {
    let compacted = input.plan.compacted(input.view);
    let mut req = summary_request(
        input.view.summary(),
        compacted,
        input.focus,
        input.cfg,
        input.model_name,
        input.window,
        input.estimator,
    );
    add_notes(&mut req, &kept_notes(input));
    let resp = match ask_summarizer(provider, &mut req, cancel).await {
        None | Some(Err(ProviderError::Cancelled)) => return Err(CompactError::Cancelled),
        Some(Err(e)) => return Err(CompactError::Summarizer(e)),
        Some(Ok(r)) => r,
    };
    // Cut at the cap: kept with its note, never asked for again (a second
    // transcript request would cost the whole prefill again).
    let resp = cut::mark_if_cut(resp);
    let text = strip_facts(resp.message.content.text().trim()).to_owned();
    if text.trim().is_empty() {
        return Err(CompactError::EmptySummary);
    }
    Ok(text)
}

/// The record for a summary `text` obtained in `mode`.
pub(crate) fn finish_record(
    text: String,
    mode: CompactionMode,
    input: &CompactInput<'_>,
) -> Result<CompactionRecord, CompactError> {
    let CompactInput {
        view,
        plan,
        cfg,
        focus,
        trigger,
        estimator,
        window,
        system_chars,
        ..
    } = *input;
    let compacted = plan.compacted(view);
    let mut new_facts = Facts::from_records(compacted);
    if plan.mid_turn {
        new_facts.turn_request = compacted
            .iter()
            .rev()
            .find(|r| r.message.role == Role::User)
            .map(|r| r.message.content.text())
            .or_else(|| Facts::from_value(view.facts()).turn_request);
    }
    let mut facts = Facts::from_value(view.facts()).merge(new_facts);
    // The facts section may use at most half the summary's own budget.
    let facts_chars = (summary_max_tokens(cfg, window) as f64 * estimator.ratio() / 2.0) as usize;
    facts.trim_to(facts_chars.max(400));
    let rendered = facts.render();
    let summary = if rendered.is_empty() {
        text
    } else {
        format!("{text}\n\n{rendered}")
    };

    let before = estimator.estimate(&(RequestSize::new(system_chars, 0) + view.size()));
    let old_summary = view
        .summary()
        .map(|s| s.chars().count() + SUMMARY_HEADING_CHARS + view.said().chars().count())
        .unwrap_or(0);
    let mut tail = RequestSize::default();
    for i in plan.compacted_len..view.records().len() {
        tail += view.sent_size(i);
    }
    let after_chars = system_chars.saturating_sub(old_summary)
        + summary.chars().count()
        + SUMMARY_HEADING_CHARS
        + tail.chars
        + if plan.mid_turn { 300 } else { 0 };
    let after = estimator.tokens_for(RequestSize::new(after_chars, tail.images));

    // The skills (docs/skills.md, section "Skills"), the goal and plan
    // (docs/compaction.md#what-is-pinned) are filled in by the agent,
    // which knows them.
    Ok(CompactionRecord {
        summary,
        first_kept_seq: plan.first_kept_seq,
        trigger,
        tokens_before: before,
        tokens_after: after,
        mid_turn: plan.mid_turn,
        focus: focus.map(str::to_owned).filter(|f| !f.trim().is_empty()),
        facts: (!facts.is_empty() || facts.turn_request.is_some()).then(|| facts.to_value()),
        mode: Some(mode),
        ..CompactionRecord::default()
    })
}
