//! `eonyx sessions show ID`: every record of a session as stored, or
//! with `--effective` the request the model is sent next.

use eonyx_config::paths::Env;
use eonyx_core::record::Record;
use eonyx_core::{MessageRecord, SessionId};

use super::short_date;
use crate::cli::GlobalArgs;
use crate::commands::open_store;
use crate::exit::Status;
use crate::printer::Printer;

/// A message as stored: `[#SEQ ROLE · result of ID · DATE]` (`· rewound`
/// when a rewind left it out), its text and tool calls.
fn message_block(m: &MessageRecord, rewound: bool) -> String {
    let date = format!(" · {}{}", short_date(&m.ts), rewound_mark(rewound));
    block(&format!("#{} ", m.seq), &m.message, &date)
}

fn rewound_mark(rewound: bool) -> &'static str {
    if rewound { " · rewound" } else { "" }
}

/// `[#SEQ WHAT · DATE( · rewound)] TEXT`, a line of a record about one
/// thing (a pin, a job).
fn tagged(seq: u64, what: &str, ts: &str, rewound: bool, text: &str) -> String {
    format!(
        "[#{seq} {what} · {}{}] {text}\n",
        short_date(ts),
        rewound_mark(rewound)
    )
}

/// `[PREFIX ROLE · result of ID SUFFIX]` then the text (images as
/// `[image png 12 KB]`) and one `→ NAME ARGS (call ID)` line per tool call.
fn block(prefix: &str, m: &eonyx_core::Message, suffix: &str) -> String {
    let mut out = format!("[{prefix}{}", m.role.as_str());
    if let Some(id) = &m.tool_call_id {
        out.push_str(&format!(" · result of {id}"));
    }
    out.push_str(suffix);
    out.push(']');
    for r in &m.reasoning {
        out.push('\n');
        out.push_str(&crate::commands::reasoning::block(r));
    }
    let text = m.content.transcript();
    if !text.is_empty() {
        out.push('\n');
        out.push_str(&text);
    }
    for c in &m.tool_calls {
        out.push_str(&format!(
            "\n  → {} {} (call {})",
            c.name,
            c.arguments_json(),
            c.id
        ));
    }
    out.push('\n');
    out
}

