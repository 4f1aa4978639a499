//! What both readable formats show, read once from a session's records:
//! the header facts, the totals, which records a rewind left out, the tool
//! call each result answers, and the chart's points and compaction marks
//! (docs/session-format.md#readable-exports).

use std::borrow::Cow;
use std::collections::HashMap;

use eonyx_core::record::{
    ForkedFrom, ParsedLine, Record, RewindRecord, SessionHeader, TitleRecord,
};
use eonyx_core::timeline::Timeline;
use eonyx_core::tool::TaskHeader;
use eonyx_core::{
    CompactionRecord, CompactionTrigger, Content, Message, MessageRecord, ModelRecord, Role,
    ToolCall, ToolName, Usage,
};

use crate::Options;
use crate::date::short_date;
use crate::out::Out;

/// Tool results longer than this many characters are cut in the export.
pub(crate) const RESULT_MAX_CHARS: usize = 4000;
/// Tool results longer than this many lines are cut in the export.
pub(crate) const RESULT_MAX_LINES: usize = 60;

/// A session as far as it was read: the header facts, the totals and
/// the chart grow record by record while each record is rendered
/// ([`entry`]) and dropped, so that a long session never sits whole in
/// memory. Which records rewinds left out is known from the start
/// ([`rewinds`]).
pub(crate) struct Session {
    pub header: SessionHeader,
    /// The current title (the header's, or the last rename).
    pub title: String,
    /// The last message, compaction or rewind time (else `created`).
    pub last_activity: String,
    timeline: Timeline,
    /// Tool name by call id, of the calls read so far.
    calls: HashMap<String, String>,
    pub totals: Totals,
    pub chart: Chart,
    pub opts: Options,
    /// Characters per token, for estimates.
    cpt: f64,
    /// What the next request holds: the last known size, and the messages
    /// since, only estimated when a request has no reported size (most
    /// have one).
    known: u64,
    since: Vec<Message>,
}

/// Counts over the whole file (rewound records included: they happened).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Totals {
    pub messages: u64,
    pub rewound: u64,
    /// Model requests (assistant messages).
    pub requests: u64,
    /// The usage the server reported, summed.
    pub usage: Usage,
    pub compactions: u64,
    pub rewinds: u64,
    pub tasks: u64,
}

/// One main request: the context it used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    /// The seq of the assistant message it produced.
    pub seq: u64,
    pub tokens: u64,
    /// No usage was reported: estimated from the text sent.
    pub estimated: bool,
    /// A later rewind left its reply out.
    pub rewound: bool,
}

/// A compaction on the chart: it falls before point `before`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mark {
    pub seq: u64,
    pub before: usize,
    pub trigger: CompactionTrigger,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// The chart's data.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chart {
    pub points: Vec<Point>,
    pub marks: Vec<Mark>,
    pub window: Option<u64>,
    pub threshold: Option<u64>,
}

impl Session {
    /// A session whose header is `header`; `timeline` from all its
    /// rewinds.
    pub fn new(header: SessionHeader, opts: Options, timeline: Timeline) -> Self {
        let cpt = if opts.chars_per_token.is_finite() && opts.chars_per_token > 0.0 {
            opts.chars_per_token
        } else {
            4.0
        };
        Session {
            title: header.title.clone(),
            last_activity: header.created.clone(),
            header,
            timeline,
            calls: HashMap::new(),
            totals: Totals::default(),
            chart: Chart {
                window: opts.window,
                threshold: opts.threshold,
                ..Chart::default()
            },
            opts,
            cpt,
            known: 0,
            since: Vec::new(),
        }
    }

    /// What must be known of `r` before it is rendered: the calls it makes.
    pub fn before(&mut self, r: &Record) {
        if let Record::Message(m) = r {
            for c in &m.message.tool_calls {
                self.calls.insert(c.id.clone(), c.name.clone());
            }
        }
    }

    /// Count `r` in the totals and the chart, once it is rendered.
    pub fn after(&mut self, r: Record) {
        match r {
            Record::Title(t) => self.title = t.title,
            Record::Message(m) => {
                set(&mut self.last_activity, &m.ts);
                let t = &mut self.totals;
                t.messages += 1;
                t.rewound += u64::from(self.timeline.is_rewound(m.seq));
                t.tasks += m
                    .message
                    .tool_calls
                    .iter()
                    .filter(|c| is_task(&c.name))
                    .count() as u64;
                if m.message.role == Role::Assistant {
                    t.requests += 1;
                    if let Some(u) = &m.message.usage {
                        add_usage(&mut t.usage, u);
                    }
                    self.point(&m);
                } else {
                    self.since.push(m.message);
                }
            }
            Record::Compaction(c) => {
                set(&mut self.last_activity, &c.ts);
                self.totals.compactions += 1;
                self.chart.marks.push(Mark {
                    seq: c.seq,
                    before: self.chart.points.len(),
                    trigger: c.trigger,
                    tokens_before: c.tokens_before,
                    tokens_after: c.tokens_after,
                });
                self.known = c.tokens_after;
                self.since.clear();
            }
            Record::Rewind(w) => {
                set(&mut self.last_activity, &w.ts);
                self.totals.rewinds += u64::from(w.is_effective());
            }
            Record::Goal(g) => set(&mut self.last_activity, &g.ts),
            Record::Pin(p) => set(&mut self.last_activity, &p.ts),
            Record::Session(_) | Record::SummaryDraft(_) | Record::Model(_) | Record::Job(_) => {}
        }
    }

