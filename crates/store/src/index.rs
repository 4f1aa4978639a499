//! The listing index: one small line per session with what `eonyx sessions`
//! shows and what resuming needs (title, message count, last seq, offset of
//! the last compaction record). It is a cache: every entry describes exactly
//! the first `len` bytes of its session file, so an entry is brought up to
//! date by reading only the bytes appended since, and a lost or damaged
//! index is rebuilt from the session files.
//!
//! Format (`<data dir>/index`, tab-separated, `\\`, `\t`, `\n`, `\r` escaped):
//! a first line `eonyx-index 2 <journal epoch> <journal offset> <dir mtime>`,
//! then one line per session (version 2 added a child session's `parent`,
//! `parent_call` and `profile`; an index of another version is rebuilt).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom};

use eonyx_core::SessionId;
use eonyx_core::record::{ParsedLine, Record, SessionHeader};

use crate::SessionSummary;
use crate::lines::for_each_line;

const MAGIC: &str = "eonyx-index 2";

/// Tab-separated fields of an entry line.
const FIELDS: usize = 18;

/// What the index knows about one session file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub id: SessionId,
    /// Bytes of the file this entry describes; always just after a `'\n'`.
    pub len: u64,
    pub header: Option<SessionHeader>,
    pub title: String,
    pub message_count: u64,
    pub last_seq: u64,
    pub last_activity: String,
    pub compaction_offset: Option<u64>,
    pub bad_lines: u64,
    pub unknown_lines: u64,
}

impl Entry {
    pub fn empty(id: SessionId) -> Self {
        Self {
            id,
            len: 0,
            header: None,
            title: String::new(),
            message_count: 0,
            last_seq: 0,
            last_activity: String::new(),
            compaction_offset: None,
            bad_lines: 0,
            unknown_lines: 0,
        }
    }

    /// Account for one complete line at `offset`.
    pub fn apply(&mut self, offset: u64, line: &[u8]) {
        match Record::parse_line(line) {
            Ok(ParsedLine::Record(r)) => match *r {
                Record::Session(h) if offset == 0 => {
                    self.title = h.title.clone();
                    self.last_activity = h.created.clone();
                    self.header = Some(h);
                }
                Record::Session(_) => self.unknown_lines += 1,
                Record::Message(m) => {
                    self.message_count += 1;
                    self.last_seq = self.last_seq.max(m.seq);
                    self.last_activity = m.ts;
                }
                Record::Title(t) => self.title = t.title,
                Record::Compaction(c) => {
                    self.compaction_offset = Some(offset);
                    self.last_seq = self.last_seq.max(c.seq);
                    self.last_activity = c.ts;
                }
                // A draft takes a seq but is no activity of the user's: it
                // is written while the session sits idle.
                Record::SummaryDraft(d) => self.last_seq = self.last_seq.max(d.seq),
            },
            Ok(ParsedLine::Unknown(_)) => self.unknown_lines += 1,
            Err(_) => self.bad_lines += 1,
        }
    }

    /// Read the file from `self.len` on and account for every complete
    /// line. Returns the torn tail length.
    pub fn update_from(&mut self, file: &mut File) -> std::io::Result<u64> {
        file.seek(SeekFrom::Start(self.len))?;
        let (end, tail) = for_each_line(&mut *file, self.len, |off, line| {
            self.apply(off, line);
            true
        })?;
        self.len = end;
        Ok(tail)
    }

    fn encode(&self, out: &mut String) {
        let h = self.header.as_ref();
        let fields: [String; 14] = [
            self.id.to_string(),
            self.len.to_string(),
            self.message_count.to_string(),
            self.last_seq.to_string(),
            opt_num(self.compaction_offset),
            self.bad_lines.to_string(),
            self.unknown_lines.to_string(),
            h.map_or_else(|| "-".to_owned(), |h| h.version.to_string()),
            escape(h.map_or("", |h| &h.title)),
            escape(h.map_or("", |h| &h.created)),
            escape(h.map_or("", |h| &h.cwd)),
            escape(h.map_or("", |h| &h.project)),
            escape(h.and_then(|h| h.model.as_deref()).unwrap_or("")),
            escape(&self.title),
        ];
        out.push_str(&fields.join("\t"));
        out.push('\t');
        out.push_str(&escape(&self.last_activity));
        for extra in [
            h.and_then(|h| h.parent.as_ref()).map_or("", |p| p.as_str()),
            h.and_then(|h| h.parent_call.as_deref()).unwrap_or(""),
            h.and_then(|h| h.profile.as_deref()).unwrap_or(""),
        ] {
            out.push('\t');
            out.push_str(&escape(extra));
        }
        out.push('\n');
    }

