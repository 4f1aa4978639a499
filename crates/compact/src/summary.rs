//! The summarizer request: a structured, incremental handoff.

use eonyx_core::provider::SUMMARIZER_SYSTEM_PREFIX;
use eonyx_core::{
    ChatRequest, CompactionConfig, Content, Message, MessageRecord, Role, SystemPrompt,
};

use crate::budget::summary_max_tokens;
use crate::estimate::Estimator;
use crate::facts::strip_facts;

/// Temperature of summarizer calls unless `compaction.temperature` is set.
pub const SUMMARY_TEMPERATURE: f32 = 0.1;

/// The sections of the handoff, in order.
pub const SECTIONS: [&str; 7] = [
    "Active goal",
    "Constraints and preferences",
    "Progress",
    "Decisions",
    "Changed files",
    "Open tasks and next steps",
    "Critical context",
];

/// Tool results longer than this are shortened in the transcript.
const MAX_RESULT_CHARS: usize = 4000;

fn system_prompt(max_tokens: u64) -> String {
    let mut s = format!(
        "{SUMMARIZER_SYSTEM_PREFIX} You write the handoff summary that lets a coding agent continue a long conversation after its older messages are removed from its context. The agent will see only your summary and the most recent messages: whatever you leave out is lost.\n\nWrite Markdown with exactly these sections, in this order:\n"
    );
    for name in SECTIONS {
        s.push_str(&format!("## {name}\n"));
    }
    s.push_str(&format!(
        "\nRules:\n\
- When a previous summary is given, merge it and the new messages into one updated summary. Newer information wins: where the new messages change or contradict the previous summary, keep the newer version and drop what is outdated.\n\
- Keep every instruction, constraint and preference of the user that still applies, in the user's words when they are short.\n\
- Be exact: copy file paths, identifiers, commands, error messages, numbers and versions verbatim. Never invent anything.\n\
- Under a section with nothing to say, write \"none\".\n\
- Stay under {max_tokens} tokens. Output only the summary: no preamble, no tool calls.\n\
- Do not write an \"Exact facts\" section: eonyx appends one mechanically.\n"
    ));
    s
}

/// Not `ellipsize`: the summarizer model is told, on a line of its own,
/// how much of the message was left out.
fn shorten(text: &str, max: usize, what: &str) -> String {
    let Some(head) = eonyx_core::text::cut_chars(text, max) else {
        return text.to_owned();
    };
    let n = text.chars().count();
    format!(
        "{head}\n[… {} of {n} characters of this {what} cut for the summary]",
        n - max
    )
}

fn content_text(c: &Content) -> String {
    c.text_with_images(|_, _| "[image]".to_owned())
}

/// One message of the transcript, each field shortened to `max` chars.
fn render_entry(
    r: &MessageRecord,
    max: usize,
    names: &std::collections::HashMap<&str, &str>,
) -> String {
    let m = &r.message;
    let text = content_text(&m.content);
    let mut out = match m.role {
        Role::User => format!("[#{} user]\n{}\n", r.seq, shorten(&text, max, "message")),
        Role::Assistant => {
            let mut s = format!("[#{} assistant]\n", r.seq);
            if !text.trim().is_empty() {
                s.push_str(&shorten(&text, max, "message"));
                s.push('\n');
            }
            s
        }
        Role::Tool => {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            let name = names.get(id).copied().unwrap_or("tool");
            format!(
                "[#{} result of {name} ({id})]\n{}\n",
                r.seq,
                shorten(&text, max.min(MAX_RESULT_CHARS), "tool result")
            )
        }
    };
    for c in &m.tool_calls {
        out.push_str(&format!(
            "[tool call {}: {} {}]\n",
            c.id,
            c.name,
            shorten(
                &c.arguments_json(),
                max.min(MAX_RESULT_CHARS),
                "argument list"
            )
        ));
    }
    out
}

/// The summarizer request for `compacted` (records in order), merging
/// `prev_summary`. The transcript is bounded so that the request plus the
/// summary fit in `window`: long fields are shortened visibly and, if still
/// too large, the oldest messages are left out with a note.
pub fn summary_request(
    prev_summary: Option<&str>,
    compacted: &[MessageRecord],
    focus: Option<&str>,
    cfg: &CompactionConfig,
    model_name: &str,
    window: u64,
    estimator: &Estimator,
) -> ChatRequest {
    let max_out = summary_max_tokens(cfg, window);
    let system = system_prompt(max_out);

    let mut head = String::new();
    match prev_summary.map(strip_facts).filter(|s| !s.trim().is_empty()) {
        Some(prev) => head.push_str(&format!(
            "Previous summary (it covers everything before the messages below):\n<previous-summary>\n{prev}\n</previous-summary>\n\nMerge it with the messages below into one updated summary. Newer information wins: where the messages below change or contradict the previous summary, keep the newer version.\n\n"
        )),
        None => head.push_str("There is no previous summary: this is the first compaction of the conversation.\n\n"),
    }
    if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        head.push_str(&format!(
            "The user asked this summary to focus on: {f}\nGive that topic priority and detail; keep the rest brief.\n\n"
        ));
    }
    let tail =
        "\nWrite the updated summary now, with exactly the sections listed in your instructions.";

    // Characters the transcript may use: 90% of the window, minus the
    // answer, the instructions and the previous summary.
    let fixed = system.chars().count() + head.chars().count() + tail.len() + 200;
    let avail_tokens = (window / 10 * 9)
        .saturating_sub(max_out)
        .saturating_sub(estimator.tokens_for(crate::RequestSize::new(fixed, 0)));
    let avail = ((avail_tokens as f64 * estimator.ratio()) as usize).max(400);
    let per_field = (avail / 4).clamp(200, 20_000);

    let names: std::collections::HashMap<&str, &str> = compacted
        .iter()
        .flat_map(|r| r.message.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let entries: Vec<String> = compacted
        .iter()
        .map(|r| render_entry(r, per_field, &names))
        .collect();
    // Keep the newest entries that fit.
    let mut used = 0usize;
    let mut first = entries.len();
    while first > 0 {
        let c = entries[first - 1].chars().count() + 1;
        if used + c > avail && first < entries.len() {
            break;
        }
        used += c;
        first -= 1;
    }
    let mut transcript = String::new();
    if first > 0 {
        transcript.push_str(&format!(
            "[{first} older messages left out: they did not fit in the summarizer's context window]\n\n"
        ));
    }
    transcript.push_str(&entries[first..].join("\n"));

    let range = match (compacted.first(), compacted.last()) {
        (Some(a), Some(b)) => format!(" (#{}–#{})", a.seq, b.seq),
        _ => String::new(),
    };
    let user = format!(
        "{head}Messages to fold into the summary{range}, oldest first:\n<transcript>\n{transcript}\n</transcript>\n{tail}"
    );
    let mut req = ChatRequest::new(
        model_name,
        SystemPrompt {
            stable: system,
            suffix: String::new(),
        },
        vec![Message::user(user)],
    );
    // A preference: `compaction.temperature` when set; a model that refuses
    // it gets none (the provider drops a refused temperature and retries).
    req.temperature = Some(cfg.temperature.unwrap_or(SUMMARY_TEMPERATURE));
    // `compaction.reasoning_effort`, for a model that reasons (an effort is
    // not part of the cached prompt on the OpenAI wires; Anthropic keeps the
    // conversation's thinking, whose change would drop its cache).
    req.reasoning_effort = Some(cfg.reasoning_effort);
    req.max_tokens = Some(u32::try_from(max_out).unwrap_or(u32::MAX));
    req
}
