//! The shared-prefix summarizer request (cache-aware compaction): exactly
//! the request the conversation would send next — same system prompt
//! (with the previous summary), same tool definitions, same messages, byte
//! for byte — plus one final user message asking for the handoff summary.
//! A provider's prompt cache already holds everything but that message, so
//! a compaction costs little more than the summary itself.
//!
//! The standalone transcript request ([`crate::summary_request`]) stays the
//! fallback: when this request would not fit, when the summarizer is a
//! different model, or when this attempt fails.

use eonyx_core::provider::SUMMARIZER_INSTRUCTION_PREFIX;
use eonyx_core::{ChatRequest, CompactionConfig, Message, MessageRecord};

use crate::estimate::{Estimator, RequestSize, request_size};
use crate::summary::{SECTIONS, SUMMARY_TEMPERATURE};
use crate::trigger::summary_max_tokens;

/// How much of the `summary_max_tokens` budget the shared-prefix request
/// must be able to give the summary (as a fraction); below it, the
/// transcript request (which has the whole budget) is used.
const MIN_BUDGET_FRACTION: f64 = 0.5;

/// Characters of the first kept message quoted to name it.
const NAME_CHARS: usize = 80;

/// How the instruction names the first message that stays verbatim.
fn name_first_kept(first_kept: Option<&MessageRecord>) -> String {
    let Some(r) = first_kept else {
        return "the end of the conversation (every message above is removed)".to_owned();
    };
    let m = &r.message;
    let text: String = m
        .content
        .text()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let role = m.role.as_str();
    if text.is_empty() {
        let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
        return format!(
            "the {role} message #{} (the one that calls {})",
            r.seq,
            if calls.is_empty() {
                "no tool".to_owned()
            } else {
                calls.join(", ")
            }
        );
    }
    let mut quote: String = text.chars().take(NAME_CHARS).collect();
    if text.chars().count() > NAME_CHARS {
        quote.push('…');
    }
    format!("the {role} message #{} that begins \"{quote}\"", r.seq)
}

/// The instruction appended to the conversation. Short on purpose: it is
/// the part of the summarizer request no cache holds.
pub fn instruction(
    first_kept: Option<&MessageRecord>,
    has_summary: bool,
    focus: Option<&str>,
    max_tokens: u64,
) -> String {
    let name = name_first_kept(first_kept);
    // Every token here is prefilled uncached, so it says only what the
    // summary needs: no tools, what is replaced, merging, the sections, exact
    // facts and the budget.
    let mut s = format!(
        "{SUMMARIZER_INSTRUCTION_PREFIX} Reply with text only; do not call any tool (they are listed only to keep this request cacheable). \
Write the handoff summary that replaces every message before {name}; that message and later ones stay. What you leave out is lost.\n"
    );
    if has_summary {
        s.push_str("Merge the \"# Summary of earlier conversation\" above into it; newer information wins.\n");
    } else {
        s.push_str("This is the first summary.\n");
    }
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        s.push_str(&format!(
            "Focus on: {f}. Give it priority and detail; keep the rest brief.\n"
        ));
    }
    s.push_str("Markdown, exactly these sections in order:\n");
    for name in SECTIONS {
        s.push_str(&format!("## {name}\n"));
    }
    s.push_str(&format!(
        "Keep every user instruction that still applies. Copy paths, identifiers, commands, errors and numbers exactly; invent nothing; \"none\" under an empty section. \
No preamble, no \"Exact facts\" section. At most {max_tokens} tokens.\n"
    ));
    s
}

/// The shared-prefix summarizer request: `next` (the request the
/// conversation would send now) plus the instruction, or `None` when it
/// would not fit in `window` with room for the summary (at least half of
/// `summary_max_tokens`; `max_tokens` is the room left, at most
/// `summary_max_tokens`).
///
/// `first_kept` is the first message that stays verbatim (`None` when the
/// whole view is compacted); `has_summary` whether `next` carries a
/// previous summary.
pub fn shared_prefix_request(
    next: &ChatRequest,
    first_kept: Option<&MessageRecord>,
    has_summary: bool,
    focus: Option<&str>,
    cfg: &CompactionConfig,
    window: u64,
    estimator: &Estimator,
) -> Option<ChatRequest> {
    let max_out = summary_max_tokens(cfg, window);
    let text = instruction(first_kept, has_summary, focus, max_out);
    let size = request_size(&next.system, &next.messages, &next.tools);
    // The template's framing of one more message, and estimation slack.
    let margin = 16 + window / 100;
    let need = estimator.estimate(&size)
        + estimator.tokens_for(RequestSize::new(text.chars().count(), 0))
        + margin;
    let room = window.saturating_sub(need);
    if (room as f64) < max_out as f64 * MIN_BUDGET_FRACTION || room == 0 {
        return None;
    }
    let budget = room.min(max_out);
    let text = if budget == max_out {
        text
    } else {
        instruction(first_kept, has_summary, focus, budget)
    };

    let mut req = next.clone();
    let n = req.messages.len();
    req.messages.push(Message::user(text));
    req.no_tool_calls = true;
    req.cache_breakpoint = Some(n);
    req.max_tokens = Some(u32::try_from(budget).unwrap_or(u32::MAX));
    // A preference, as for the transcript summarizer: `compaction.temperature`
    // when set (a model that refuses it gets none, see the provider).
    req.temperature = Some(cfg.temperature.unwrap_or(SUMMARY_TEMPERATURE));
    // `compaction.reasoning_effort`, for a model that reasons (an effort is
    // not part of the cached prompt on the OpenAI wires; Anthropic keeps the
    // conversation's thinking, whose change would drop its cache).
    req.reasoning_effort = Some(cfg.reasoning_effort);
    Some(req)
}

/// Whether a reply to the shared-prefix request is a usable summary: text,
/// and no tool call (a tool call means the model did not do what was asked).
pub fn usable_reply(message: &Message) -> Result<String, &'static str> {
    if !message.tool_calls.is_empty() {
        return Err("the summarizer called a tool");
    }
    let text = message.content.text();
    if text.trim().is_empty() {
        return Err("the summarizer returned no text");
    }
    Ok(text)
}