    fn decode(line: &str) -> Option<Entry> {
        let f = split_fields(line)?;
        let n = Numbers::parse(&f)?;
        let id = SessionId::parse(f[0]).ok()?;
        let header = match n.version {
            None => None,
            Some(version) => {
                let model = unescape(f[12]);
                let link = Link::parse(&f)?;
                Some(SessionHeader {
                    version,
                    id: id.clone(),
                    title: unescape(f[8]),
                    created: unescape(f[9]),
                    cwd: unescape(f[10]),
                    project: unescape(f[11]),
                    model: (!model.is_empty()).then_some(model),
                    parent: link.parent,
                    parent_call: link.parent_call,
                    profile: link.profile,
                })
            }
        };
        Some(Entry {
            id,
            len: n.len,
            message_count: n.message_count,
            last_seq: n.last_seq,
            compaction_offset: n.compaction_offset,
            bad_lines: n.bad_lines,
            unknown_lines: n.unknown_lines,
            header,
            title: unescape(f[13]),
            last_activity: unescape(f[14]),
        })
    }
}

/// A child session's link to its parent (fields 15–17; empty when none).
struct Link {
    parent: Option<SessionId>,
    parent_call: Option<String>,
    profile: Option<String>,
}

impl Link {
    /// `None` when the parent field is not a session id.
    fn parse(f: &[&str; FIELDS]) -> Option<Link> {
        let opt = |s: &str| (!s.is_empty()).then(|| unescape(s));
        let parent = match f[15] {
            "" => None,
            p => Some(SessionId::parse(p).ok()?),
        };
        Some(Link {
            parent,
            parent_call: opt(f[16]),
            profile: opt(f[17]),
        })
    }
}

/// The fields of an entry line, split without allocating.
fn split_fields(line: &str) -> Option<[&str; FIELDS]> {
    let mut f = [""; FIELDS];
    let mut start = 0;
    let mut n = 0;
    for tab in memchr::memchr_iter(b'\t', line.as_bytes()).chain([line.len()]) {
        *f.get_mut(n)? = line.get(start..tab)?;
        n += 1;
        start = tab + 1;
    }
    (n == f.len()).then_some(f)
}

/// The numeric fields of an entry line; `None` when any is damaged.
struct Numbers {
    len: u64,
    message_count: u64,
    last_seq: u64,
    compaction_offset: Option<u64>,
    bad_lines: u64,
    unknown_lines: u64,
    /// `None`: the file has no session header.
    version: Option<u32>,
}

impl Numbers {
    fn parse(f: &[&str; FIELDS]) -> Option<Numbers> {
        Some(Numbers {
            len: f[1].parse().ok()?,
            message_count: f[2].parse().ok()?,
            last_seq: f[3].parse().ok()?,
            compaction_offset: parse_opt_num(f[4])?,
            bad_lines: f[5].parse().ok()?,
            unknown_lines: f[6].parse().ok()?,
            version: if f[7] == "-" {
                None
            } else {
                Some(f[7].parse().ok()?)
            },
        })
    }
}

fn opt_num(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

fn parse_opt_num(s: &str) -> Option<Option<u64>> {
    if s == "-" {
        Some(None)
    } else {
        s.parse().ok().map(Some)
    }
}

fn escape(s: &str) -> String {
    if !s.contains(['\\', '\t', '\n', '\r']) {
        return s.to_owned();
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            c => o.push(c),
        }
    }
    o
}

fn unescape(s: &str) -> String {
    if memchr::memchr(b'\\', s.as_bytes()).is_none() {
        return s.to_owned();
    }
    let mut o = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('t') => o.push('\t'),
                Some('n') => o.push('\n'),
                Some('r') => o.push('\r'),
                Some(c) => o.push(c),
                None => {}
            }
        } else {
            o.push(c);
        }
    }
    o
}

