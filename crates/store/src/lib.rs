//! Sessions on disk (SPEC §5): append-only JSONL files under
//! `<data dir>/sessions/<id>.jsonl`, with listing, search, rename, delete,
//! export, repair and locking.
//!
//! Invariants:
//! - The store never rewrites a line of a session file. It only appends,
//!   and truncates a torn last line (bytes after the last `'\n'`) before
//!   the next append or in `doctor`. A failed append takes back its own
//!   partial bytes.
//! - Every append is written and fsynced before the call returns; errors
//!   are returned, never swallowed.
//! - A session file appears with its first message (header and message in
//!   one write); a session that never got a message leaves nothing.
//! - One writer per session: an exclusive lock on `locks/<id>.lock`, which
//!   holds the owner's pid; a second writer gets [`StoreError::InUse`].
//! - Titles `1`, `2`, … come from a counter file (`titles`), advanced under
//!   a lock and replaced atomically when a session is born (its first
//!   append), not at `create`; they are never reused, and a session that
//!   never got a message takes none.
//! - "Most recent" is exact: records are stamped with nanosecond precision
//!   and listings sort by the last record's time as a time (ties, only
//!   between whole-second records of older versions, by id), newest first;
//!   `latest_for_project` takes the first of that same list.
//! - Readers skip torn tails, unparsable lines and unknown record types
//!   (counted, never fatal) and never panic on any input.
//! - `index` and `journal` are caches: the index describes a prefix of each
//!   file (so it is refreshed by reading only the appended bytes), the
//!   journal names sessions changed since; both can be deleted at any time
//!   and are rebuilt. Listing never reads whole session files once the
//!   index is warm, and when nothing was noted in the journal and the
//!   directory is unchanged it reads only the index (no per-file stat,
//!   no rewrite); an index with damaged, duplicate or unordered lines is
//!   checked against the directory and saved clean. Resuming reads from
//!   the last compaction record (plus the retained messages just before
//!   it), not the whole file; an entry an open had to compute is saved
//!   (in a new index if there is none), so only the first open of a
//!   never-indexed session reads it all.
//! - The data dir and its directories are created 0700, files 0600 (unix).

mod error;
mod fsutil;
mod index;
mod journal;
pub mod limits;
pub mod lines;
mod lock;
mod recall;
mod search;
mod writer;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::record::{FORMAT_VERSION, ParsedLine, Record, SessionHeader};
use eonyx_core::{CompactionRecord, MessageRecord, SessionId};

pub use error::StoreError;
pub use recall::{RecallHit, RecallOptions, RecallQuery, RecallResult};
pub use writer::SessionWriter;

use index::{Entry, Index};
use lines::{BackwardLines, for_each_line};
use lock::SessionLock;

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionSummary {
    pub id: SessionId,
    pub title: String,
    /// RFC 3339 UTC.
    pub created: String,
    /// RFC 3339 UTC: the last message or compaction (else `created`).
    pub last_activity: String,
    /// Message records in the file (compaction keeps them all).
    pub message_count: u64,
    pub project: String,
    pub cwd: String,
}

/// What the model sees now, plus counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub header: SessionHeader,
    pub title: String,
    pub compaction: Option<CompactionRecord>,
    /// Messages with seq >= the compaction's `first_kept_seq` (all when
    /// there is no compaction), in file order.
    pub messages: Vec<MessageRecord>,
    pub next_seq: u64,
    pub message_count: u64,
}

/// Lines a reader skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Complete lines that are not a well-formed record.
    pub bad_lines: u64,
    /// Well-formed records of a type this version does not know.
    pub unknown_lines: u64,
    /// Bytes after the last `'\n'` (a torn write), ignored.
    pub torn_tail_bytes: u64,
}

/// Every record of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLog {
    /// The first line, when it is a session header.
    pub header: Option<SessionHeader>,
    /// All records in file order, the header included.
    pub records: Vec<Record>,
    pub stats: ReadStats,
}

