//! The shared-prefix summarizer request (cache-aware compaction): exactly
//! the request the conversation would send next — same system prompt
//! (with the previous summary), same tool definitions, same messages, byte
//! for byte — plus one final user message asking for the handoff summary.
//! A provider's prompt cache already holds everything but that message, so
//! a compaction costs little more than the summary itself.
//!
//! The trigger keeps room for this request (docs/compaction.md#the-summarizers-reserve),
//! so at the trigger it fits. The standalone transcript request
//! ([`crate::summary_request`]) stays for what truly needs it: a request
//! already past the window (an overflow), a different summarizer model, or
//! a shared-prefix attempt that failed.

use eonyx_core::provider::SUMMARIZER_INSTRUCTION_PREFIX;
use eonyx_core::{ChatRequest, CompactionConfig, Message, MessageRecord, Role};

use crate::budget::{
    INSTRUCTION_CHARS_PER_TOKEN, min_shared_budget, shared_margin, summary_max_tokens,
};
use crate::estimate::{Estimator, RequestSize, request_size};
use crate::summary::{SECTIONS, SUMMARY_TEMPERATURE};

/// Characters of the first kept message quoted to name it.
const NAME_CHARS: usize = 48;

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
    instruction_naming(&name_first_kept(first_kept), has_summary, focus, max_tokens)
}

/// The longest instruction an automatic compaction sends (a previous
/// summary, the longest name of the first kept message, no focus), in
/// characters: what the trigger's reserve counts.
pub(crate) fn longest_instruction_chars(cfg: &CompactionConfig, window: u64) -> usize {
    let quote = "x".repeat(NAME_CHARS);
    let name = format!(
        "the assistant message #{} that begins \"{quote}…\"",
        u64::MAX
    );
    instruction_naming(&name, true, None, summary_max_tokens(cfg, window))
        .chars()
        .count()
}

fn instruction_naming(
    name: &str,
    has_summary: bool,
    focus: Option<&str>,
    max_tokens: u64,
) -> String {
    // Every token here is prefilled uncached (at a 2,048-token window it is
    // a tenth of the request), so it says only what the summary needs: no
    // tools, what is replaced, merging, the sections, exact facts and the
    // budget.
    let mut s = format!(
        "{SUMMARIZER_INSTRUCTION_PREFIX} Reply in text, call no tool. Summarize everything before {name}; it and later messages stay, the rest is lost.\n"
    );
    if has_summary {
        s.push_str("Merge in the \"# Summary of earlier conversation\" above; newer wins.\n");
    } else {
        s.push_str("This is the first summary.\n");
    }
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        s.push_str(&format!(
            "Focus on: {f}. Give it priority and detail; keep the rest brief.\n"
        ));
    }
    s.push_str("Markdown sections, in order:\n");
    for name in SECTIONS {
        s.push_str(&format!("## {name}\n"));
    }
    s.push_str(&format!(
        "Keep user instructions that still apply; copy paths, names, commands, errors and numbers exactly; invent nothing; \"none\" if empty; no preamble. At most {max_tokens} tokens.\n"
    ));
    s
}

/// Where the conversation is cut, as the shared-prefix request needs it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SharedCut<'a> {
    /// The first message that stays verbatim (`None` when the whole view
    /// is compacted).
    pub first_kept: Option<&'a MessageRecord>,
    /// How many messages at the end of the view stay verbatim (from
    /// `first_kept` on).
    pub kept: usize,
    /// How many of those come after the conversation's last assistant
    /// message (the new user line, tool results): the server has not seen
    /// them, so no cache holds them, and the summary does not need them.
    pub unsent: usize,
}

/// The shared-prefix summarizer request: `next` (the request the
/// conversation would send now) plus the instruction, or `None` when it
/// would not fit in `window` with room for the summary (at least
/// [`min_shared_budget`]; `max_tokens` is the room left, at most
/// `summary_max_tokens`).
///
/// The messages after `next`'s last assistant message are left out when
/// they stay verbatim anyway (`cut.unsent`) and that message calls no tool
/// (a call is never sent without its result): the server has not seen them,
/// so they would be prefilled uncached, and the summary does not need them.
/// What remains is the prefix the provider cached with its last reply, so
/// the request's only uncached part is the instruction (at a 2,048-token
/// window a new 200-token line would otherwise cost a tenth of the cache
/// reuse), and one step's growth past the trigger does not push the
/// request onto the transcript path. `has_summary` is whether `next`
/// carries a previous summary.
pub fn shared_prefix_request(
    next: &ChatRequest,
    cut: SharedCut<'_>,
    has_summary: bool,
    focus: Option<&str>,
    cfg: &CompactionConfig,
    window: u64,
    estimator: &Estimator,
) -> Option<ChatRequest> {
    shared_prefix_request_noted(next, cut, has_summary, focus, "", cfg, window, estimator)
}

/// [`shared_prefix_request`] with `notes` (what eonyx keeps itself, see
/// [`crate::CompactInput`]) at the end of the instruction, counted in the
/// room it needs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn shared_prefix_request_noted(
    next: &ChatRequest,
    cut: SharedCut<'_>,
    has_summary: bool,
    focus: Option<&str>,
    notes: &str,
    cfg: &CompactionConfig,
    window: u64,
    estimator: &Estimator,
) -> Option<ChatRequest> {
    let noted = |first_kept, budget| {
        let mut text = instruction(first_kept, has_summary, focus, budget);
        if !notes.is_empty() {
            text.push_str(notes);
            text.push('\n');
        }
        text
    };
    let max_out = summary_max_tokens(cfg, window);
    let floor = min_shared_budget(cfg, window);
    let all = next.messages.len();
    // The trailing messages after the last assistant one, when they are
    // all kept verbatim.
    let trailing = next
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::Assistant)
        .count();
    // Never the results of a call the kept part ends with: a tool call
    // without its result is not a valid request.
    let ends_clean = all > trailing && next.messages[all - trailing - 1].tool_calls.is_empty();
    let (sent, first_kept) = if trailing > 0 && trailing <= cut.unsent && ends_clean {
        // When the first kept message is left out, everything shown goes.
        let first_kept = if trailing >= cut.kept {
            None
        } else {
            cut.first_kept
        };
        (all - trailing, first_kept)
    } else {
        (all, cut.first_kept)
    };
    let text = noted(first_kept, max_out);
    let size = request_size(&next.system, &next.messages[..sent], &next.tools);
    // The instruction is counted as the trigger's reserve counts it (no
    // cache or usage report has seen it yet).
    let instruction_tokens =
        (text.chars().count() as f64 / INSTRUCTION_CHARS_PER_TOKEN).ceil() as u64;
    let need = estimator.estimate(&size)
        + estimator
            .tokens_for(RequestSize::new(text.chars().count(), 0))
            .max(instruction_tokens)
        + shared_margin(window);
    let room = window.saturating_sub(need);
    if room < floor || room == 0 {
        return None;
    }
    let budget = room.min(max_out);
    let text = noted(first_kept, budget);

    let mut req = next.clone();
    req.messages.truncate(sent);
    req.messages.push(Message::user(text));
    req.no_tool_calls = true;
    req.cache_breakpoint = Some(sent);
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
