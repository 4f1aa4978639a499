//! Sessions on disk (docs/session-format.md): append-only JSONL files under
//! `<data dir>/sessions/<id>.jsonl`, with listing, search, rename, delete,
//! export, repair and locking.
//!
//! `Store`'s methods are split by concern: `lib.rs` (open, create, append,
//! delete, rename, titles), `listing` (list, search, the index cache),
//! `rows` (the listing as rows borrowed from the index text), `read`
//! (whole reads, the effective history, export), `timeline` (reading a
//! session backwards, jumping over what rewinds left out), `fork`,
//! `file_history`, `doctor`, `recall` and `memory`.
//!
//! Layout under the data dir: `sessions/<id>.jsonl` (the truth),
//! `locks/<id>.lock` (one per open session, holding the owner's pid),
//! `file-history/<id>/`, `titles` (the title counter), `index` and
//! `journal` (caches for fast listing), `limits.json` (context windows
//! detected or learned, and the request-shape changes a model needs, per
//! base URL and model; which window applies is decided in the agent) and
//! `memory/` (`global.md` and one file per project root).
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
//!   checked against the directory and saved clean. An entry an open had to compute is saved
//!   (in a new index if there is none), so only the first open of a
//!   never-indexed session reads it all.
//! - Resuming reads back from the end of the file, jumping over what a
//!   rewind left out (`timeline`), down to the first message the last
//!   compaction in force retained: not the whole history.
//! - The data dir and its directories are created 0700, files 0600 (unix).
//! - A task's child session takes no number from the title counter (its
//!   title is its parent's plus `.k`), and is never "the most recent".
//! - A session is deleted with its tasks' child sessions, theirs too, each
//!   with its file history: children first, deepest first, so a failure
//!   never leaves a child without its parent. No caller decides the cascade.
//! - Recall only reads, skips damaged lines, and never returns an earlier
//!   `recall` call's result.

// Store's methods live next to what they do: `listing` (list, search and
// the index cache), `read` (read_all, load_effective, export), `doctor`;
// creating, opening for append, delete, rename and titles stay here.
mod doctor;
mod error;
mod file_history;
mod fork;
mod fsutil;
mod index;
mod journal;
pub mod limits;
pub mod lines;
mod listing;
mod lock;
pub mod memory;
pub mod mining;
mod read;
mod recall;
mod rows;
mod said;
mod search;
mod timeline;
mod writer;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::SessionId;
use eonyx_core::record::{FORMAT_VERSION, SessionHeader};

pub use doctor::{DoctorFile, DoctorReport, DoctorStatus};
pub use error::{IoFailure, StoreError};
pub use file_history::{FileHistory, PendingRewind, sha256_hex};
pub use fork::Forked;
/// Private (0700 / 0600) directories and files, also for the cli's REPL history.
pub use fsutil::{create_private_dir, private_options};
pub use listing::SessionSummary;
pub use read::{Effective, ReadStats, SessionLog};
pub use recall::{RecallHit, RecallOptions, RecallQuery, RecallResult};
pub use rows::{Listing, SessionRow};
pub use writer::ChildSpec;
pub use writer::SessionWriter;

use lock::SessionLock;

