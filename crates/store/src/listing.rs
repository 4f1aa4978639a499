//! Listing and the index: `list`, `search`, `latest_for_project`, and
//! bringing the index cache up to date (whole, or one entry at a time).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::SessionId;

use crate::index::{self, Entry, Index};
use crate::rows::Listing;
use crate::{Store, StoreError, fsutil, journal, search};

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
    /// For a child session (a `task`): the session that started it.
    pub parent: Option<SessionId>,
    /// For a child session: the profile it ran with.
    pub profile: Option<String>,
    /// Child sessions this session started (direct ones).
    pub children: u64,
    /// `last_activity` in nanoseconds since the epoch, the sort key
    /// (`None` when it is not RFC 3339).
    #[serde(skip)]
    pub activity_ns: Option<i128>,
}

/// Seconds within which a directory mtime may still change unseen.
const RACY_MTIME_NS: u128 = 2_000_000_000;

impl Store {
    /// Every readable session, newest activity first: by the time of the
    /// last record (nanosecond precision, compared as a time; equal times,
    /// only between whole-second records of older versions, by id, newest
    /// first). `latest_for_project` (`run -c`) and `search` use this same
    /// order.
    pub fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        Ok(self.listing()?.into_summaries())
    }

    /// [`Store::list`] as rows borrowed from the index text: nothing is
    /// allocated per session (`eonyx sessions` renders from it).
    pub fn listing(&self) -> Result<Listing, StoreError> {
        let current = match self.refresh(RefreshMode::AllowCurrent)? {
            // Nothing changed since the index was saved: rows straight
            // from its text.
            Refreshed::Current(raw) => String::from_utf8(raw).ok().and_then(Listing::parse),
            Refreshed::Patched(text) | Refreshed::Updated(_, text) => Listing::parse(text),
        };
        Ok(match current {
            Some(l) => l,
            // The index has damaged or unordered lines: the full path
            // repairs and saves it. Its text, encoded from a clean index,
            // always parses.
            None => match self.refresh(RefreshMode::Repair)? {
                Refreshed::Patched(text) | Refreshed::Updated(_, text) => {
                    Listing::parse(text).unwrap_or_default()
                }
                Refreshed::Current(raw) => String::from_utf8(raw)
                    .ok()
                    .and_then(Listing::parse)
                    .unwrap_or_default(),
            },
        })
    }

    /// The direct children of `parent` (newest activity first).
    pub fn children_of(&self, parent: &SessionId) -> Result<Vec<SessionSummary>, StoreError> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|s| s.parent.as_ref() == Some(parent))
            .collect())
    }

    /// How many tasks deep `id` is: 0 for a top-level session, 1 for its
    /// child… (a damaged tree with a cycle stops at 64).
    pub fn depth(&self, id: &SessionId) -> Result<u32, StoreError> {
        let all = self.list()?;
        let parent_of = |id: &SessionId| {
            all.iter()
                .find(|s| &s.id == id)
                .and_then(|s| s.parent.clone())
        };
        let mut depth = 0;
        let mut at = parent_of(id);
        while let Some(p) = at {
            depth += 1;
            if depth >= 64 {
                break;
            }
            at = parent_of(&p);
        }
        Ok(depth)
    }

    /// Every session below `root` (children, their children…), each
    /// generation newest first; `root` itself is not included. A damaged
    /// tree with a cycle is walked once.
    pub fn descendants(&self, root: &SessionId) -> Result<Vec<SessionSummary>, StoreError> {
        Ok(descendants_in(self.list()?, root))
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
    /// `project`, never a child session (a `task`'s): `-c` and the REPL
    /// continue the conversation the user had, not a delegated one.
    pub fn latest_for_project(
        &self,
        project: &Utf8Path,
    ) -> Result<Option<SessionSummary>, StoreError> {
        let listing = self.listing()?;
        Ok(listing
            .rows()
            .find(|r| r.parent.is_none() && r.project == project.as_str())
            .and_then(|r| SessionSummary::from_row(&r)))
    }

    /// The up-to-date index entry of one session and its open file.
    pub(crate) fn entry_for(&self, id: &SessionId) -> Result<(Entry, File), StoreError> {
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
    pub(crate) fn save_entry(&self, id: &SessionId, entry: Option<&Entry>) {
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
                idx.insert(e.clone());
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

    /// The index text brought up to date by replacing only the lines of
    /// the sessions that changed (noted in the journal, or appeared in or
    /// went from the directory), in place, and saved. `None` when that is
    /// not the way here (too many changes, lines out of order): the caller
    /// takes the full path. `head` belongs to `raw` and the journal `j`
    /// was read from its offset, in its epoch.
    fn patch(
        &self,
        raw: &[u8],
        head: index::Head<'_>,
        j: &journal::JournalRead,
        dir_mtime: u128,
    ) -> Result<Option<String>, StoreError> {
        let Some((_, body)) = index::Head::parse(raw) else {
            return Ok(None);
        };
        let head_len = raw.len() - body.len();
        let mut stale: BTreeSet<SessionId> = j.changed.clone();
        let mut gone = Vec::new();
        if dir_mtime == 0 || dir_mtime != head.dir_mtime {
            let (present, _) = self.scan_sessions_dir()?;
            let mut indexed = Vec::with_capacity(present.len());
            for line in body.split_terminator('\n') {
                let id = line.split('\t').next().unwrap_or("");
                if indexed.last().is_some_and(|prev| *prev >= id) {
                    return Ok(None);
                }
                indexed.push(id);
            }
            // Both sorted: one merge finds the new and the gone.
            let mut it = indexed.iter().peekable();
            for id in &present {
                while let Some(x) = it.next_if(|x| **x < id.as_str()) {
                    gone.push(*x);
                }
                if it.next_if(|x| **x == id.as_str()).is_none() {
                    stale.insert(id.clone());
                }
            }
            gone.extend(it);
        }
        if stale.len() + gone.len() > PATCH_MAX {
            return Ok(None);
        }
        // The new lines of the changed sessions (`None`: remove).
        let mut changes: BTreeMap<SessionId, Option<Entry>> = BTreeMap::new();
        for id in gone {
            match SessionId::parse(id) {
                Ok(id) => {
                    changes.insert(id, None);
                }
                Err(_) => return Ok(None),
            }
        }
        for id in stale {
            let cached = index::find_entry(raw, &id);
            let was_there = cached.is_some();
            match self.refresh_one(&id, cached) {
                Ok(Some((_, false))) => {}
                Ok(Some((e, true))) => {
                    changes.insert(id, Some(e));
                }
                Ok(None) if was_there => {
                    changes.insert(id, None);
                }
                Ok(None) => {}
                // An unreadable file keeps its old entry (if any) and is
                // reported by `doctor`.
                Err(_) => {}
            }
        }
        let (mut epoch, mut offset) = (j.epoch.clone(), j.end);
        if (epoch.is_empty() || offset > journal::ROTATE_BYTES)
            && let Some((e, o)) = journal::rotate(&self.dirs.data, j.end)
        {
            (epoch, offset) = (e, o);
        }
        let new_head = index::head_line(&epoch, offset, settled_mtime(dir_mtime));
        let changed = !changes.is_empty() || raw.get(..head_len) != Some(new_head.as_bytes());
        let text = if changes.is_empty() {
            new_head + body
        } else {
            match index::patch_lines(body, &changes) {
                Some(lines) => new_head + &lines,
                None => return Ok(None),
            }
        };
        if changed {
            // A cache: failing to save only costs time on the next listing.
            let _ = fsutil::atomic_write(&self.dirs.index, text.as_bytes(), false);
        }
        Ok(Some(text))
    }

    /// Session ids present in `sessions/`, and files there that are not
    /// session files.
    pub(crate) fn scan_sessions_dir(
        &self,
    ) -> Result<(BTreeSet<SessionId>, Vec<Utf8PathBuf>), StoreError> {
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

    /// Bring the whole index up to date and save it when it changed
    /// (`force_full`: ignore the saved index, read every session file).
    pub(crate) fn refresh_all(&self, force_full: bool) -> Result<Index, StoreError> {
        let mode = if force_full {
            RefreshMode::Rebuild
        } else {
            RefreshMode::Update
        };
        match self.refresh(mode)? {
            Refreshed::Updated(idx, _) => Ok(idx),
            Refreshed::Patched(text) => Ok(Index::parse(text.as_bytes()).unwrap_or_default()),
            Refreshed::Current(raw) => Ok(Index::parse(&raw).unwrap_or_default()),
        }
    }

    /// Bring the whole index up to date and save it when it changed; see
    /// [`RefreshMode`] for how.
    pub(crate) fn refresh(&self, mode: RefreshMode) -> Result<Refreshed, StoreError> {
        let raw = if mode == RefreshMode::Rebuild {
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
        if let Some(h) = head
            && j.offset_ok
            && j.epoch == h.epoch
        {
            if mode == RefreshMode::AllowCurrent
                && j.changed.is_empty()
                && j.end == h.journal_offset
                && j.end <= journal::ROTATE_BYTES
                && dir_mtime != 0
                && dir_mtime == h.dir_mtime
                && settled_mtime(dir_mtime) == dir_mtime
            {
                return Ok(Refreshed::Current(raw));
            }
            if matches!(mode, RefreshMode::AllowCurrent | RefreshMode::Update)
                && let Some(text) = self.patch(&raw, h, &j, dir_mtime)?
            {
                return Ok(Refreshed::Patched(text));
            }
        }
        let old = head.and_then(|_| Index::parse(&raw));
        let had_index = old.is_some();
        let mut idx = old.unwrap_or_default();
        let trusted = had_index && j.offset_ok && j.epoch == idx.epoch;
        let mut changed = !had_index;

        let refresh = |idx: &mut Index, id: &SessionId, changed: &mut bool| {
            let cached = idx.get(id);
            match self.refresh_one(id, cached) {
                // Unchanged entries stay as the lines they were read as.
                Ok(Some((_, false))) => {}
                Ok(Some((e, true))) => {
                    *changed = true;
                    idx.insert(e);
                }
                Ok(None) => {
                    *changed |= idx.remove(id);
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
            let before = idx.len();
            idx.retain(|id| present.contains(id));
            changed |= idx.len() != before;
            for id in &present {
                if !trusted || !idx.contains(id) {
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
        let text = idx.encode();
        if changed {
            // A cache: failing to save only costs time on the next listing.
            let _ = fsutil::atomic_write(&self.dirs.index, text.as_bytes(), false);
        }
        idx.dirty = false;
        Ok(Refreshed::Updated(idx, text))
    }
}

/// How [`Store::refresh`] brings the index up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefreshMode {
    /// As `Update`, but an index that needs no change is returned as its
    /// bytes, unparsed (its journal epoch and offset and the directory
    /// mtime are current, no session was noted since).
    AllowCurrent,
    /// Replace only the lines of the sessions that changed when the
    /// journal can be trusted (`patch`), else the full path.
    Update,
    /// The full path: every entry checked, the directory listed; repairs
    /// damaged, duplicate and unordered lines.
    Repair,
    /// Ignore the saved index: read every session file.
    Rebuild,
}

/// At most this many changed sessions are patched into the index text;
/// more take the full path.
const PATCH_MAX: usize = 64;

/// Result of [`Store::refresh`].
pub(crate) enum Refreshed {
    /// The index file needed no change: its bytes.
    Current(Vec<u8>),
    /// The index text with the changed sessions' lines replaced (and saved
    /// if anything changed).
    Patched(String),
    /// The index as brought up to date (and saved if it changed), and its
    /// text.
    Updated(Index, String),
}

/// The sessions below `root` in `all` (sorted newest first), breadth first.
pub(crate) fn descendants_in(all: Vec<SessionSummary>, root: &SessionId) -> Vec<SessionSummary> {
    let mut out: Vec<SessionSummary> = Vec::new();
    let mut seen: BTreeSet<SessionId> = BTreeSet::from([root.clone()]);
    let mut frontier = vec![root.clone()];
    let mut rest = all;
    while !frontier.is_empty() {
        let (next, others): (Vec<_>, Vec<_>) = rest.into_iter().partition(|s| {
            s.parent
                .as_ref()
                .is_some_and(|p| frontier.contains(p) && !seen.contains(&s.id))
        });
        rest = others;
        frontier = next.iter().map(|s| s.id.clone()).collect();
        seen.extend(frontier.iter().cloned());
        out.extend(next);
    }
    out
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