    /// The context of a main request: the prompt tokens the server
    /// reported; where it reported none, the last known size plus an
    /// estimate of what was added since.
    fn point(&mut self, m: &MessageRecord) {
        let (tokens, estimated) = match m.message.usage {
            Some(u) if u.prompt_tokens > 0 => (u.prompt_tokens, false),
            _ => {
                let added: u64 = self.since.iter().map(|m| self.est(m)).sum();
                (self.known + added, true)
            }
        };
        self.chart.points.push(Point {
            seq: m.seq,
            tokens,
            estimated,
            rewound: self.timeline.is_rewound(m.seq),
        });
        self.known = tokens
            + m.message
                .usage
                .map_or_else(|| self.est(&m.message), |u| u.completion_tokens);
        self.since.clear();
    }

    /// A message's size in tokens, estimated from its characters.
    fn est(&self, m: &Message) -> u64 {
        let chars = m.content.text_chars()
            + m.tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments_json().len())
                .sum::<usize>();
        (chars as f64 / self.cpt).ceil() as u64
    }

    /// Whether a rewind left the record with this seq out.
    pub fn is_rewound(&self, seq: u64) -> bool {
        self.timeline.is_rewound(seq)
    }

    /// The name of the tool a result answers (its call read before it).
    pub fn call_of(&self, m: &Message) -> Option<&str> {
        m.tool_call_id
            .as_deref()
            .and_then(|id| self.calls.get(id))
            .map(String::as_str)
    }
}

/// `s` becomes `to`, in the space it has.
fn set(s: &mut String, to: &str) {
    s.clear();
    s.push_str(to);
}

/// The rewinds of a session, gathered from its lines before it is
/// rendered: a rewind changes how the records before it are shown. Only a
/// rewind line is parsed (a line of another type, written type first as
/// eonyx writes it, is known by its first bytes).
#[derive(Default)]
pub(crate) struct Rewinds(Vec<RewindRecord>);

impl Rewinds {
    pub fn line(&mut self, line: &[u8]) {
        if line.starts_with(br#"{"type":""#) && !line.starts_with(br#"{"type":"rewind""#) {
            return;
        }
        if let Ok(ParsedLine::Record(r)) = Record::parse_line(line)
            && let Record::Rewind(w) = *r
        {
            self.0.push(w);
        }
    }

    /// Which records they left out.
    pub fn timeline(&self) -> Timeline {
        Timeline::from_rewinds(&self.0)
    }
}

