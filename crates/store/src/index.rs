//! The listing index: one small line per session with what `eonyx sessions`
//! shows and what resuming needs (title, message count, last seq, the
//! header). It is a cache: every entry describes exactly the first `len`
//! bytes of its session file, so an entry is brought up to date by reading
//! only the bytes appended since, and a lost or damaged index is rebuilt
//! from the session files.
//!
//! Format (`<data dir>/index`, tab-separated, `\\`, `\t`, `\n`, `\r` escaped):
//! a first line `eonyx-index 2 <journal epoch> <journal offset> <dir mtime>`,
//! then one line per session. The last activity is kept twice: as written
//! (shown) and as nanoseconds since the epoch (sorted on), so a listing
//! parses no timestamp. An index of another version is not read: it is
//! rebuilt (version 1 had no forks and no rewinds).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom};

use eonyx_core::SessionId;
use eonyx_core::record::{ForkedFrom, ParsedLine, Record, SessionHeader};

use crate::SessionSummary;
use crate::lines::for_each_line;

const MAGIC: &str = "eonyx-index 2";

/// Fields of an entry line.
const FIELDS: usize = 16;

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
    /// `last_activity` in nanoseconds since the epoch (`None`: not RFC 3339).
    pub activity_ns: Option<i128>,
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
            activity_ns: None,
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
                    self.set_activity(h.created.clone());
                    self.header = Some(h);
                }
                Record::Session(_) => self.unknown_lines += 1,
                Record::Message(m) => {
                    self.message_count += 1;
                    self.last_seq = self.last_seq.max(m.seq);
                    self.set_activity(m.ts);
                }
                Record::Title(t) => self.title = t.title,
                Record::Compaction(c) => {
                    self.last_seq = self.last_seq.max(c.seq);
                    self.set_activity(c.ts);
                }
                Record::Rewind(r) => {
                    self.last_seq = self.last_seq.max(r.seq);
                    self.set_activity(r.ts);
                }
            },
            Ok(ParsedLine::Unknown(_)) => self.unknown_lines += 1,
            Err(_) => self.bad_lines += 1,
        }
    }

    fn set_activity(&mut self, ts: String) {
        self.activity_ns = eonyx_core::time::parse_rfc3339(&ts).map(|t| t.as_nanosecond());
        self.last_activity = ts;
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
        let fields: [String; FIELDS - 1] = [
            self.id.to_string(),
            self.len.to_string(),
            self.message_count.to_string(),
            self.last_seq.to_string(),
            self.activity_ns
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
            self.bad_lines.to_string(),
            self.unknown_lines.to_string(),
            h.map_or_else(|| "-".to_owned(), |h| h.version.to_string()),
            escape(h.map_or("", |h| &h.title)),
            escape(h.map_or("", |h| &h.created)),
            escape(h.map_or("", |h| &h.cwd)),
            escape(h.map_or("", |h| &h.project)),
            escape(h.and_then(|h| h.model.as_deref()).unwrap_or("")),
            h.and_then(|h| h.forked_from.as_ref())
                .map_or_else(|| "-".to_owned(), encode_fork),
            escape(&self.title),
        ];
        out.push_str(&fields.join("\t"));
        out.push('\t');
        out.push_str(&escape(&self.last_activity));
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
                Some(SessionHeader {
                    version,
                    id: id.clone(),
                    title: unescape(f[8]),
                    created: unescape(f[9]),
                    cwd: unescape(f[10]),
                    project: unescape(f[11]),
                    model: (!model.is_empty()).then_some(model),
                    forked_from: decode_fork(f[13])?,
                })
            }
        };
        Some(Entry {
            id,
            len: n.len,
            message_count: n.message_count,
            last_seq: n.last_seq,
            activity_ns: n.activity_ns,
            bad_lines: n.bad_lines,
            unknown_lines: n.unknown_lines,
            header,
            title: unescape(f[14]),
            last_activity: unescape(f[15]),
        })
    }
}

/// `id:seq` or `id:seq:root`.
fn encode_fork(f: &ForkedFrom) -> String {
    match &f.root {
        Some(root) => format!("{}:{}:{root}", f.id, f.seq),
        None => format!("{}:{}", f.id, f.seq),
    }
}

/// `Some(None)` for `-`; `None` when damaged.
fn decode_fork(s: &str) -> Option<Option<ForkedFrom>> {
    if s == "-" {
        return Some(None);
    }
    let mut parts = s.split(':');
    let id = SessionId::parse(parts.next()?).ok()?;
    let seq = parts.next()?.parse().ok()?;
    let root = match parts.next() {
        Some(r) => Some(SessionId::parse(r).ok()?),
        None => None,
    };
    if parts.next().is_some() {
        return None;
    }
    Some(Some(ForkedFrom { id, seq, root }))
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
    activity_ns: Option<i128>,
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
            activity_ns: parse_opt_num(f[4])?,
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

fn parse_opt_num<N: std::str::FromStr>(s: &str) -> Option<Option<N>> {
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
            out.push(SessionSummary {
                id,
                title: unescape(f[14]),
                created: unescape(f[9]),
                last_activity: unescape(f[15]),
                message_count: n.message_count,
                project: unescape(f[11]),
                cwd: unescape(f[10]),
                activity_ns: n.activity_ns,
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
        assert_eq!(
            e.activity_ns,
            eonyx_core::time::parse_rfc3339("2026-07-05T09:18:00Z").map(|t| t.as_nanosecond())
        );
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
    fn damaged_index_is_rejected_or_its_bad_lines_dropped() {
        assert!(Index::parse(b"nonsense\n").is_none());
        assert!(Index::parse(&[0xff, 0xfe]).is_none());
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
        a.header.as_mut().unwrap().forked_from = Some(ForkedFrom {
            id: SessionId::parse("20260101T000000-0000000f").unwrap(),
            seq: 12,
            root: Some(SessionId::parse("20251231T000000-00000001").unwrap()),
        });
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
        // The fork's header round-trips.
        assert_eq!(idx.entries[&e[0].id], e[0]);
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
