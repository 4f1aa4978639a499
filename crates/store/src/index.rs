//! The listing index: one small line per session with what `eonyx sessions`
//! shows and what resuming needs (title, message count, last seq, the
//! header). It is a cache: every entry describes exactly the first `len`
//! bytes of its session file, so an entry is brought up to date by reading
//! only the bytes appended since, and a lost or damaged index is rebuilt
//! from the session files.
//!
//! Format (`<data dir>/index`, tab-separated, `\\`, `\t`, `\n`, `\r` escaped):
//! a first line `eonyx-index 3 <journal epoch> <journal offset> <dir mtime>`,
//! then one line per session. The last activity is kept twice: as written
//! (shown) and as nanoseconds since the epoch (sorted on), so a listing
//! parses no timestamp. Fields 16–18 are a child session's `parent`,
//! `parent_call` and `profile`. An index of another version is not read:
//! it is rebuilt (version 1 knew no child sessions, version 2 no forks,
//! rewinds or sort key).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom};

use eonyx_core::SessionId;
use eonyx_core::record::{ForkedFrom, ParsedLine, Record, SessionHeader};

use crate::lines::for_each_line;

const MAGIC: &str = "eonyx-index 3";

/// Fields of an entry line.
pub(crate) const FIELDS: usize = 19;

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
                // A model switch is a setting, not activity.
                Record::Model(_) => {}
                Record::Compaction(c) => {
                    self.last_seq = self.last_seq.max(c.seq);
                    self.set_activity(c.ts);
                }
                Record::Rewind(r) => {
                    self.last_seq = self.last_seq.max(r.seq);
                    self.set_activity(r.ts);
                }
                Record::Goal(g) => {
                    self.last_seq = self.last_seq.max(g.seq);
                    self.set_activity(g.ts);
                }
                // A job's start or exit takes a seq; its exit may come
                // while the session sits idle, so it is no activity.
                Record::Job(j) => self.last_seq = self.last_seq.max(j.seq),
                Record::Pin(p) => {
                    self.last_seq = self.last_seq.max(p.seq);
                    self.set_activity(p.ts);
                }
                // A draft takes a seq but is no activity of the user's: it
                // is written while the session sits idle.
                Record::SummaryDraft(d) => self.last_seq = self.last_seq.max(d.seq),
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
        let fields: [String; 15] = [
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
                    forked_from: decode_fork(f[13])?,
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

/// A child session's link to its parent (fields 16–18; empty when none).
struct Link {
    parent: Option<SessionId>,
    parent_call: Option<String>,
    profile: Option<String>,
}

impl Link {
    /// `None` when the parent field is not a session id.
    fn parse(f: &[&str; FIELDS]) -> Option<Link> {
        let opt = |s: &str| (!s.is_empty()).then(|| unescape(s));
        let parent = match f[16] {
            "" => None,
            p => Some(SessionId::parse(p).ok()?),
        };
        Some(Link {
            parent,
            parent_call: opt(f[17]),
            profile: opt(f[18]),
        })
    }
}

/// The fields of an entry line, split without allocating.
pub(crate) fn split_fields(line: &str) -> Option<[&str; FIELDS]> {
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
pub(crate) struct Numbers {
    len: u64,
    pub message_count: u64,
    last_seq: u64,
    pub activity_ns: Option<i128>,
    bad_lines: u64,
    unknown_lines: u64,
    /// `None`: the file has no session header.
    pub version: Option<u32>,
}

impl Numbers {
    pub(crate) fn parse(f: &[&str; FIELDS]) -> Option<Numbers> {
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

pub(crate) fn unescape(s: &str) -> String {
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

/// The whole index in memory. Entry lines are kept as read and decoded
/// only when asked for, so bringing a large index up to date costs about
/// the lines that changed, not a decode and encode of every entry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    /// Journal epoch the offset refers to (empty: none).
    pub epoch: String,
    pub journal_offset: u64,
    /// mtime of the sessions directory (ns) when it was last listed; 0
    /// means "list it again".
    pub dir_mtime: u128,
    /// The entry lines as read (slots point into it).
    body: String,
    entries: BTreeMap<SessionId, Slot>,
    /// Read from a file with damaged, duplicate or out-of-order lines:
    /// check the directory and save it again. Not stored.
    pub dirty: bool,
}

/// One entry: a checked line of `Index::body`, or decoded (changed).
#[derive(Debug, Clone)]
enum Slot {
    Line(std::ops::Range<usize>),
    Entry(Box<Entry>),
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
            body: body.to_owned(),
            entries: BTreeMap::new(),
            dirty: false,
        };
        let mut entries: Vec<(SessionId, Slot)> =
            Vec::with_capacity(memchr::memchr_iter(b'\n', body.as_bytes()).count());
        let mut start = 0;
        for line in body.split_terminator('\n') {
            let range = start..start + line.len();
            start = range.end + 1;
            match check(line) {
                Some(id) => {
                    let in_order = entries.last().is_none_or(|(prev, _)| *prev < id);
                    idx.dirty |= !in_order;
                    entries.push((id, Slot::Line(range)));
                }
                None => idx.dirty = true,
            }
        }
        // Built in bulk (lines are normally in id order); for equal ids
        // the last one is kept.
        idx.entries = entries.into_iter().collect();
        Some(idx)
    }

    /// The entry of `id`, decoded.
    pub fn get(&self, id: &SessionId) -> Option<Entry> {
        self.decode(self.entries.get(id)?)
    }

    fn decode(&self, slot: &Slot) -> Option<Entry> {
        match slot {
            Slot::Line(r) => Entry::decode(self.body.get(r.clone())?),
            Slot::Entry(e) => Some((**e).clone()),
        }
    }

    pub fn insert(&mut self, e: Entry) {
        self.entries.insert(e.id.clone(), Slot::Entry(Box::new(e)));
    }

    /// Whether there was an entry to remove.
    pub fn remove(&mut self, id: &SessionId) -> bool {
        self.entries.remove(id).is_some()
    }

    pub fn contains(&self, id: &SessionId) -> bool {
        self.entries.contains_key(id)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keep only the entries whose id passes `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&SessionId) -> bool) {
        self.entries.retain(|id, _| keep(id));
    }

    /// Every entry, decoded, in id order.
    pub fn all(&self) -> impl Iterator<Item = Entry> + '_ {
        self.entries.values().filter_map(|s| self.decode(s))
    }

    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(64 + self.body.len() + self.entries.len() * 16);
        out.push_str(&head_line(&self.epoch, self.journal_offset, self.dir_mtime));
        for slot in self.entries.values() {
            match slot {
                Slot::Line(r) => {
                    out.push_str(self.body.get(r.clone()).unwrap_or_default());
                    out.push('\n');
                }
                Slot::Entry(e) => e.encode(&mut out),
            }
        }
        out
    }
}

/// The first line of an index file, with its newline.
pub(crate) fn head_line(epoch: &str, journal_offset: u64, dir_mtime: u128) -> String {
    format!("{MAGIC}\t{epoch}\t{journal_offset}\t{dir_mtime}\n")
}

/// The id of an entry line that decodes, checked without decoding it.
fn check(line: &str) -> Option<SessionId> {
    let f = split_fields(line)?;
    Numbers::parse(&f)?;
    decode_fork(f[13])?;
    SessionId::parse(f[0]).ok()
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

/// Raw index bytes with `id`'s line replaced by `entry` (or removed), in
/// place, so the lines stay in id order.
pub(crate) fn upsert_raw(bytes: &[u8], id: &SessionId, entry: Option<&Entry>) -> Option<Vec<u8>> {
    // Only edit an index whose first line we recognise.
    if !bytes.starts_with(MAGIC.as_bytes()) {
        return None;
    }
    let mut line = String::new();
    if let Some(e) = entry {
        e.encode(&mut line);
    }
    let mut out = Vec::with_capacity(bytes.len() + line.len());
    let (before, after) = match entry_span(bytes, id) {
        Some((s, e)) => (&bytes[..s], bytes.get(e + 1..).unwrap_or_default()),
        None => bytes.split_at(insertion_point(bytes, id)),
    };
    out.extend_from_slice(before);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(after);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    Some(out)
}

/// The entry lines of `body` with the lines of the ids in `changes`
/// replaced (`None`: removed; an id not there yet goes in its place), in
/// one pass. `None` when the body's lines are not in strictly increasing
/// id order (the caller repairs the index instead).
pub(crate) fn patch_lines(
    body: &str,
    changes: &BTreeMap<SessionId, Option<Entry>>,
) -> Option<String> {
    let mut out = String::with_capacity(body.len() + changes.len() * 160);
    let mut pending = changes.iter().peekable();
    let put = |out: &mut String, e: &Option<Entry>| {
        if let Some(e) = e {
            e.encode(out);
        }
    };
    let mut prev = "";
    for line in body.split_terminator('\n') {
        let id = line.split('\t').next().unwrap_or("");
        if id <= prev {
            return None;
        }
        prev = id;
        while let Some((_, e)) = pending.next_if(|(k, _)| k.as_str() < id) {
            put(&mut out, e);
        }
        match pending.next_if(|(k, _)| k.as_str() == id) {
            Some((_, e)) => put(&mut out, e),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    for (_, e) in pending {
        put(&mut out, e);
    }
    Some(out)
}

/// Where a line for `id` goes among the entry lines of `bytes`: before the
/// first line with a greater id (the end when there is none).
fn insertion_point(bytes: &[u8], id: &SessionId) -> usize {
    let id = id.as_str().as_bytes();
    let mut at = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
    while at < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
        let line_id = &bytes[at..end];
        let line_id = &line_id[..memchr::memchr(b'\t', line_id).unwrap_or(line_id.len())];
        if line_id > id {
            return at;
        }
        at = end + 1;
    }
    bytes.len()
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