impl SessionLog {
    /// Parse session file bytes. Never fails: what cannot be read is
    /// counted in `stats`.
    pub fn parse(bytes: &[u8]) -> SessionLog {
        let mut log = SessionLog {
            header: None,
            records: Vec::new(),
            stats: ReadStats::default(),
        };
        let tail = match for_each_line(bytes, 0, |off, line| {
            log.push_line(off, line);
            true
        }) {
            Ok((_, tail)) => tail,
            Err(_) => 0,
        };
        log.stats.torn_tail_bytes = tail;
        log
    }

    fn push_line(&mut self, off: u64, line: &[u8]) {
        match Record::parse_line(line) {
            Ok(ParsedLine::Record(r)) => match *r {
                Record::Session(h) if off == 0 => {
                    self.header = Some(h.clone());
                    self.records.push(Record::Session(h));
                }
                Record::Session(_) => self.stats.unknown_lines += 1,
                r => self.records.push(r),
            },
            Ok(ParsedLine::Unknown(_)) => self.stats.unknown_lines += 1,
            Err(_) => self.stats.bad_lines += 1,
        }
    }
}

/// Outcome for one file in [`Store::doctor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoctorStatus {
    Ok,
    /// A torn last line was cut off.
    Repaired {
        torn_bytes: u64,
    },
    /// The file held no complete line (a crash before the first message
    /// was durable) and was removed.
    RemovedEmpty,
    /// Another process is writing it; not checked.
    InUse {
        pid: Option<u32>,
    },
    /// The file cannot be used as a session.
    Unreadable {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctorFile {
    pub path: Utf8PathBuf,
    pub id: SessionId,
    pub status: DoctorStatus,
    pub bad_lines: u64,
    pub unknown_lines: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DoctorReport {
    pub files: Vec<DoctorFile>,
    /// Files in `sessions/` whose names are not `<id>.jsonl`; left alone.
    pub ignored: Vec<Utf8PathBuf>,
}

impl DoctorReport {
    /// True when every session can be read now.
    pub fn all_readable(&self) -> bool {
        !self
            .files
            .iter()
            .any(|f| matches!(f.status, DoctorStatus::Unreadable { .. }))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    data: Utf8PathBuf,
    sessions: Utf8PathBuf,
    locks: Utf8PathBuf,
    index: Utf8PathBuf,
}

impl Dirs {
    fn session_path(&self, id: &SessionId) -> Utf8PathBuf {
        self.sessions.join(id.file_name())
    }
}

/// Handle on a data dir.
#[derive(Debug, Clone)]
pub struct Store {
    dirs: Dirs,
}

/// Seconds within which a directory mtime may still change unseen.
const RACY_MTIME_NS: u128 = 2_000_000_000;

impl Store {
    /// Open (creating, 0700) the data dir and its `sessions/` and `locks/`.
    pub fn open(data_dir: &Utf8Path) -> Result<Store, StoreError> {
        let dirs = Dirs {
            data: data_dir.to_path_buf(),
            sessions: data_dir.join("sessions"),
            locks: data_dir.join("locks"),
            index: data_dir.join("index"),
        };
        fsutil::create_private_dir(&dirs.data)?;
        fsutil::create_private_dir(&dirs.sessions)?;
        fsutil::create_private_dir(&dirs.locks)?;
        Ok(Store { dirs })
    }

    pub fn data_dir(&self) -> &Utf8Path {
        &self.dirs.data
    }

    /// Path of a session's file (whether or not it exists).
    pub fn session_path(&self, id: &SessionId) -> Utf8PathBuf {
        self.dirs.session_path(id)
    }

    /// New session: allocates the id and takes the lock. Nothing is
    /// written and no title number is taken until the first append (SPEC
    /// §5: a session is born with its first message); until then the
    /// writer's title is the number it expects to take, which a session
    /// born first in another process may take instead.
    pub fn create(
        &self,
        cwd: &Utf8Path,
        project: &Utf8Path,
        model: Option<&str>,
    ) -> Result<SessionWriter, StoreError> {
        let (id, lock) = loop {
            let id = SessionId::generate();
            if self.session_path(&id).exists() {
                continue;
            }
            match SessionLock::acquire(&self.dirs.locks, &id) {
                Ok(lock) => break (id, lock),
                Err(StoreError::InUse { .. }) => continue,
                Err(e) => return Err(e),
            }
        };
        let title = match self.peek_title() {
            Ok(t) => t,
            Err(e) => {
                lock.remove();
                return Err(e);
            }
        };
        let header = SessionHeader {
            version: FORMAT_VERSION,
            id,
            title,
            created: eonyx_core::time::now_rfc3339(),
            cwd: cwd.to_string(),
            project: project.to_string(),
            model: model.map(str::to_owned),
        };
        Ok(SessionWriter::new_session(self.dirs.clone(), header, lock))
    }

    /// Open an existing session for appending. Takes the lock; a torn tail
    /// is cut off before the first append.
    pub fn open_writer(&self, id: &SessionId) -> Result<SessionWriter, StoreError> {
        let path = self.session_path(id);
        if !path.exists() {
            return Err(StoreError::NotFound { id: id.clone() });
        }
        let lock = SessionLock::acquire(&self.dirs.locks, id)?;
        let (entry, _) = self.entry_for(id)?;
        let header = entry.header.clone().ok_or_else(|| StoreError::Unreadable {
            id: id.clone(),
            reason: "its first line is not a session header".into(),
        })?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(StoreError::io("open session file", &path))?;
        let file_len = file
            .metadata()
            .map_err(StoreError::io("read the size of", &path))?
            .len();
        Ok(SessionWriter::existing(
            self.dirs.clone(),
            header,
            entry.title.clone(),
            entry.last_seq,
            file,
            entry.len,
            file_len,
            lock,
        ))
    }

    /// Every readable session, newest activity first: by the time of the
    /// last message or compaction (nanosecond precision, see
    /// `sort_newest_first`). `latest_for_project` (`run -c`) and
    /// `search` use this same order.
    pub fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let current = match self.refresh(false, true)? {
            // Nothing changed since the index was saved: summaries straight
            // from its text.
            Refreshed::Current(raw) => {
                index::Head::parse(&raw).and_then(|(_, body)| index::summaries(body))
            }
            Refreshed::Updated(idx) => Some(summaries(idx)),
        };
        let out = match current {
            Some(out) => out,
            // The index has damaged or unordered lines: the full path
            // repairs and saves it.
            None => summaries(self.refresh_all(false)?),
        };
        Ok(sort_newest_first(out))
    }

    /// Sessions whose current title or any message text contains `text`
    /// (case-insensitive), newest activity first.
    pub fn search(&self, text: &str) -> Result<Vec<SessionSummary>, StoreError> {
        let m = search::Matcher::new(text);
        let mut out = Vec::new();
        for s in self.list()? {
            let hit = m.matches_str(&s.title)
                || m.file_matches(&self.session_path(&s.id)).unwrap_or(false);
            if hit {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Most recent session (by last activity) whose header `project` equals
    /// `project`.
    pub fn latest_for_project(
        &self,
        project: &Utf8Path,
    ) -> Result<Option<SessionSummary>, StoreError> {
        Ok(self
            .list()?
            .into_iter()
            .find(|s| s.project == project.as_str()))
    }

    /// Delete a session; refused while another process has it open.
    pub fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        let path = self.session_path(id);
        if !path.exists() {
            return Err(StoreError::NotFound { id: id.clone() });
        }
        let lock = SessionLock::acquire(&self.dirs.locks, id)?;
        if let Err(e) = std::fs::remove_file(&path) {
            lock.remove();
            return Err(if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::NotFound { id: id.clone() }
            } else {
                StoreError::io("delete session file", &path)(e)
            });
        }
        fsutil::sync_dir(&self.dirs.sessions);
        if let Ok(j) = journal::open_append(&self.dirs.data) {
            journal::note(&j, id);
        }
        self.save_entry(id, None);
        lock.remove();
        Ok(())
    }

    /// Rename (appends a `title` record) under the session's lock.
    pub fn rename(&self, id: &SessionId, title: &str) -> Result<(), StoreError> {
        writer::validate_title(title)?;
        self.open_writer(id)?.rename(title)
    }

    /// Every record of a session and what was skipped.
    pub fn read_all(&self, id: &SessionId) -> Result<SessionLog, StoreError> {
        let path = self.session_path(id);
        let file = self.open_existing(id)?;
        let mut log = SessionLog {
            header: None,
            records: Vec::new(),
            stats: ReadStats::default(),
        };
        let (_, tail) = for_each_line(file, 0, |off, line| {
            log.push_line(off, line);
            true
        })
        .map_err(StoreError::io("read session file", &path))?;
        log.stats.torn_tail_bytes = tail;
        Ok(log)
    }

    /// Effective history: header, current title, last compaction record
    /// and the messages with seq >= its `first_kept_seq`. Reads only from
    /// the first retained message on, not the whole file.
    pub fn load_effective(&self, id: &SessionId) -> Result<Effective, StoreError> {
        let (entry, mut file) = self.entry_for(id)?;
        match self.effective_from(&entry, &mut file)? {
            Some(e) => Ok(e),
            None => {
                // The index pointed at something that is not a compaction
                // record: rebuild this entry from the whole file.
                let mut fresh = Entry::empty(id.clone());
                fresh
                    .update_from(&mut file)
                    .map_err(StoreError::io("read session file", self.session_path(id)))?;
                self.save_entry(id, Some(&fresh));
                self.effective_from(&fresh, &mut file)?
                    .ok_or_else(|| StoreError::Unreadable {
                        id: id.clone(),
                        reason: "its compaction record cannot be read back".into(),
                    })
            }
        }
    }

    /// Write the session file, byte for byte, to `out`.
    pub fn export(&self, id: &SessionId, out: &mut dyn std::io::Write) -> Result<(), StoreError> {
        let path = self.session_path(id);
        let mut file = self.open_existing(id)?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io("read session file", &path)(e)),
            };
            out.write_all(&buf[..n])
                .map_err(StoreError::io("write the export of", &path))?;
        }
        out.flush()
            .map_err(StoreError::io("write the export of", &path))
    }

    /// Check every session file: cut torn tails, remove files that never
    /// got a complete line, count skipped lines, rebuild the index.
    pub fn doctor(&self) -> Result<DoctorReport, StoreError> {
        let mut report = DoctorReport::default();
        let (ids, ignored) = self.scan_sessions_dir()?;
        report.ignored = ignored;
        for id in ids {
            let path = self.session_path(&id);
            let mut f = DoctorFile {
                path: path.clone(),
                id: id.clone(),
                status: DoctorStatus::Ok,
                bad_lines: 0,
                unknown_lines: 0,
            };
            let lock = match SessionLock::acquire(&self.dirs.locks, &id) {
                Ok(l) => l,
                Err(StoreError::InUse { pid, .. }) => {
                    f.status = DoctorStatus::InUse { pid };
                    report.files.push(f);
                    continue;
                }
                Err(e) => return Err(e),
            };
            f.status = match self.read_all(&id) {
                Err(StoreError::NotFound { .. }) => continue,
                Err(e) => DoctorStatus::Unreadable {
                    reason: e.to_string(),
                },
                Ok(log) => {
                    f.bad_lines = log.stats.bad_lines;
                    f.unknown_lines = log.stats.unknown_lines;
                    self.doctor_file(&path, &log)?
                }
            };
            if f.status == DoctorStatus::RemovedEmpty {
                lock.remove();
            }
            report.files.push(f);
        }
        self.refresh_all(true)?;
        Ok(report)
    }

    fn doctor_file(&self, path: &Utf8Path, log: &SessionLog) -> Result<DoctorStatus, StoreError> {
        let torn = log.stats.torn_tail_bytes;
        let complete_lines =
            log.records.len() as u64 + log.stats.bad_lines + log.stats.unknown_lines;
        if complete_lines == 0 {
            std::fs::remove_file(path)
                .map_err(StoreError::io("remove empty session file", path))?;
            fsutil::sync_dir(&self.dirs.sessions);
            return Ok(DoctorStatus::RemovedEmpty);
        }
        if torn > 0 {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(StoreError::io("open session file", path))?;
            let len = file
                .metadata()
                .map_err(StoreError::io("read the size of", path))?
                .len();
            file.set_len(len.saturating_sub(torn))
                .and_then(|()| file.sync_data())
                .map_err(StoreError::io("repair the torn end of", path))?;
        }
        if log.header.is_none() {
            return Ok(DoctorStatus::Unreadable {
                reason: "the first line is not a session header".into(),
            });
        }
        Ok(if torn > 0 {
            DoctorStatus::Repaired { torn_bytes: torn }
        } else {
            DoctorStatus::Ok
        })
    }

    // ---- internals ----

    fn open_existing(&self, id: &SessionId) -> Result<File, StoreError> {
        let path = self.session_path(id);
        File::open(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::NotFound { id: id.clone() }
            } else {
                StoreError::io("open session file", &path)(e)
            }
        })
    }

    fn effective_from(
        &self,
        entry: &Entry,
        file: &mut File,
    ) -> Result<Option<Effective>, StoreError> {
        let path = self.session_path(&entry.id);
        let header = entry.header.clone().ok_or_else(|| StoreError::Unreadable {
            id: entry.id.clone(),
            reason: "its first line is not a session header".into(),
        })?;
        let start = entry.compaction_offset.unwrap_or(0);
        let mut compaction = None;
        let mut after = Vec::new();
        let mut ok = true;
        file.seek(SeekFrom::Start(start))
            .map_err(StoreError::io("read session file", &path))?;
        for_each_line(
            (&mut *file).take(entry.len.saturating_sub(start)),
            start,
            |off, line| {
                let rec = match Record::parse_line(line) {
                    Ok(ParsedLine::Record(r)) => Some(*r),
                    _ => None,
                };
                if entry.compaction_offset == Some(off) {
                    match rec {
                        Some(Record::Compaction(c)) => compaction = Some(c),
                        _ => {
                            ok = false;
                            return false;
                        }
                    }
                } else if let Some(Record::Message(m)) = rec {
                    after.push(m);
                }
                true
            },
        )
        .map_err(StoreError::io("read session file", &path))?;
        if !ok || (entry.compaction_offset.is_some() && compaction.is_none()) {
            return Ok(None);
        }
        let mut messages = Vec::new();
        if let Some(c) = &compaction {
            // Retained messages precede the compaction record: walk back.
            let mut back = BackwardLines::new(&mut *file, start);
            while let Some((off, line)) = back
                .prev_line()
                .map_err(StoreError::io("read session file", &path))?
            {
                if off == 0 {
                    break;
                }
                if let Ok(ParsedLine::Record(r)) = Record::parse_line(line)
                    && let Record::Message(m) = *r
                {
                    if m.seq < c.first_kept_seq {
                        break;
                    }
                    messages.push(m);
                }
            }
            messages.reverse();
        }
        messages.extend(after);
        Ok(Some(Effective {
            header,
            title: entry.title.clone(),
            compaction,
            messages,
            next_seq: entry.last_seq + 1,
            message_count: entry.message_count,
        }))
    }

    /// The up-to-date index entry of one session and its open file.
    fn entry_for(&self, id: &SessionId) -> Result<(Entry, File), StoreError> {
        let mut file = self.open_existing(id)?;
        let raw = std::fs::read(&self.dirs.index).unwrap_or_default();
        let cached = index::find_entry(&raw, id);
        let (entry, changed) = self.refresh_entry(id, cached, &mut file)?;
        if changed {
            self.save_entry_into(&raw, id, Some(&entry));
        }
        Ok((entry, file))
    }

    /// Best-effort single-entry update of the index file.
    fn save_entry(&self, id: &SessionId, entry: Option<&Entry>) {
        let raw = std::fs::read(&self.dirs.index).unwrap_or_default();
        self.save_entry_into(&raw, id, entry);
    }

    /// Save `raw` (the index as read) with `id`'s entry replaced. With no
    /// usable index (none yet, e.g. a data dir copied without one, or a
    /// damaged one) a new index holding just this entry is written, so
    /// what one open computed is kept and only the first open of a long
    /// session reads it all. Its head (no journal epoch, directory mtime 0)
    /// makes the next listing check every file, reusing this entry.
    fn save_entry_into(&self, raw: &[u8], id: &SessionId, entry: Option<&Entry>) {
        let bytes = match index::upsert_raw(raw, id, entry) {
            Some(bytes) => bytes,
            None => {
                let Some(e) = entry else { return };
                let mut idx = Index::default();
                idx.entries.insert(id.clone(), e.clone());
                idx.encode().into_bytes()
            }
        };
        let _ = fsutil::atomic_write(&self.dirs.index, &bytes, false);
    }

    /// Bring `cached` up to date with the file: read only what was
    /// appended, or the whole file when `cached` does not fit it. Returns
    /// the entry and whether it changed.
    fn refresh_entry(
        &self,
        id: &SessionId,
        cached: Option<Entry>,
        file: &mut File,
    ) -> Result<(Entry, bool), StoreError> {
        let path = self.session_path(id);
        if let Some(mut e) = cached {
            let len = file
                .metadata()
                .map_err(StoreError::io("read the size of", &path))?
                .len();
            if len == e.len {
                return Ok((e, false));
            }
            if len > e.len && (e.len == 0 || byte_at(file, e.len - 1) == Some(b'\n')) {
                let before = e.len;
                e.update_from(file)
                    .map_err(StoreError::io("read session file", &path))?;
                let changed = e.len != before;
                return Ok((e, changed));
            }
        }
        let mut e = Entry::empty(id.clone());
        e.update_from(file)
            .map_err(StoreError::io("read session file", &path))?;
        Ok((e, true))
    }

    /// Refresh one session for the listing; `None` when its file is gone.
    fn refresh_one(
        &self,
        id: &SessionId,
        cached: Option<Entry>,
    ) -> Result<Option<(Entry, bool)>, StoreError> {
        let path = self.session_path(id);
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("open session file", &path)(e)),
        };
        self.refresh_entry(id, cached, &mut file).map(Some)
    }

    /// Session ids present in `sessions/`, and files there that are not
    /// session files.
    fn scan_sessions_dir(&self) -> Result<(BTreeSet<SessionId>, Vec<Utf8PathBuf>), StoreError> {
        let rd = std::fs::read_dir(&self.dirs.sessions)
            .map_err(StoreError::io("list directory", &self.dirs.sessions))?;
        let mut ids = BTreeSet::new();
        let mut ignored = Vec::new();
        for ent in rd {
            let ent = ent.map_err(StoreError::io("list directory", &self.dirs.sessions))?;
            let name = ent.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            match name.strip_suffix(".jsonl").map(SessionId::parse) {
                Some(Ok(id)) => {
                    ids.insert(id);
                }
                _ if name.starts_with(".tmp-") => {}
                _ => ignored.push(self.dirs.sessions.join(name)),
            }
        }
        Ok((ids, ignored))
    }

    /// Bring the whole index up to date and save it when it changed.
    fn refresh_all(&self, force_full: bool) -> Result<Index, StoreError> {
        match self.refresh(force_full, false)? {
            Refreshed::Updated(idx) => Ok(idx),
            Refreshed::Current(raw) => Ok(Index::parse(&raw).unwrap_or_default()),
        }
    }

    /// Bring the whole index up to date and save it when it changed. With
    /// `allow_current`, an index that needs no change (its journal epoch
    /// and offset and directory mtime are current, no session was noted
    /// since) is returned as its raw bytes, unparsed.
    fn refresh(&self, force_full: bool, allow_current: bool) -> Result<Refreshed, StoreError> {
        let raw = if force_full {
            Vec::new()
        } else {
            std::fs::read(&self.dirs.index).unwrap_or_default()
        };
        let head = index::Head::parse(&raw).map(|(h, _)| h);
        // Order matters: journal first, then the directory, then files, so
        // a change racing with us is seen now or noted for next time.
        let j = journal::read(&self.dirs.data, head.map_or(0, |h| h.journal_offset))
            .map_err(StoreError::io("read", journal::path(&self.dirs.data)))?;
        let dir_mtime = mtime_ns(&self.dirs.sessions);
        if allow_current
            && let Some(h) = head
            && j.offset_ok
            && j.epoch == h.epoch
            && j.changed.is_empty()
            && j.end == h.journal_offset
            && j.end <= journal::ROTATE_BYTES
            && dir_mtime != 0
            && dir_mtime == h.dir_mtime
            && settled_mtime(dir_mtime) == dir_mtime
        {
            return Ok(Refreshed::Current(raw));
        }
        let old = head.and_then(|_| Index::parse(&raw));
        let had_index = old.is_some();
        let mut idx = old.unwrap_or_default();
        let trusted = had_index && j.offset_ok && j.epoch == idx.epoch;
        let mut changed = !had_index;

        let refresh = |idx: &mut Index, id: &SessionId, changed: &mut bool| {
            let cached = idx.entries.get(id).cloned();
            match self.refresh_one(id, cached) {
                Ok(Some((e, c))) => {
                    *changed |= c;
                    idx.entries.insert(id.clone(), e);
                }
                Ok(None) => {
                    *changed |= idx.entries.remove(id).is_some();
                }
                // An unreadable file keeps its old entry (if any) and is
                // reported by `doctor`.
                Err(_) => {}
            }
        };

        // A dirty index may lack entries (damaged lines): list the
        // directory to find them, and save it cleaned.
        changed |= idx.dirty;
        if !trusted || idx.dirty || dir_mtime == 0 || dir_mtime != idx.dir_mtime {
            let (present, _) = self.scan_sessions_dir()?;
            let before = idx.entries.len();
            idx.entries.retain(|id, _| present.contains(id));
            changed |= idx.entries.len() != before;
            for id in &present {
                if !trusted || !idx.entries.contains_key(id) {
                    refresh(&mut idx, id, &mut changed);
                }
            }
        }
        if trusted {
            for id in &j.changed {
                refresh(&mut idx, id, &mut changed);
            }
        }
        let new_mtime = settled_mtime(dir_mtime);
        let (mut epoch, mut offset) = (j.epoch, j.end);
        if (epoch.is_empty() || offset > journal::ROTATE_BYTES)
            && let Some((e, o)) = journal::rotate(&self.dirs.data, j.end)
        {
            (epoch, offset) = (e, o);
        }
        if epoch != idx.epoch || offset != idx.journal_offset || new_mtime != idx.dir_mtime {
            changed = true;
        }
        idx.epoch = epoch;
        idx.journal_offset = offset;
        idx.dir_mtime = new_mtime;
        if changed {
            // A cache: failing to save only costs time on the next listing.
            let _ = fsutil::atomic_write(&self.dirs.index, idx.encode().as_bytes(), false);
        }
        idx.dirty = false;
        Ok(Refreshed::Updated(idx))
    }

    /// The title the next session born would take (the counter is not
    /// advanced).
    fn peek_title(&self) -> Result<String, StoreError> {
        Ok((self.title_counter()? + 1).to_string())
    }

    /// The last title number handed out: the counter file, or when it is
    /// missing or damaged the highest numeric title in use, so that no
    /// title is handed out twice.
    fn title_counter(&self) -> Result<u64, StoreError> {
        let counter = self.dirs.data.join("titles");
        let current = match std::fs::read_to_string(&counter) {
            Ok(s) => s.trim().parse::<u64>().ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::io("read the title counter", &counter)(e)),
        };
        Ok(match current {
            Some(n) => n,
            None => self
                .refresh_all(false)?
                .entries
                .values()
                .flat_map(|e| {
                    [
                        e.title.parse::<u64>().ok(),
                        e.header.as_ref().and_then(|h| h.title.parse().ok()),
                    ]
                })
                .flatten()
                .max()
                .unwrap_or(0),
        })
    }

    /// Take the next title number and run `birth` with it, under the
    /// counter's lock. The counter is advanced (durably) before `birth`
    /// runs, so a crash can leave a gap but never hand a number out
    /// twice; when `birth` fails the number is given back.
    pub(crate) fn with_next_title<R>(
        &self,
        birth: impl FnOnce(&str) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let lock_path = self.dirs.data.join("titles.lock");
        let counter = self.dirs.data.join("titles");
        let lock = fsutil::private_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(StoreError::io("open the title counter lock", &lock_path))?;
        lock.lock()
            .map_err(StoreError::io("lock the title counter", &lock_path))?;
        let result = (|| {
            let current = self.title_counter()?;
            let next = current + 1;
            fsutil::atomic_write(&counter, format!("{next}\n").as_bytes(), true)?;
            fsutil::sync_dir(&self.dirs.data);
            let born = birth(&next.to_string());
            if born.is_err() {
                let _ = fsutil::atomic_write(&counter, format!("{current}\n").as_bytes(), true);
            }
            born
        })();
        let _ = lock.unlock();
        result
    }
}

