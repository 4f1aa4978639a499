//! The HTML page (docs/session-format.md#readable-exports): one file with
//! inline CSS and the inline SVG chart, no script and nothing loaded from
//! anywhere, light or dark by `prefers-color-scheme`, reasoning and tool
//! output folded in `<details>`. Every text of the session is escaped.

use std::fmt::Write as _;

use eonyx_core::{
    CompactionRecord, ForkedFrom, MessageRecord, ModelRecord, RewindRecord, Role, TitleRecord,
};

use crate::date;
use crate::escape::escape;
use crate::model::{self, Session, Transcript};
use crate::out::Out;

const STYLE: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1c1e22; --muted: #5d646e; --line: #d8dce2;
  --user: #eef3fd; --assistant: #f6f6f7; --tool: #fafaf5; --accent: #2458d3; --compaction: #7a3fd6;
  --threshold: #c4362b; --window: #5d646e; --code: #f1f2f4; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15171a; --fg: #e4e6ea; --muted: #99a1ab; --line: #33373d; --user: #1b2536;
    --assistant: #1d1f23; --tool: #1e1f1a; --accent: #7aa2ff; --compaction: #b58cff;
    --threshold: #ff7b6e; --window: #99a1ab; --code: #23262b; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 64rem; padding: 1.5rem; background: var(--bg); color: var(--fg);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 1.5rem; margin: 0 0 .75rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 .75rem; }
h3 { font-size: .95rem; margin: 0 0 .4rem; }
.meta, .muted { color: var(--muted); font-weight: normal; }
table.facts { border-collapse: collapse; font-size: .9rem; }
table.facts th { text-align: left; color: var(--muted); font-weight: normal; padding: .1rem 1rem .1rem 0; vertical-align: top; }
table.facts td { padding: .1rem 0; overflow-wrap: anywhere; }
.text, pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
pre, code { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--code); padding: .5rem .7rem; border-radius: 6px; margin: .35rem 0; }
.entry { border: 1px solid var(--line); border-radius: 8px; padding: .7rem .9rem; margin: .7rem 0; }
.user { background: var(--user); }
.assistant { background: var(--assistant); }
.tool { background: var(--tool); padding: .45rem .9rem; }
.tool summary, details.reasoning summary { cursor: pointer; color: var(--muted); }
.call { margin-top: .5rem; }
.call-name { font-weight: 600; }
.rewound { opacity: .55; border-style: dashed; }
.badge { display: inline-block; font-size: .75rem; border: 1px solid var(--line); border-radius: 999px; padding: 0 .45rem; margin-left: .3rem; color: var(--muted); }
.error .badge-error { color: var(--threshold); border-color: var(--threshold); }
.compaction { border: 2px solid var(--compaction); border-radius: 8px; padding: .7rem .9rem; margin: 1.2rem 0; }
.compaction h3 { color: var(--compaction); }
.rewind, .fork, .rename, .goal { border-left: 4px solid var(--accent); padding: .3rem .8rem; margin: 1rem 0; color: var(--muted); }
.note { color: var(--muted); font-style: italic; margin: .3rem 0 0; }
a { color: var(--accent); }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart .grid { stroke: var(--line); stroke-width: 1; }
svg.chart .axis, svg.chart .label { fill: var(--muted); font: 11px system-ui, sans-serif; }
svg.chart .window { stroke: var(--window); stroke-width: 1.5; }
svg.chart .threshold { stroke: var(--threshold); stroke-width: 1.5; stroke-dasharray: 6 4; }
svg.chart .threshold-label { fill: var(--threshold); }
svg.chart .used { fill: none; stroke: var(--accent); stroke-width: 1.6; }
svg.chart circle.req { fill: var(--accent); stroke: var(--bg); stroke-width: 1; }
svg.chart circle.est { fill: var(--bg); stroke: var(--accent); stroke-width: 1.4; }
svg.chart circle.rewound { opacity: .4; }
svg.chart .mark line { stroke: var(--compaction); stroke-width: 2; }
svg.chart .mark text { fill: var(--compaction); font: 600 11px system-ui, sans-serif; }
.legend { font-size: .85rem; color: var(--muted); margin: .3rem 0 0; }
"#;