pub(super) fn show(
    printer: &mut Printer,
    global: &GlobalArgs,
    id: &SessionId,
) -> anyhow::Result<Status> {
    let json = global.json;
    let store = open_store()?;
    let log = store.read_all(id)?;
    let skipped = log.stats.bad_lines + log.stats.unknown_lines;
    if skipped > 0 {
        printer.warn(&format!(
            "skipped {} unreadable line(s) and {} record(s) of unknown type in {id}",
            log.stats.bad_lines, log.stats.unknown_lines
        ));
    }
    let timeline = log.timeline();
    let rewound = |r: &Record| r.seq().is_some_and(|s| timeline.is_rewound(s));
    if json {
        // The records as stored, those a rewind left out with
        // `"rewound": true` added.
        let mut out = Vec::with_capacity(log.records.len());
        for r in &log.records {
            let mut v = serde_json::to_value(r)?;
            if rewound(r)
                && let Some(o) = v.as_object_mut()
            {
                o.insert("rewound".into(), serde_json::Value::Bool(true));
            }
            out.push(v);
        }
        printer.json_pretty(&out)?;
        return Ok(Status::Success);
    }
    let children = store.children_of(id)?;
    let cost = match super::super::lenient_config(printer, global, "shown without its cost") {
        Some(config) => eonyx_agent::cost::session_cost(&store, &config, id)?,
        None => None,
    };
    let mut blocks = Vec::new();
    for r in &log.records {
        blocks.push(match r {
            Record::Session(h) => {
                let mut s = format!(
                    "Session {} \"{}\"\ncreated {} UTC · project {} · cwd {}",
                    h.id,
                    h.title,
                    short_date(&h.created),
                    h.project,
                    h.cwd
                );
                if let Some(m) = &h.model {
                    s.push_str(&format!(" · model {m}"));
                }
                if let Some(f) = &h.forked_from {
                    s.push_str(&format!(" · forked from {} at #{}", f.id, f.seq));
                }
                if let Some(p) = &h.parent {
                    s.push_str(&format!(
                        "\na task of session {p} (call {}) · profile {}",
                        h.parent_call.as_deref().unwrap_or("?"),
                        h.profile.as_deref().unwrap_or("?")
                    ));
                }
                if let Some(usd) = cost {
                    s.push_str(&format!(
                        "\ncost {} (reported usage × configured prices, tasks included)",
                        eonyx_core::cost::format_usd(usd)
                    ));
                }
                for c in &children {
                    s.push_str(&format!(
                        "\ntask session {} \"{}\" · profile {} · {} messages",
                        c.id,
                        c.title,
                        c.profile.as_deref().unwrap_or("?"),
                        c.message_count
                    ));
                }
                s.push('\n');
                s
            }
            Record::Message(m) => message_block(m, rewound(r)),
            Record::Title(t) => format!("[renamed to \"{}\" · {}]\n", t.title, short_date(&t.ts)),
            Record::Model(m) => format!(
                "[model switched to {}{} · {}]\n",
                m.key,
                m.reasoning_effort
                    .map(|e| format!(", effort {}", e.as_str()))
                    .unwrap_or_default(),
                short_date(&m.ts)
            ),
            Record::Compaction(c) => format!(
                "[#{} compaction · {}{} · {}{}] messages before #{} summarized ({} → {} tokens)\n{}\n{}",
                c.seq,
                c.trigger.as_str(),
                match (&c.native, c.draft_seq) {
                    (Some(n), _) => format!(" · native, by {} {}", n.provider.as_str(), n.model),
                    (None, Some(d)) => format!(" · summary written ahead in #{d}"),
                    (None, None) => String::new(),
                },
                short_date(&c.ts),
                rewound_mark(rewound(r)),
                c.first_kept_seq,
                c.tokens_before,
                c.tokens_after,
                c.summary,
                kept_verbatim(c)
            ),
            Record::SummaryDraft(d) => format!(
                "[#{} summary draft · {}{}] written ahead for the messages before #{} (~{} tokens); used only once a compaction applies it\n{}\n",
                d.seq,
                short_date(&d.ts),
                rewound_mark(rewound(r)),
                d.first_kept_seq,
                d.tokens,
                d.summary
            ),
            Record::Goal(g) => format!(
                "[#{} goal {} · {}/{} continuation turns · {}{}] {}{}\n",
                g.seq,
                g.status.as_str(),
                g.turns_used,
                g.max_turns,
                short_date(&g.ts),
                rewound_mark(rewound(r)),
                g.text,
                match (&g.evidence, &g.reason) {
                    (Some(e), _) => format!("\n  evidence: {e}"),
                    (None, Some(why)) => format!("\n  reason: {why}"),
                    (None, None) => String::new(),
                }
            ),
            Record::Rewind(w) => format!(
                "[#{} rewind · {}{}] back to the conversation as of #{}; what came after stays in the file, marked rewound\n",
                w.seq,
                short_date(&w.ts),
                rewound_mark(rewound(r)),
                w.to_seq
            ),
            Record::Pin(p) => {
                let event = match p.event {
                    eonyx_core::pin::PinEvent::Added => "added",
                    eonyx_core::pin::PinEvent::Removed => "removed",
                };
                let what = format!("pin {} {event}", p.id);
                tagged(p.seq, &what, &p.ts, rewound(r), &p.text)
            }
            Record::Job(j) => {
                let what = format!("job {} {}", j.id, j.status.as_deref().unwrap_or("started"));
                tagged(j.seq, &what, &j.ts, rewound(r), &j.command)
            }
        });
    }
    printer.out(&blocks.join("\n"))?;
    Ok(Status::Success)
}

/// The request the model would be sent next, built by the agent's own
/// request builder for the session's project (`--model`/`--profile`
/// honoured); `--json` prints the exact request body.
pub(super) fn show_effective(
    printer: &mut Printer,
    global: &GlobalArgs,
    id: &SessionId,
) -> anyhow::Result<Status> {
    let eff = eonyx_agent::effective_request(
        &Env::from_process(),
        global.model.clone(),
        global.profile.clone(),
        id,
    )?;
    for w in &eff.warnings {
        printer.warn(w);
    }
    if global.json {
        // The request body exactly as sent: its keys in the provider's order.
        printer.outln(&serde_json::to_string_pretty(&eff.body)?)?;
        return Ok(Status::Success);
    }
    let mut blocks = vec![format!("[system]\n{}\n", eff.request.system.text())];
    // A native compaction's items go first, abbreviated
    // (docs/compaction.md#native-compaction).
    if let Some(n) = &eff.request.native {
        blocks.push(format!(
            "[compacted by the provider · {} {} · {} item(s), {} bytes opaque]\n{}\n",
            n.provider.as_str(),
            n.model,
            n.items.len(),
            n.opaque_bytes(),
            eonyx_core::text::ellipsize(&n.display(), 400)
        ));
    }
    blocks.extend(eff.request.messages.iter().map(view_block));
    printer.out(&blocks.join("\n"))?;
    Ok(Status::Success)
}

/// A message as the model receives it: `[ROLE · result of ID]`, its text
/// and tool calls.
fn view_block(m: &eonyx_core::Message) -> String {
    block("", m, "")
}

/// What a compaction kept verbatim besides its summary: the user's pins
/// and `## What the user said` (docs/compaction.md#what-the-user-said),
/// each followed by a blank line; empty when neither.
fn kept_verbatim(c: &eonyx_core::CompactionRecord) -> String {
    let mut out = String::new();
    for part in [
        eonyx_core::pin::pinned_pins(&c.pins),
        c.user_words_text().to_owned(),
    ] {
        if !part.is_empty() {
            out.push_str(&part);
            out.push_str("\n\n");
        }
    }
    out
}
