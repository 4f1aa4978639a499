//! The listing as rows read straight from the index text: each row is the
//! offsets of its fields in that text and its numbers, so listing 10,000
//! sessions allocates nothing per session (only a field with an escape is
//! copied) and parses no timestamp (the index keeps the sort key as a
//! number). `eonyx sessions` renders from these rows; [`Listing::into_summaries`]
//! makes the owned [`SessionSummary`]s of `Store::list`.

use std::borrow::Cow;

use eonyx_core::SessionId;

use crate::SessionSummary;
use crate::index::{FIELDS, Head, unescape};

/// A field of a row: its byte range in the index text.
#[derive(Debug, Clone, Copy)]
struct Span(u32, u32);

/// 88 bytes: the sort moves little and 10,000 rows touch few pages.
#[derive(Debug, Clone, Copy)]
struct Row {
    id: Span,
    title: Span,
    created: Span,
    last_activity: Span,
    project: Span,
    cwd: Span,
    /// Empty for a top-level session.
    parent: Span,
    profile: Span,
    message_count: u64,
    /// Direct child sessions (counted once all rows are read).
    children: u32,
    /// Bit `i` set: field `i` of the index line holds an escape (found in
    /// the parse's one pass, so a row is made without scanning its text).
    escaped: u32,
    /// The last activity in ns since the epoch (as i64: good until 2262),
    /// `i64::MIN` when unknown (sorts last).
    key: i64,
}

/// Every readable session, newest activity first (by the time of the last
/// record, as a point in time; equal times by id, newest first).
#[derive(Debug, Clone, Default)]
pub struct Listing {
    text: String,
    rows: Vec<Row>,
}

/// One listed session, borrowed from a [`Listing`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow<'a> {
    pub id: &'a str,
    pub title: Cow<'a, str>,
    /// RFC 3339 UTC.
    pub created: Cow<'a, str>,
    /// RFC 3339 UTC: the last message, compaction or rewind (else `created`).
    pub last_activity: Cow<'a, str>,
    /// Message records in the file (compactions and rewinds keep them all).
    pub message_count: u64,
    pub project: Cow<'a, str>,
    pub cwd: Cow<'a, str>,
    /// For a child session (a `task`'s): the session that started it.
    pub parent: Option<&'a str>,
    /// For a child session: the profile it ran with.
    pub profile: Option<Cow<'a, str>>,
    /// Child sessions this session started (direct ones).
    pub children: u64,
}