/// Result of [`Store::refresh`].
enum Refreshed {
    /// The index file needed no change: its bytes.
    Current(Vec<u8>),
    /// The index as brought up to date (and saved if it changed).
    Updated(Index),
}

/// Sort newest activity first. `last_activity` is compared as a point in
/// time, not as text: records are written with nanosecond precision
/// (`…:00.123456789Z`), older files have whole seconds (`…:00Z`), and text
/// order would put `…:00Z` after `…:00.5Z`. Equal times (only possible
/// between whole-second records of older versions) fall back to the id,
/// newest first, so the order is total; unparsable times sort last.
fn sort_newest_first(sessions: Vec<SessionSummary>) -> Vec<SessionSummary> {
    let mut keyed: Vec<(i128, SessionSummary)> = sessions
        .into_iter()
        .map(|s| {
            let t = eonyx_core::time::parse_rfc3339(&s.last_activity);
            (t.map_or(i128::MIN, |t| t.as_nanosecond()), s)
        })
        .collect();
    // Ids are unique, so the order is total and an unstable sort gives
    // the same result every time.
    keyed.sort_unstable_by(|(ta, a), (tb, b)| tb.cmp(ta).then_with(|| b.id.cmp(&a.id)));
    keyed.into_iter().map(|(_, s)| s).collect()
}