/// The page up to its transcript's entries.
pub(crate) fn head(s: &Session, out: &mut Out<'_>) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"color-scheme\" content=\"light dark\">\n<title>");
    escape(out, &format!("Session {} · eonyx", s.title));
    out.push_str("</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<header>\n<h1>");
    escape(out, &format!("Session {}", s.title));
    out.push_str("</h1>\n<table class=\"facts\">\n");
    for (k, v) in s.facts() {
        let _ = write!(out, "<tr><th>{k}</th><td>");
        escape(out, &v);
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n</header>\n<section>\n<h2>Context per request</h2>\n");
    crate::chart::render(out, &s.chart);
    out.push_str("<p class=\"legend\">Each point is one request of this session, as the server reported it (hollow: no usage reported, estimated; faded: a rewind left its reply out). The top line is the window, the dashed line where compaction starts; each violet mark is a compaction, linked to its place below.</p>\n</section>\n<main>\n<h2>Transcript</h2>\n");
}

/// What follows the transcript.
pub(crate) const FOOT: &str = "</main>\n</body>\n</html>\n";

/// The transcript as HTML.
pub(crate) struct Html;

impl Transcript for Html {
    fn message(&self, out: &mut Out<'_>, s: &Session, m: &MessageRecord) {
        message(out, s, m);
    }

    fn compaction(&self, out: &mut Out<'_>, s: &Session, c: &CompactionRecord) {
        compaction(out, s, c);
    }

    fn rewind(&self, out: &mut Out<'_>, w: &RewindRecord) {
        let _ = write!(
            out,
            "<div class=\"rewind\" id=\"r-{}\">Rewind #{} · ",
            w.seq, w.seq
        );
        date::push_date(out, &w.ts);
        let _ = writeln!(
            out,
            ": back to the conversation as of <a href=\"#m-{}\">#{}</a>; what came after stays in the file, shown faded, and the model no longer sees it.</div>",
            w.to_seq, w.to_seq
        );
    }

    fn rename(&self, out: &mut Out<'_>, t: &TitleRecord) {
        out.push_str("<div class=\"rename\">Renamed to ");
        escape(out, &t.title);
        out.push_str(" · ");
        date::push_date(out, &t.ts);
        out.push_str("</div>\n");
    }

    fn model_switch(&self, out: &mut Out<'_>, m: &ModelRecord) {
        out.push_str("<div class=\"rename\">");
        escape(out, &model::model_line(m));
        out.push_str(" · ");
        date::push_date(out, &m.ts);
        out.push_str("</div>\n");
    }

    fn note(&self, out: &mut Out<'_>, seq: u64, ts: &str, line: &str) {
        let _ = write!(out, "<div class=\"goal\" id=\"g-{seq}\">");
        escape(out, line);
        let _ = write!(out, " · #{seq} · ");
        date::push_date(out, ts);
        out.push_str("</div>\n");
    }

    fn fork(&self, out: &mut Out<'_>, f: &ForkedFrom) {
        let _ = writeln!(
            out,
            "<div class=\"fork\">Forked here from session {} (as of #{}); what follows is this session's own.</div>",
            f.id, f.seq
        );
    }
}

fn message(out: &mut Out<'_>, s: &Session, m: &MessageRecord) {
    let msg = &m.message;
    let rewound = s.is_rewound(m.seq);
    let faded = if rewound { " rewound" } else { "" };
    let badge = if rewound {
        "<span class=\"badge\">rewound</span>"
    } else {
        ""
    };
    match msg.role {
        Role::User | Role::Assistant => {
            let who = if msg.role == Role::User {
                "User"
            } else {
                "Assistant"
            };
            let _ = write!(
                out,
                "<article class=\"entry {}{faded}\" id=\"m-{}\">\n<h3>{who} <span class=\"meta\">#{} · ",
                msg.role.as_str(),
                m.seq,
                m.seq
            );
            date::push_date(out, &m.ts);
            out.push_str("</span>");
            out.push_str(badge);
            out.push_str("</h3>\n");
            for r in model::reasoning(msg) {
                out.push_str(
                    "<details class=\"reasoning\"><summary>Reasoning</summary><div class=\"text\">",
                );
                escape(out, &r);
                out.push_str("</div></details>\n");
            }
            let text = model::body(msg);
            if !text.trim().is_empty() {
                out.push_str("<div class=\"text\">");
                escape(out, &text);
                out.push_str("</div>\n");
            }
            for c in &msg.tool_calls {
                out.push_str("<div class=\"call\"><span class=\"call-name\">");
                escape(out, &c.name);
                out.push_str("</span> <span class=\"meta\">call ");
                escape(out, &c.id);
                out.push_str("</span><pre>");
                escape(out, &model::pretty_args(c));
                out.push_str("</pre></div>\n");
            }
            out.push_str("</article>\n");
        }
        Role::Tool => {
            let call = s.call_of(msg);
            let error = if msg.is_error { " error" } else { "" };
            let body = model::body(msg);
            let cut = model::cut(&body);
            let _ = write!(
                out,
                "<details class=\"entry tool{faded}{error}\" id=\"m-{}\"><summary>Result of <code>",
                m.seq
            );
            escape(out, call.unwrap_or("?"));
            let lines = cut.lines;
            let _ = write!(
                out,
                "</code> <span class=\"meta\">#{} · {lines} line{}</span>{badge}{}",
                m.seq,
                if lines == 1 { "" } else { "s" },
                if msg.is_error {
                    "<span class=\"badge badge-error\">error</span>"
                } else {
                    ""
                }
            );
            let task = call
                .filter(|c| model::is_task(c))
                .and_then(|_| model::task_child(msg));
            if let Some(t) = &task {
                out.push_str(" · task session <code>");
                escape(out, &t.session);
                out.push_str("</code>");
            }
            out.push_str("</summary>\n");
            if let Some(t) = &task {
                out.push_str("<p class=\"note\">Its own transcript: <code>eonyx sessions export ");
                escape(out, &t.session);
                out.push_str(" --format html</code> (profile ");
                escape(out, &t.profile);
                let _ = writeln!(
                    out,
                    ", {} step{})</p>",
                    t.steps,
                    if t.steps == 1 { "" } else { "s" }
                );
            }
            out.push_str("<pre>");
            escape(out, cut.shown);
            out.push_str("</pre>\n");
            if let Some((lines, bytes)) = cut.left_out {
                out.push_str("<p class=\"note\">");
                escape(out, &model::left_out_note(lines, bytes));
                out.push_str("</p>\n");
            }
            out.push_str("</details>\n");
        }
    }
}

fn compaction(out: &mut Out<'_>, s: &Session, c: &CompactionRecord) {
    let rewound = s.is_rewound(c.seq);
    let _ = write!(
        out,
        "<section class=\"compaction{}\" id=\"c-{}\">\n<h3>Compaction #{} <span class=\"meta\">· {} · ",
        if rewound { " rewound" } else { "" },
        c.seq,
        c.seq,
        c.trigger.as_str(),
    );
    if let Some(n) = &c.native {
        out.push_str("native (");
        escape(out, n.provider.as_str());
        out.push_str(", ");
        escape(out, &n.model);
        out.push_str(") · ");
    }
    date::push_date(out, &c.ts);
    let _ = writeln!(
        out,
        "</span>{}</h3>\n<p>{} → {} tokens. Messages before <a href=\"#m-{}\">#{}</a> are summarized here; from #{} on they were kept word for word.",
        if rewound {
            "<span class=\"badge\">rewound</span>"
        } else {
            ""
        },
        c.tokens_before,
        c.tokens_after,
        c.first_kept_seq,
        c.first_kept_seq,
        c.first_kept_seq
    );
    if !c.skills.is_empty() {
        out.push_str(" Skills kept loaded: ");
        escape(out, &c.skills.join(", "));
        out.push('.');
    }
    if let Some(f) = &c.focus {
        out.push_str(" Focus: ");
        escape(out, f);
        out.push('.');
    }
    out.push_str("</p>\n<details open><summary>Summary</summary><div class=\"text\">");
    escape(out, &c.summary);
    out.push_str("</div></details>\n");
    // What eonyx kept verbatim besides (docs/compaction.md#what-the-user-said).
    if !c.pins.is_empty() {
        out.push_str("<details open><summary>Pinned by the user</summary><div class=\"text\">");
        escape(out, &eonyx_core::pin::pinned_pins(&c.pins));
        out.push_str("</div></details>\n");
    }
    if let Some(u) = &c.user_words {
        let _ = write!(
            out,
            "<details><summary>What the user said ({} kept, {} left out)</summary><div class=\"text\">",
            u.kept, u.left_out
        );
        escape(out, &u.text);
        out.push_str("</div></details>\n");
    }
    out.push_str("</section>\n");
}