/// The whole index in memory.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    /// Journal epoch the offset refers to (empty: none).
    pub epoch: String,
    pub journal_offset: u64,
    /// mtime of the sessions directory (ns) when it was last listed; 0
    /// means "list it again".
    pub dir_mtime: u128,
    pub entries: BTreeMap<SessionId, Entry>,
    /// Read from a file with damaged, duplicate or out-of-order lines:
    /// check the directory and save it again. Not stored.
    pub dirty: bool,
}

/// The first line of an index file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    pub epoch: &'a str,
    pub journal_offset: u64,
    pub dir_mtime: u128,
}

impl<'a> Head<'a> {
    /// The first line and the text after it; `None` when the file is not
    /// an index this version wrote.
    pub fn parse(bytes: &'a [u8]) -> Option<(Head<'a>, &'a str)> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (first, body) = text.split_once('\n').unwrap_or((text, ""));
        let mut f = first.split('\t');
        let (magic, epoch, offset, mtime) = (f.next()?, f.next()?, f.next()?, f.next()?);
        if magic != MAGIC || f.next().is_some() {
            return None;
        }
        let head = Head {
            epoch,
            journal_offset: offset.parse().ok()?,
            dir_mtime: mtime.parse().ok()?,
        };
        Some((head, body))
    }
}

/// The listing straight from index text whose head was found current:
/// what `Index::parse` then `summary` would give, without building the
/// entries. `None` when the index is dirty (see [`Index::dirty`]), so the
/// caller takes the full path, which repairs it.
pub(crate) fn summaries(body: &str) -> Option<Vec<SessionSummary>> {
    let mut out = Vec::with_capacity(memchr::memchr_iter(b'\n', body.as_bytes()).count());
    let mut prev = "";
    for line in body.split_terminator('\n') {
        let f = split_fields(line)?;
        let n = Numbers::parse(&f)?;
        // Strictly increasing ids: no duplicates, nothing out of order.
        if f[0] <= prev {
            return None;
        }
        prev = f[0];
        let id = SessionId::parse(f[0]).ok()?;
        if n.version.is_some() {
            let link = Link::parse(&f)?;
            out.push(SessionSummary {
                id,
                title: unescape(f[13]),
                created: unescape(f[9]),
                last_activity: unescape(f[14]),
                message_count: n.message_count,
                project: unescape(f[11]),
                cwd: unescape(f[10]),
                parent: link.parent,
                profile: link.profile,
                children: 0,
            });
        }
    }
    Some(out)
}

impl Index {
    /// Parse an index file. Damaged, duplicate or out-of-order lines are
    /// dropped (a later line wins) and mark the index `dirty`, so that it
    /// is checked against the directory and saved again.
    pub fn parse(bytes: &[u8]) -> Option<Index> {
        let (head, body) = Head::parse(bytes)?;
        let mut idx = Index {
            epoch: head.epoch.to_owned(),
            journal_offset: head.journal_offset,
            dir_mtime: head.dir_mtime,
            entries: BTreeMap::new(),
            dirty: false,
        };
        let mut entries = Vec::with_capacity(memchr::memchr_iter(b'\n', body.as_bytes()).count());
        for line in body.split_terminator('\n') {
            match Entry::decode(line) {
                Some(e) => {
                    let in_order = entries.last().is_none_or(|(prev, _)| *prev < e.id);
                    idx.dirty |= !in_order;
                    entries.push((e.id.clone(), e));
                }
                None => idx.dirty = true,
            }
        }
        // Built in bulk (lines are normally in id order); for equal ids
        // the last one is kept.
        idx.entries = entries.into_iter().collect();
        Some(idx)
    }

    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(64 + self.entries.len() * 256);
        out.push_str(&format!(
            "{MAGIC}\t{}\t{}\t{}\n",
            self.epoch, self.journal_offset, self.dir_mtime
        ));
        for e in self.entries.values() {
            e.encode(&mut out);
        }
        out
    }
}

/// One entry from raw index bytes, without parsing the rest.
pub(crate) fn find_entry(bytes: &[u8], id: &SessionId) -> Option<Entry> {
    let (start, end) = entry_span(bytes, id)?;
    Entry::decode(std::str::from_utf8(&bytes[start..end]).ok()?)
}

