//! The Markdown transcript (docs/session-format.md#readable-exports): valid
//! CommonMark whose structure no session text can break. Tool arguments
//! and results go in code fences longer than any backtick run they hold;
//! a message's own Markdown is kept, with a fence it left open closed and
//! a line that would open a raw HTML block escaped; summaries are quoted.

use std::fmt::Write as _;

use eonyx_core::{
    CompactionRecord, ForkedFrom, MessageRecord, ModelRecord, RewindRecord, Role, TitleRecord,
};

use crate::date;
use crate::model::{self, Session, Transcript};
use crate::out::Out;

/// The title and the facts, before the transcript's entries.
pub(crate) fn head(s: &Session, out: &mut Out<'_>) {
    let _ = writeln!(out, "# {}\n", inline(&format!("Session {}", s.title)));
    out.push_str("| | |\n| --- | --- |\n");
    for (k, v) in s.facts() {
        let _ = writeln!(out, "| {k} | {} |", inline(&v));
    }
    out.push('\n');
}

/// The transcript as Markdown.
pub(crate) struct Markdown;

impl Transcript for Markdown {
    fn message(&self, out: &mut Out<'_>, s: &Session, m: &MessageRecord) {
        message(out, s, m);
    }

    fn compaction(&self, out: &mut Out<'_>, s: &Session, c: &CompactionRecord) {
        compaction(out, s, c);
    }

    fn rewind(&self, out: &mut Out<'_>, w: &RewindRecord) {
        let _ = write!(out, "### Rewind · #{} · ", w.seq);
        date::push_date(out, &w.ts);
        let _ = writeln!(
            out,
            "\n\nBack to the conversation as of #{}: what came after stays in the file, marked *rewound* here, and the model no longer sees it.\n",
            w.to_seq
        );
    }

    fn rename(&self, out: &mut Out<'_>, t: &TitleRecord) {
        let _ = write!(out, "*Renamed to {} · ", inline(&t.title));
        date::push_date(out, &t.ts);
        out.push_str("*\n\n");
    }

    fn model_switch(&self, out: &mut Out<'_>, m: &ModelRecord) {
        let _ = write!(out, "*{} · ", inline(&model::model_line(m)));
        date::push_date(out, &m.ts);
        out.push_str("*\n\n");
    }

    fn note(&self, out: &mut Out<'_>, seq: u64, ts: &str, line: &str) {
        let _ = write!(out, "*{} · #{} · ", inline(line), seq);
        date::push_date(out, ts);
        out.push_str("*\n\n");
    }

    fn fork(&self, out: &mut Out<'_>, f: &ForkedFrom) {
        let _ = writeln!(
            out,
            "---\n\n*Forked here from session {} (as of #{}); what follows is this session's own.*\n",
            f.id, f.seq
        );
    }
}

fn message(out: &mut Out<'_>, s: &Session, m: &MessageRecord) {
    let msg = &m.message;
    let rewound = if s.is_rewound(m.seq) {
        " · rewound"
    } else {
        ""
    };
    match msg.role {
        Role::User => {
            heading(out, "User", m, rewound);
            text(out, &model::body(msg));
        }
        Role::Assistant => {
            heading(out, "Assistant", m, rewound);
            for r in model::reasoning(msg) {
                out.push_str("<details>\n<summary>Reasoning</summary>\n\n");
                quote(out, &r);
                out.push_str("</details>\n\n");
            }
            text(out, &model::body(msg));
            for c in &msg.tool_calls {
                let _ = writeln!(
                    out,
                    "**Tool call** `{}` (call `{}`)\n",
                    code_span(&c.name),
                    code_span(&c.id)
                );
                fenced(out, "json", &model::pretty_args(c));
            }
        }
        Role::Tool => {
            let call = s.call_of(msg);
            let name = call.unwrap_or("?");
            let error = if msg.is_error { " · error" } else { "" };
            let _ = writeln!(
                out,
                "### Result of `{}` · #{}{rewound}{error}\n",
                code_span(name),
                m.seq
            );
            if call.is_some_and(model::is_task)
                && let Some(t) = model::task_child(msg)
            {
                let _ = writeln!(
                    out,
                    "Task session `{}` (profile {}, {} step{}); its own transcript: `eonyx sessions export {} --format markdown`\n",
                    t.session,
                    inline(&t.profile),
                    t.steps,
                    if t.steps == 1 { "" } else { "s" },
                    t.session
                );
            }
            let body = model::body(msg);
            let cut = model::cut(&body);
            fenced(out, "text", cut.shown);
            if let Some((lines, bytes)) = cut.left_out {
                let _ = writeln!(out, "*{}*\n", model::left_out_note(lines, bytes));
            }
        }
    }
}

/// `## User · #3 · 2026-07-05 09:15 UTC` and a blank line.
fn heading(out: &mut Out<'_>, who: &str, m: &MessageRecord, rewound: &str) {
    let _ = write!(out, "## {who} · #{}{rewound} · ", m.seq);
    date::push_date(out, &m.ts);
    out.push_str("\n\n");
}

fn compaction(out: &mut Out<'_>, s: &Session, c: &CompactionRecord) {
    let rewound = if s.is_rewound(c.seq) {
        " · rewound"
    } else {
        ""
    };
    let _ = write!(
        out,
        "## Compaction · #{}{rewound} · {}{} · ",
        c.seq,
        c.trigger.as_str(),
        native_mark(c)
    );
    date::push_date(out, &c.ts);
    let _ = writeln!(
        out,
        "\n\n{} → {} tokens. Messages before #{} are summarized below; from #{} on they were kept word for word.",
        c.tokens_before, c.tokens_after, c.first_kept_seq, c.first_kept_seq
    );
    if !c.skills.is_empty() {
        let _ = write!(
            out,
            " Skills kept loaded: {}.",
            inline(&c.skills.join(", "))
        );
    }
    if let Some(f) = &c.focus {
        let _ = write!(out, " Focus: {}.", inline(f));
    }
    out.push_str("\n\n");
    quote(out, &c.summary);
    // What eonyx kept verbatim besides (docs/compaction.md#what-the-user-said).
    for kept in [
        eonyx_core::pin::pinned_pins(&c.pins),
        c.user_words_text().to_owned(),
    ] {
        if !kept.is_empty() {
            quote(out, &kept);
        }
    }
}