/// The listed sessions of an index, in id order.
fn summaries(idx: Index) -> Vec<SessionSummary> {
    idx.entries.into_values().filter_map(summary).collect()
}

fn summary(e: Entry) -> Option<SessionSummary> {
    let h = e.header?;
    Some(SessionSummary {
        id: e.id,
        title: e.title,
        created: h.created,
        last_activity: e.last_activity,
        message_count: e.message_count,
        project: h.project,
        cwd: h.cwd,
    })
}

fn byte_at(file: &mut File, pos: u64) -> Option<u8> {
    let mut b = [0u8; 1];
    file.seek(SeekFrom::Start(pos)).ok()?;
    file.read_exact(&mut b).ok()?;
    Some(b[0])
}

/// The directory mtime to store in the index: 0 ("list it again") while it
/// is so recent that a change within the same clock tick could go unseen.
fn settled_mtime(dir_mtime: u128) -> u128 {
    let now = jiff::Timestamp::now().as_nanosecond().max(0) as u128;
    if now.saturating_sub(dir_mtime) < RACY_MTIME_NS {
        0
    } else {
        dir_mtime
    }
}

/// mtime in ns since the epoch; 0 when unknown (forces a directory scan).
fn mtime_ns(path: &Utf8Path) -> u128 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

#[cfg(test)]
mod tests;
