//! Provider-native compaction, the policy side (docs/compaction.md#native-compaction):
//! what the provider is asked to compact (everything before the boundary,
//! earlier native items included, eonyx's pinned section excluded), what
//! it is told to keep, and the record a native result becomes. The wire
//! is the provider crate's; when to try and what to do on failure is the
//! agent's.

use eonyx_core::provider::NativeOutcome;
use eonyx_core::{ChatRequest, CompactionMode, CompactionRecord};

use crate::{CompactError, CompactInput, PlanError, finish_record};

/// What eonyx asks the provider to keep (Anthropic's `instructions`; the
/// Responses endpoint takes none beyond the request's own).
pub const NATIVE_INSTRUCTIONS: &str = "Compact the conversation so far so that you can continue the work from it. Keep: what the user asked for and every constraint and preference they stated; decisions and why they were made; the exact paths of files read or changed and the exact commands run, with their outcome; errors seen and how they were handled; open tasks and the next step. eonyx adds the current goal, plan and running jobs after the compacted part itself, and the user's pins and own messages verbatim as far as they fit: do not repeat them.";

/// The request whose messages are the part to compact: `next` (the
/// request the conversation would send now, carrying any earlier native
/// items) with only the messages before `input.plan`'s boundary, without
/// the pinned section eonyx adds after a native compaction.
pub fn native_request(
    next: &ChatRequest,
    input: &CompactInput<'_>,
) -> Result<ChatRequest, CompactError> {
    let messages = input.view.sent_messages(input.plan.compacted_len);
    if messages.is_empty() {
        return Err(PlanError::NothingToCompact.into());
    }
    let mut req = next.clone();
    req.messages = messages;
    req.cache_breakpoint = None;
    req.no_tool_calls = false;
    Ok(req)
}

/// The instructions for this compaction: eonyx's, and the user's focus
/// (`/compact FOCUS`) when given.
pub fn native_instructions(focus: Option<&str>) -> String {
    match focus.map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) => format!("{NATIVE_INSTRUCTIONS} Focus on: {f}"),
        None => NATIVE_INSTRUCTIONS.to_owned(),
    }
}

/// The compaction record of a native result: `native` holds the items as
/// returned, `summary` what a reader is shown (Anthropic's text, OpenAI's
/// item as `[compacted by the provider: opaque, N bytes]`) followed by the
/// exact facts, and `usage` the call's own usage.
pub fn native_record(
    outcome: NativeOutcome,
    input: &CompactInput<'_>,
) -> Result<CompactionRecord, CompactError> {
    let mut record = finish_record(outcome.native.display(), CompactionMode::Transcript, input)?;
    // The request after it carries the items, not the summary: count them
    // by their bytes until the next usage report.
    let shown = record.summary.chars().count() as u64;
    let items = outcome.native.chars() as u64;
    let ratio = input.estimator.ratio().max(1.0);
    record.tokens_after = record
        .tokens_after
        .saturating_sub((shown as f64 / ratio) as u64)
        + (items as f64 / ratio) as u64;
    record.mode = None;
    record.native = Some(Box::new(outcome.native));
    record.usage = outcome.usage;
    Ok(record)
}