/// Byte range of `id`'s line (without its newline).
fn entry_span(bytes: &[u8], id: &SessionId) -> Option<(usize, usize)> {
    let needle = format!("\n{id}\t");
    let at = memchr::memmem::find(bytes, needle.as_bytes())? + 1;
    let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
    Some((at, end))
}

/// Raw index bytes with `id`'s line replaced by `entry` (or removed).
pub(crate) fn upsert_raw(bytes: &[u8], id: &SessionId, entry: Option<&Entry>) -> Option<Vec<u8>> {
    // Only edit an index whose first line we recognise.
    if !bytes.starts_with(MAGIC.as_bytes()) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + 256);
    match entry_span(bytes, id) {
        Some((s, e)) => {
            out.extend_from_slice(&bytes[..s]);
            out.extend_from_slice(bytes.get(e + 1..).unwrap_or_default());
        }
        None => out.extend_from_slice(bytes),
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    if let Some(e) = entry {
        let mut line = String::new();
        e.encode(&mut line);
        out.extend_from_slice(line.as_bytes());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Entry {
        let id = SessionId::parse("20260705T091500-1a2b3c4d").unwrap();
        let mut e = Entry::empty(id.clone());
        e.apply(
            0,
            br#"{"type":"session","version":1,"id":"20260705T091500-1a2b3c4d","title":"1","created":"2026-07-05T09:15:00Z","cwd":"/w\tx","project":"/w"}"#,
        );
        e.apply(200, br#"{"type":"message","seq":1,"ts":"2026-07-05T09:16:00Z","role":"user","content":"hi"}"#);
        e.apply(
            300,
            br#"{"type":"title","title":"a\\b\nc","ts":"2026-07-05T09:17:00Z"}"#,
        );
        e.apply(400, br#"{"type":"compaction","seq":2,"ts":"2026-07-05T09:18:00Z","summary":"s","first_kept_seq":1,"trigger":"manual","tokens_before":1,"tokens_after":1}"#);
        e.apply(500, b"garbage");
        e.apply(600, br#"{"type":"future"}"#);
        e.len = 700;
        e
    }

    #[test]
    fn entry_accounts_records_and_round_trips() {
        let e = sample();
        assert_eq!(e.message_count, 1);
        assert_eq!(e.last_seq, 2);
        assert_eq!(e.title, "a\\b\nc");
        assert_eq!(e.compaction_offset, Some(400));
        assert_eq!(e.last_activity, "2026-07-05T09:18:00Z");
        assert_eq!((e.bad_lines, e.unknown_lines), (1, 1));
        let mut idx = Index {
            epoch: "e1".into(),
            journal_offset: 17,
            dir_mtime: 5,
            ..Index::default()
        };
        idx.entries.insert(e.id.clone(), e.clone());
        let text = idx.encode();
        let back = Index::parse(text.as_bytes()).unwrap();
        assert_eq!(back.entries.get(&e.id), Some(&e));
        assert_eq!((back.epoch.as_str(), back.journal_offset), ("e1", 17));
        assert_eq!(find_entry(text.as_bytes(), &e.id), Some(e.clone()));

        let mut changed = e.clone();
        changed.message_count = 9;
        let raw = upsert_raw(text.as_bytes(), &e.id, Some(&changed)).unwrap();
        assert_eq!(find_entry(&raw, &e.id).unwrap().message_count, 9);
        let removed = upsert_raw(&raw, &e.id, None).unwrap();
        assert_eq!(find_entry(&removed, &e.id), None);
        assert!(Index::parse(&removed).unwrap().entries.is_empty());
    }

    #[test]
    fn a_child_sessions_link_round_trips_and_reaches_the_listing() {
        let id = SessionId::parse("20260705T091600-00000001").unwrap();
        let mut e = Entry::empty(id.clone());
        e.apply(
            0,
            br#"{"type":"session","version":1,"id":"20260705T091600-00000001","title":"1.1","created":"2026-07-05T09:16:00Z","cwd":"/w","project":"/w","parent":"20260705T091500-1a2b3c4d","parent_call":"call\tA","profile":"explore"}"#,
        );
        e.len = 300;
        let text = text_of(&[&e]);
        let back = Index::parse(text.as_bytes()).unwrap();
        assert_eq!(back.entries.get(&id), Some(&e));
        let h = e.header.as_ref().unwrap();
        assert_eq!(h.parent_call.as_deref(), Some("call\tA"));
        let (_, body) = Head::parse(text.as_bytes()).unwrap();
        let listed = summaries(body).unwrap();
        assert_eq!(
            listed[0].parent.as_ref().map(SessionId::as_str),
            Some("20260705T091500-1a2b3c4d")
        );
        assert_eq!(listed[0].profile.as_deref(), Some("explore"));
        // A top-level session has none.
        let top = summaries(text_of(&[&sample()]).split_once('\n').unwrap().1).unwrap();
        assert_eq!(
            (top[0].parent.as_ref(), top[0].profile.as_ref()),
            (None, None)
        );
    }

    #[test]
    fn damaged_index_is_rejected_or_its_bad_lines_dropped() {
        assert!(Index::parse(b"nonsense\n").is_none());
        assert!(Index::parse(&[0xff, 0xfe]).is_none());
        // An index of the previous version is not read (it is rebuilt).
        assert!(Index::parse(b"eonyx-index 1\te\t0\t0\n").is_none());
        let idx = Index::parse(b"eonyx-index 2\te\t0\t0\nnot\tan\tentry\n").unwrap();
        assert!(idx.entries.is_empty());
        assert!(idx.dirty);
        assert!(summaries("not\tan\tentry\n").is_none());
        let idx = Index::parse(b"eonyx-index 2\te\t0\t0").unwrap();
        assert!(idx.entries.is_empty() && !idx.dirty);
    }

    /// Three entries: with a header (escapes in the strings), with a
    /// header and no model, without a header.
    fn three() -> Vec<Entry> {
        let mut a = sample();
        a.header.as_mut().unwrap().cwd = "/w\\x\ty".into();
        let mut b = Entry::empty(SessionId::parse("20260706T000000-00000000").unwrap());
        b.apply(
            0,
            br#"{"type":"session","version":1,"id":"20260706T000000-00000000","title":"2","created":"2026-07-06T00:00:00Z","cwd":"/v","project":"/v"}"#,
        );
        b.len = 150;
        let c = Entry::empty(SessionId::parse("20260707T000000-00000000").unwrap());
        vec![a, b, c]
    }

    fn text_of(entries: &[&Entry]) -> String {
        let mut out = format!("{MAGIC}\te1\t17\t5\n");
        for e in entries {
            e.encode(&mut out);
        }
        out
    }

    #[test]
    fn summaries_from_text_equal_those_from_parsed_entries() {
        let e = three();
        let text = text_of(&[&e[0], &e[1], &e[2]]);
        let idx = Index::parse(text.as_bytes()).unwrap();
        assert!(!idx.dirty);
        let want: Vec<SessionSummary> = idx
            .entries
            .into_values()
            .filter_map(crate::summary)
            .collect();
        assert_eq!(want.len(), 2);
        assert_eq!(want[0].cwd, "/w\\x\ty");
        let (head, body) = Head::parse(text.as_bytes()).unwrap();
        assert_eq!(
            (head.epoch, head.journal_offset, head.dir_mtime),
            ("e1", 17, 5)
        );
        assert_eq!(summaries(body), Some(want));
    }

    #[test]
    fn unordered_or_duplicate_lines_mark_the_index_dirty_and_the_last_wins() {
        let e = three();
        let mut newer = e[1].clone();
        newer.message_count = 7;
        for order in [vec![&e[1], &e[0], &e[2]], vec![&e[0], &e[1], &e[2], &newer]] {
            let text = text_of(&order);
            let idx = Index::parse(text.as_bytes()).unwrap();
            assert!(idx.dirty);
            assert_eq!(idx.entries.len(), 3);
            let (_, body) = Head::parse(text.as_bytes()).unwrap();
            assert_eq!(summaries(body), None);
        }
        let idx = Index::parse(text_of(&[&e[0], &e[1], &e[2], &newer]).as_bytes()).unwrap();
        assert_eq!(idx.entries[&e[1].id].message_count, 7);
    }
}