/// What a format writes for each entry of the transcript; [`walk`] calls
/// them in the file's order.
pub(crate) trait Transcript {
    fn message(&self, out: &mut Out<'_>, s: &Session, m: &MessageRecord);
    fn compaction(&self, out: &mut Out<'_>, s: &Session, c: &CompactionRecord);
    /// A rewind that changed the view.
    fn rewind(&self, out: &mut Out<'_>, w: &RewindRecord);
    fn rename(&self, out: &mut Out<'_>, t: &TitleRecord);
    fn model_switch(&self, out: &mut Out<'_>, m: &ModelRecord);
    /// A goal or pin record (`seq`, `ts`) with what it says
    /// ([`goal_line`], [`pin_line`]).
    fn note(&self, out: &mut Out<'_>, seq: u64, ts: &str, line: &str);
    /// Where a fork's own records start: right after the record copied last.
    fn fork(&self, out: &mut Out<'_>, f: &ForkedFrom);
}

/// One record of the session through `t` (a fork marker after the
/// record it follows); the output passed on as it fills.
pub(crate) fn entry(s: &Session, out: &mut Out<'_>, t: &impl Transcript, r: &Record) {
    match r {
        Record::Message(m) => t.message(out, s, m),
        Record::Compaction(c) => t.compaction(out, s, c),
        Record::Rewind(w) if w.is_effective() => t.rewind(out, w),
        Record::Title(x) => t.rename(out, x),
        Record::Model(m) => t.model_switch(out, m),
        Record::Goal(g) => {
            if let Some(line) = goal_line(g) {
                t.note(out, g.seq, &g.ts, &line);
            }
        }
        Record::Pin(p) => t.note(out, p.seq, &p.ts, &pin_line(p)),
        Record::Session(_) | Record::SummaryDraft(_) | Record::Rewind(_) | Record::Job(_) => {}
    }
    if let Some(f) = &s.header.forked_from
        && r.seq() == Some(f.seq)
    {
        t.fork(out, f);
    }
    out.step();
}

fn add_usage(sum: &mut Usage, u: &Usage) {
    sum.prompt_tokens += u.prompt_tokens;
    sum.completion_tokens += u.completion_tokens;
    sum.cached_tokens += u.cached_tokens;
    sum.cache_write_tokens += u.cache_write_tokens;
    sum.reasoning_tokens += u.reasoning_tokens;
}

/// Whether a call of this tool is a `task` call.
pub(crate) fn is_task(name: &str) -> bool {
    ToolName::parse(name) == Some(ToolName::Task)
}

/// The child session a `task` result names.
pub(crate) fn task_child(result: &Message) -> Option<TaskHeader> {
    TaskHeader::from_result(&result.content.text())
}

/// What a message's reasoning says, one text per part that has readable
/// text (its text, else its summary); encrypted or redacted reasoning
/// alone is left out, as in `sessions show`. Both formats fold it.
pub(crate) fn reasoning(m: &Message) -> impl Iterator<Item = Cow<'_, str>> {
    m.reasoning
        .iter()
        .map(|r| {
            if r.text.is_empty() {
                Cow::Owned(r.readable())
            } else {
                Cow::Borrowed(r.text.as_str())
            }
        })
        .filter(|t| !t.trim().is_empty())
}

/// A message's text as the transcripts show it (images by their label),
/// borrowed when it is one string.
pub(crate) fn body(m: &Message) -> Cow<'_, str> {
    match &m.content {
        Content::Text(t) => Cow::Borrowed(t.as_str()),
        c => Cow::Owned(c.transcript()),
    }
}

/// A tool call's arguments as indented JSON (the raw text when they are
/// not JSON).
pub(crate) fn pretty_args(c: &ToolCall) -> String {
    match &c.arguments {
        serde_json::Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_else(|_| c.arguments_json()),
    }
}

/// A tool result as exported: at most [`RESULT_MAX_LINES`] lines and
/// [`RESULT_MAX_CHARS`] characters, and what was left out.
pub(crate) struct Cut<'t> {
    pub shown: &'t str,
    /// The lines of the whole text (as `str::lines` counts them).
    pub lines: usize,
    /// Lines and bytes left out, when cut.
    pub left_out: Option<(usize, usize)>,
}

pub(crate) fn cut(text: &str) -> Cut<'_> {
    let newlines = count_newlines(text.as_bytes());
    let lines = newlines + usize::from(!text.is_empty() && !text.ends_with('\n'));
    // Most results are short: no more bytes (so no more characters) than
    // the limit and fewer newlines.
    if text.len() <= RESULT_MAX_CHARS && newlines < RESULT_MAX_LINES {
        return Cut {
            shown: text,
            lines,
            left_out: None,
        };
    }
    let mut end = text.len();
    if let Some((i, _)) = text.char_indices().nth(RESULT_MAX_CHARS) {
        end = i;
    }
    if let Some((i, _)) = text[..end]
        .match_indices('\n')
        .nth(RESULT_MAX_LINES.saturating_sub(1))
    {
        end = i;
    }
    if end >= text.len() {
        return Cut {
            shown: text,
            lines,
            left_out: None,
        };
    }
    let rest = &text[end..];
    let rest_lines = rest.trim_start_matches('\n').lines().count();
    Cut {
        shown: &text[..end],
        lines,
        left_out: Some((rest_lines, rest.len())),
    }
}

/// How many `'\n'` bytes `b` holds, counted in runs of 255 (a byte-wide
/// sum per run, which the compiler turns into vector instructions).
fn count_newlines(b: &[u8]) -> usize {
    let mut runs = b.chunks_exact(255);
    let mut n: usize = runs
        .by_ref()
        .map(|run| usize::from(run.iter().fold(0u8, |a, &c| a + u8::from(c == b'\n'))))
        .sum();
    n += runs.remainder().iter().filter(|&&c| c == b'\n').count();
    n
}

/// `…: 120 more lines (8 KB) left out; the JSONL export has all of it`.
pub(crate) fn left_out_note(lines: usize, bytes: usize) -> String {
    format!(
        "… {lines} more line{} ({}) left out here; `eonyx sessions export ID` (JSONL) has all of it",
        if lines == 1 { "" } else { "s" },
        eonyx_core::message::human_bytes(bytes as u64)
    )
}

impl Session {
    /// The header's facts, as label and value, in the order shown.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        let h = &self.header;
        let t = &self.totals;
        let mut rows = vec![
            ("id", h.id.to_string()),
            (
                "model",
                h.model.clone().unwrap_or_else(|| "not recorded".into()),
            ),
            ("project", h.project.clone()),
            ("directory", h.cwd.clone()),
            ("created", short_date(&h.created)),
            ("last activity", short_date(&self.last_activity)),
        ];
        let mut messages = t.messages.to_string();
        if t.rewound > 0 {
            messages.push_str(&format!(" ({} left out by rewinds)", t.rewound));
        }
        rows.push(("messages", messages));
        let u = &t.usage;
        let mut tokens = format!(
            "{} requests · prompt {} · completion {} · cached {}",
            t.requests, u.prompt_tokens, u.completion_tokens, u.cached_tokens
        );
        if u.cache_write_tokens > 0 {
            tokens.push_str(&format!(" · cache written {}", u.cache_write_tokens));
        }
        rows.push(("tokens", tokens));
        if let Some(usd) = self.opts.cost_usd {
            rows.push((
                "cost",
                format!(
                    "{} (reported usage × configured prices, tasks included)",
                    eonyx_core::cost::format_usd(usd)
                ),
            ));
        }
        rows.push(("compactions", t.compactions.to_string()));
        if t.rewinds > 0 {
            rows.push(("rewinds", t.rewinds.to_string()));
        }
        if t.tasks > 0 {
            rows.push(("tasks", t.tasks.to_string()));
        }
        if let Some(f) = &h.forked_from {
            rows.push(("forked from", format!("{} as of #{}", f.id, f.seq)));
        }
        if let Some(p) = &h.parent {
            rows.push((
                "task of",
                format!(
                    "{p} (call {}, profile {})",
                    h.parent_call.as_deref().unwrap_or("?"),
                    h.profile.as_deref().unwrap_or("?")
                ),
            ));
        }
        rows
    }
}

/// A `/model` switch as one line: `Model switched to big, effort high`.
pub(crate) fn model_line(m: &eonyx_core::ModelRecord) -> String {
    match m.reasoning_effort {
        Some(e) => format!("Model switched to {}, effort {}", m.key, e.as_str()),
        None => format!("Model switched to {}", m.key),
    }
}

/// What a goal record says to a reader: the goal set, or its new status
/// with the evidence or reason; `None` for a continuation (the same goal,
/// still active, one more turn used), which would only repeat it.
/// What a pin record says (docs/compaction.md#pins).
pub(crate) fn pin_line(p: &eonyx_core::pin::PinRecord) -> String {
    match p.event {
        eonyx_core::pin::PinEvent::Added => format!("Pinned {}: {}", p.id, p.text),
        eonyx_core::pin::PinEvent::Removed => format!("Unpinned {}: {}", p.id, p.text),
    }
}

pub(crate) fn goal_line(g: &eonyx_core::goal::GoalRecord) -> Option<String> {
    use eonyx_core::goal::GoalStatus;
    if g.status == GoalStatus::Active && g.turns_used > 0 {
        return None;
    }
    let mut line = match g.status {
        GoalStatus::Active => format!("Goal set: {}", g.text),
        other => format!("Goal {}: {}", other.as_str().replace('_', " "), g.text),
    };
    if let Some(e) = &g.evidence {
        line.push_str(&format!(" (evidence: {e})"));
    }
    if let Some(r) = &g.reason {
        line.push_str(&format!(" ({r})"));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_as_str_lines_counts_them() {
        let long = "x\n".repeat(700) + "tail";
        for s in [
            "",
            "a",
            "a\n",
            "\n",
            "a\nb",
            "a\r\nb\r\n",
            "\n\n",
            long.as_str(),
        ] {
            assert_eq!(cut(s).lines, s.lines().count(), "{s:?}");
        }
    }

    #[test]
    fn long_results_are_cut_at_a_line_or_a_char_limit_and_say_how_much() {
        let short = "a\nb";
        assert!(cut(short).left_out.is_none());
        let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let c = cut(&many);
        assert_eq!(c.shown.lines().count(), RESULT_MAX_LINES);
        assert_eq!(c.left_out.map(|l| l.0), Some(100 - RESULT_MAX_LINES));
        let wide = "é".repeat(RESULT_MAX_CHARS + 10);
        let c = cut(&wide);
        assert_eq!(c.shown.chars().count(), RESULT_MAX_CHARS);
        assert_eq!(c.left_out, Some((1, 20)));
        // Exactly the line limit, each line ended: the last newline is cut.
        let full: String = (0..RESULT_MAX_LINES).map(|i| format!("{i}\n")).collect();
        assert_eq!(cut(&full).left_out, Some((0, 1)));
        let under: String = (1..RESULT_MAX_LINES).map(|i| format!("{i}\n")).collect();
        assert!(cut(&under).left_out.is_none());
    }
}