/// A message's own Markdown, kept as it is except that `<` outside code is
/// escaped (so `Vec<String>` stays visible and `<pre>`, `<script>` or
/// `<!--` cannot open a raw HTML block that runs to its closing tag), and a
/// fence left open is closed.
fn text(out: &mut String, t: &str) {
    if t.trim().is_empty() {
        return;
    }
    let mut open: Option<(char, usize)> = None;
    // The backtick run of a code span still open (spans may cross lines
    // within a paragraph).
    let mut span: usize = 0;
    for line in t.lines() {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let fence = (indent < 4 && span == 0)
            .then(|| fence_of(trimmed))
            .flatten();
        match (open, fence) {
            (None, Some((ch, n))) => open = Some((ch, n)),
            (Some((ch, n)), Some((c2, n2)))
                if c2 == ch && n2 >= n && trimmed.trim_start_matches(ch).trim().is_empty() =>
            {
                open = None
            }
            (None, None) if indent < 4 => {
                if trimmed.is_empty() {
                    span = 0;
                }
                escape_angles(out, line, &mut span);
                out.push('\n');
                continue;
            }
            _ => {}
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some((ch, n)) = open {
        out.extend(std::iter::repeat_n(ch, n));
        out.push('\n');
    }
    out.push('\n');
}

/// `line` with every `<` outside a code span written `\\<`; `span` is the
/// backtick run of the code span open at its start (0: none) and at its end.
/// Both characters are ASCII: the line is walked as bytes and copied in runs.
fn escape_angles(out: &mut String, line: &str, span: &mut usize) {
    let b = line.as_bytes();
    let (mut last, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'`' => {
                let start = i;
                while b.get(i) == Some(&b'`') {
                    i += 1;
                }
                let n = i - start;
                if *span == 0 {
                    *span = n;
                } else if *span == n {
                    *span = 0;
                }
                continue;
            }
            b'<' if *span == 0 => {
                out.push_str(&line[last..i]);
                out.push('\\');
                last = i;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&line[last..]);
}

/// The fence a line opens or closes: its character and length.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = line.chars().take_while(|c| *c == ch).count();
    let info = &line[n..];
    (n >= 3 && !(ch == '`' && info.contains('`'))).then_some((ch, n))
}

/// `body` in a backtick fence longer than any backtick run inside it.
fn fenced(out: &mut String, info: &str, body: &str) {
    // Most bodies hold no backtick at all (a fast search says so).
    let n = if body.contains('`') {
        longest_run(body, b'`').max(2) + 1
    } else {
        3
    };
    out.extend(std::iter::repeat_n('`', n));
    out.push_str(info);
    out.push('\n');
    out.push_str(body);
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out.extend(std::iter::repeat_n('`', n));
    out.push_str("\n\n");
}

/// Each line quoted (`> `): whatever the text holds ends with the quote.
fn quote(out: &mut String, t: &str) {
    for line in t.lines() {
        if line.is_empty() {
            out.push_str(">\n");
        } else {
            out.push_str("> ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push('\n');
}

/// The longest run of the ASCII byte `ch` in `s`.
fn longest_run(s: &str, ch: u8) -> usize {
    let (mut best, mut cur) = (0, 0);
    for &b in s.as_bytes() {
        if b == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// Text for a heading or a sentence: one line, Markdown's punctuation
/// escaped.
fn inline(t: &str) -> String {
    let mut o = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '\n' | '\r' => o.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!' | '&' => {
                o.push('\\');
                o.push(c);
            }
            c => o.push(c),
        }
    }
    o
}

/// Text inside a single-backtick code span: a backtick cannot end it
/// (replaced by `'`), and a line break is a space.
fn code_span(t: &str) -> String {
    t.replace('`', "'").replace(['\n', '\r'], " ")
}

/// ` · native (anthropic, MODEL)` for a compaction the provider wrote
/// (docs/compaction.md#native-compaction); empty otherwise.
fn native_mark(c: &CompactionRecord) -> String {
    c.native
        .as_ref()
        .map(|n| format!(" · native ({}, {})", n.provider.as_str(), n.model))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_longer_than_any_backtick_run_inside() {
        let mut out = String::new();
        fenced(&mut out, "text", "a\n````\nb");
        assert!(out.starts_with("`````text\n"), "{out}");
        assert!(out.ends_with("\n`````\n\n"), "{out}");
    }

    #[test]
    fn an_open_fence_is_closed_and_raw_html_blocks_are_escaped() {
        let mut out = String::new();
        text(&mut out, "see\n~~~~rust\nfn x() {}\n```\n");
        assert!(out.ends_with("```\n~~~~\n\n"), "{out}");
        let mut out = String::new();
        text(&mut out, "<pre>\nx\n```\n<script>y</script>\n```\n");
        assert!(out.starts_with("\\<pre>\n"), "{out}");
        assert!(
            out.contains("\n<script>y</script>\n"),
            "inside a fence: {out}"
        );
        let mut out = String::new();
        text(&mut out, "a Vec<String> and `Vec<u8>` and ``x ` <y>``");
        assert_eq!(out, "a Vec\\<String> and `Vec<u8>` and ``x ` <y>``\n\n");
    }
}