impl Listing {
    /// The listing of index text (its head line included). `None` when a
    /// line has the wrong number of fields, a damaged id, count, time or
    /// version, or is duplicated or out of order: the caller repairs the
    /// index and asks again. (The fields the listing does not show are
    /// checked when their entry is next brought up to date.)
    pub(crate) fn parse(text: String) -> Option<Listing> {
        u32::try_from(text.len()).ok()?;
        let (_, body) = Head::parse(text.as_bytes())?;
        let bytes = text.as_bytes();
        let body_start = bytes.len() - body.len();
        let mut rows = Vec::with_capacity(body.len() / 96 + 1);
        let mut f = [Span(0, 0); FIELDS];
        let mut n = 0;
        let mut escaped = 0u32;
        let mut start = body_start;
        let mut prev = Span(0, 0);
        let field = |s: Span| &text[s.0 as usize..s.1 as usize];
        // One pass over the text for tabs, newlines and escapes (the end of
        // the text ends a last line without a newline). A plain loop:
        // separators come every few bytes, where memchr's setup per match
        // costs more.
        let ends = bytes[body_start..]
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, b'\t' | b'\n' | b'\\'))
            .map(|(i, _)| body_start + i)
            .chain(
                (bytes.last() != Some(&b'\n') && bytes.len() > body_start).then_some(bytes.len()),
            );
        for end in ends {
            if end < bytes.len() && bytes[end] == b'\\' {
                // FIELDS < 32; a line with more fields fails below.
                escaped |= 1u32.checked_shl(n as u32).unwrap_or(0);
                continue;
            }
            *f.get_mut(n)? = Span(start as u32, end as u32);
            n += 1;
            start = end + 1;
            if end < bytes.len() && bytes[end] == b'\t' {
                continue;
            }
            if n != FIELDS {
                return None;
            }
            n = 0;
            let line_escaped = std::mem::take(&mut escaped);
            let id = field(f[0]);
            // Strictly increasing ids: no duplicates, nothing out of order.
            if !SessionId::is_valid(id) || id <= field(prev) {
                return None;
            }
            prev = f[0];
            let message_count = field(f[2]).parse().ok()?;
            let key = match field(f[4]) {
                "-" => i64::MIN,
                ns => ns
                    .parse::<i128>()
                    .ok()?
                    .clamp(i64::MIN as i128 + 1, i64::MAX as i128) as i64,
            };
            match field(f[7]) {
                // No session header: not listed.
                "-" => continue,
                v => v.parse::<u32>().ok()?,
            };
            let parent = field(f[16]);
            if !parent.is_empty() && !SessionId::is_valid(parent) {
                return None;
            }
            rows.push(Row {
                id: f[0],
                title: f[14],
                created: f[9],
                last_activity: f[15],
                project: f[11],
                cwd: f[10],
                parent: f[16],
                profile: f[18],
                message_count,
                children: 0,
                escaped: line_escaped,
                key,
            });
        }
        if n != 0 {
            return None;
        }
        // Children per parent: only when there are child sessions at all.
        if rows.iter().any(|r| r.parent.1 > r.parent.0) {
            let mut counts: std::collections::HashMap<&str, u32> = Default::default();
            for r in &rows {
                if r.parent.1 > r.parent.0 {
                    *counts.entry(field(r.parent)).or_default() += 1;
                }
            }
            for r in &mut rows {
                r.children = counts.get(field(r.id)).copied().unwrap_or(0);
            }
        }
        // Ids are unique, so the order is total and an unstable sort gives
        // the same result every time; an unparsable time sorts last.
        rows.sort_unstable_by(|a, b| b.key.cmp(&a.key).then_with(|| field(b.id).cmp(field(a.id))));
        Some(Listing { text, rows })
    }

    /// The largest message count (for the width of a column).
    pub fn max_message_count(&self) -> u64 {
        self.rows.iter().map(|r| r.message_count).max().unwrap_or(0)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The sessions, newest activity first.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = SessionRow<'_>> + '_ {
        self.rows.iter().map(|r| self.row(r))
    }

    fn row(&self, r: &Row) -> SessionRow<'_> {
        let raw = |s: Span| &self.text[s.0 as usize..s.1 as usize];
        // `i`: the field's place in the index line (see [`Listing::parse`]).
        let text = |s: Span, i: u32| {
            let t = raw(s);
            if r.escaped & (1 << i) != 0 {
                Cow::Owned(unescape(t))
            } else {
                Cow::Borrowed(t)
            }
        };
        let opt = |s: Span, i: u32| (s.1 > s.0).then(|| text(s, i));
        SessionRow {
            id: raw(r.id),
            title: text(r.title, 14),
            created: text(r.created, 9),
            last_activity: text(r.last_activity, 15),
            message_count: r.message_count,
            project: text(r.project, 11),
            cwd: text(r.cwd, 10),
            parent: (r.parent.1 > r.parent.0).then(|| raw(r.parent)),
            profile: opt(r.profile, 18),
            children: u64::from(r.children),
        }
    }

    /// The sessions as owned summaries, newest activity first.
    pub fn into_summaries(self) -> Vec<SessionSummary> {
        let mut out = Vec::with_capacity(self.rows.len());
        for r in &self.rows {
            if let Some(mut s) = SessionSummary::from_row(&self.row(r)) {
                s.activity_ns = (r.key != i64::MIN).then_some(i128::from(r.key));
                out.push(s);
            }
        }
        out
    }
}

impl SessionSummary {
    pub(crate) fn from_row(row: &SessionRow<'_>) -> Option<SessionSummary> {
        Some(SessionSummary {
            id: SessionId::parse(row.id).ok()?,
            title: row.title.clone().into_owned(),
            created: row.created.clone().into_owned(),
            last_activity: row.last_activity.clone().into_owned(),
            message_count: row.message_count,
            project: row.project.clone().into_owned(),
            cwd: row.cwd.clone().into_owned(),
            parent: match row.parent {
                Some(p) => Some(SessionId::parse(p).ok()?),
                None => None,
            },
            profile: row.profile.as_ref().map(|p| p.clone().into_owned()),
            children: row.children,
            activity_ns: None,
        })
    }

    /// This summary as a row (for code that shows both alike).
    pub fn row(&self) -> SessionRow<'_> {
        SessionRow {
            id: self.id.as_str(),
            title: Cow::Borrowed(&self.title),
            created: Cow::Borrowed(&self.created),
            last_activity: Cow::Borrowed(&self.last_activity),
            message_count: self.message_count,
            project: Cow::Borrowed(&self.project),
            cwd: Cow::Borrowed(&self.cwd),
            parent: self.parent.as_ref().map(SessionId::as_str),
            profile: self.profile.as_deref().map(Cow::Borrowed),
            children: self.children,
        }
    }
}