// The store's tests (and `index`'s) name these as `super::*` / `crate::`.
#[cfg(test)]
use index::Index;
#[cfg(test)]
use listing::Refreshed;

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

    /// Whether a process has session `id` open for writing now (its lock
    /// is held). Probing takes the lock for an instant and leaves its file.
    pub fn is_open(&self, id: &SessionId) -> bool {
        match SessionLock::acquire(&self.dirs.locks, id) {
            Ok(lock) => {
                drop(lock);
                false
            }
            Err(_) => true,
        }
    }

    /// Path of a session's file (whether or not it exists).
    pub fn session_path(&self, id: &SessionId) -> Utf8PathBuf {
        self.dirs.session_path(id)
    }

    /// New session: allocates the id and takes the lock. Nothing is
    /// written and no title number is taken until the first append
    /// (docs/session-format.md#durability-and-repair: a session is born with its first message); until then the
    /// writer's title is the number it expects to take, which a session
    /// born first in another process may take instead.
    pub fn create(
        &self,
        cwd: &Utf8Path,
        project: &Utf8Path,
        model: Option<&str>,
    ) -> Result<SessionWriter, StoreError> {
        let (id, lock) = self.new_id()?;
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
            forked_from: None,
            parent: None,
            parent_call: None,
            profile: None,
        };
        Ok(SessionWriter::new_session(self.dirs.clone(), header, lock))
    }

    /// A fresh id with its lock taken.
    fn new_id(&self) -> Result<(SessionId, SessionLock), StoreError> {
        loop {
            let id = SessionId::generate();
            if self.session_path(&id).exists() {
                continue;
            }
            match SessionLock::acquire(&self.dirs.locks, &id) {
                Ok(lock) => return Ok((id, lock)),
                Err(StoreError::InUse { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// A new child session (a `task`'s, docs/session-format.md#child-sessions):
    /// like [`Store::create`], but its header names the parent, the call
    /// and the profile, and its title is `spec.title` (see
    /// [`Store::next_child_number`]); it takes no number from the main
    /// sequence. Born with its first message, like every session.
    pub fn create_child(&self, spec: ChildSpec<'_>) -> Result<SessionWriter, StoreError> {
        let title = writer::validate_title(&spec.title)?;
        let (id, lock) = self.new_id()?;
        let header = SessionHeader {
            version: FORMAT_VERSION,
            id,
            title,
            created: eonyx_core::time::now_rfc3339(),
            cwd: spec.cwd.to_string(),
            project: spec.project.to_string(),
            model: spec.model.map(str::to_owned),
            forked_from: None,
            parent: Some(spec.parent.clone()),
            parent_call: Some(spec.parent_call.to_owned()),
            profile: Some(spec.profile.to_owned()),
        };
        Ok(SessionWriter::new_child(self.dirs.clone(), header, lock))
    }

    /// The `k` of the next child of `parent` (titled `<parent title>.<k>`):
    /// one past the highest `k` its children were created with (their
    /// header titles, which renames never change) and past their count, so
    /// a number is not handed out twice while its child exists.
    pub fn next_child_number(&self, parent: &SessionId) -> Result<u64, StoreError> {
        let idx = self.refresh_all(false)?;
        let mut count = 0;
        let mut highest = 0;
        for h in idx.all().filter_map(|e| e.header) {
            if h.parent.as_ref() == Some(parent) {
                count += 1;
                let k = h.title.rsplit('.').next().and_then(|k| k.parse().ok());
                highest = highest.max(k.unwrap_or(0));
            }
        }
        Ok(highest.max(count) + 1)
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

    /// Delete a session together with the child sessions of its tasks
    /// (their children too), each with its file history: a child is part
    /// of its parent's history. Returns the children deleted.
    pub fn delete(&self, id: &SessionId) -> Result<Vec<SessionSummary>, StoreError> {
        self.delete_with(id, |_| {})
    }

    /// [`Store::delete`], calling `deleted` with each child as it is gone.
    /// Children go first, deepest first: a failure leaves the parent (with
    /// what is left of its tasks), never a child without its parent. Each
    /// file is refused while another process has it open.
    pub fn delete_with(
        &self,
        id: &SessionId,
        mut deleted: impl FnMut(&SessionSummary),
    ) -> Result<Vec<SessionSummary>, StoreError> {
        if !self.session_path(id).exists() {
            return Err(StoreError::NotFound { id: id.clone() });
        }
        let below = self.descendants(id)?;
        for child in below.iter().rev() {
            self.delete_one(&child.id)?;
            deleted(child);
        }
        self.delete_one(id)?;
        Ok(below)
    }

    /// Delete one session file and its file history.
    fn delete_one(&self, id: &SessionId) -> Result<(), StoreError> {
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
        // The session is gone; its background jobs' logs go with it.
        let jobs = self.jobs_dir(id);
        if let Err(e) = std::fs::remove_dir_all(&jobs)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(StoreError::io("delete the job logs in", &jobs)(e));
        }
        // And its kept file contents.
        self.file_history(id).remove()
    }

    /// Where the logs of a session's background jobs are
    /// (`jobs/<session id>/<N>.log`, docs/tools.md#jobs).
    pub fn jobs_dir(&self, id: &SessionId) -> Utf8PathBuf {
        self.dirs.data.join("jobs").join(id.as_str())
    }

    /// Rename (appends a `title` record) under the session's lock.
    pub fn rename(&self, id: &SessionId, title: &str) -> Result<(), StoreError> {
        writer::validate_title(title)?;
        self.open_writer(id)?.rename(title)
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
                .all()
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

#[cfg(test)]
mod tests;
