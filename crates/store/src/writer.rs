//! Appending to one session: the only code that writes session files.

use std::fs::File;
use std::io::{self, Write};

use camino::Utf8PathBuf;
use eonyx_core::goal::GoalRecord;
use eonyx_core::record::{ModelRecord, Record, RewindRecord, SessionHeader, TitleRecord};
use eonyx_core::{CompactionRecord, Message, MessageRecord, SessionId, SummaryDraftRecord};

use crate::fsutil::{private_options, sync_dir};
use crate::lock::SessionLock;
use crate::{Dirs, StoreError, journal};

/// What [`crate::Store::create_child`] needs besides the store.
#[derive(Debug, Clone)]
pub struct ChildSpec<'a> {
    pub cwd: &'a camino::Utf8Path,
    pub project: &'a camino::Utf8Path,
    pub model: Option<&'a str>,
    /// The session whose `task` call starts this one.
    pub parent: &'a SessionId,
    /// The id of that `task` call.
    pub parent_call: &'a str,
    pub profile: &'a str,
    /// `<parent title>.<k>`.
    pub title: String,
}

/// Where the writer's bytes go. A trait so that tests can inject failures.
pub(crate) trait SessionFile: Send + Sync {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    fn sync(&mut self) -> io::Result<()>;
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl SessionFile for File {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)?;
        self.sync_data()
    }
}

/// Exclusive appender for one session. Every append is written, flushed
/// and fsynced before it returns; a failed append returns the error and
/// leaves the file as it was before the call (or with a torn tail that
/// readers ignore and the next append cuts off).
pub struct SessionWriter {
    dirs: Dirs,
    header: SessionHeader,
    title: String,
    /// A new session whose title number is taken at its first append (its
    /// title until then is the expected number). Cleared by a rename.
    title_pending: bool,
    next_seq: u64,
    pub(crate) file: Option<Box<dyn SessionFile>>,
    /// Length of the file up to its last good line.
    len: u64,
    /// Bytes after `len` must be cut off before the next append.
    needs_repair: bool,
    lock: Option<SessionLock>,
    journal: Option<File>,
    /// A model switch made before the session's first message: written
    /// right after the header when the file is created.
    pending_model: Option<ModelRecord>,
    #[cfg(test)]
    pub(crate) wrap: Option<fn(File) -> Box<dyn SessionFile>>,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("id", &self.header.id)
            .field("title", &self.title)
            .field("next_seq", &self.next_seq)
            .field("on_disk", &self.file.is_some())
            .finish()
    }
}

impl SessionWriter {
    pub(crate) fn new_session(dirs: Dirs, header: SessionHeader, lock: SessionLock) -> Self {
        Self {
            title: header.title.clone(),
            title_pending: true,
            dirs,
            header,
            next_seq: 1,
            file: None,
            len: 0,
            needs_repair: false,
            lock: Some(lock),
            journal: None,
            pending_model: None,
            #[cfg(test)]
            wrap: None,
        }
    }

    /// A new child session: its title is set, no number is taken.
    pub(crate) fn new_child(dirs: Dirs, header: SessionHeader, lock: SessionLock) -> Self {
        let mut w = Self::new_session(dirs, header, lock);
        w.title_pending = false;
        w
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn existing(
        dirs: Dirs,
        header: SessionHeader,
        title: String,
        last_seq: u64,
        file: File,
        good_len: u64,
        file_len: u64,
        lock: SessionLock,
    ) -> Self {
        Self {
            dirs,
            header,
            title,
            title_pending: false,
            next_seq: last_seq + 1,
            file: Some(Box::new(file)),
            len: good_len,
            needs_repair: file_len != good_len,
            lock: Some(lock),
            journal: None,
            pending_model: None,
            #[cfg(test)]
            wrap: None,
        }
    }

    pub fn id(&self) -> &SessionId {
        &self.header.id
    }

    /// The current title (the header's, or the last rename). Before the
    /// first message of a new session: the number it expects to take.
    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Seq the next message or compaction record will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn path(&self) -> Utf8PathBuf {
        self.dirs.session_path(&self.header.id)
    }

    /// Whether the session file exists (the first message was appended).
    pub fn is_on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// Append a message; assigns `seq` and `ts`. Durable when it returns.
    pub fn append_message(&mut self, message: &Message) -> Result<MessageRecord, StoreError> {
        let rec = MessageRecord {
            seq: self.next_seq,
            ts: eonyx_core::time::now_rfc3339_nanos(),
            message: message.clone(),
        };
        self.append_line(Record::Message(rec.clone()).to_line())?;
        self.next_seq += 1;
        Ok(rec)
    }

    /// Append a compaction record; the writer assigns `seq` and `ts`.
    pub fn append_compaction(
        &mut self,
        mut record: CompactionRecord,
    ) -> Result<CompactionRecord, StoreError> {
        record.seq = self.next_seq;
        record.ts = eonyx_core::time::now_rfc3339_nanos();
        self.append_line(Record::Compaction(record.clone()).to_line())?;
        self.next_seq += 1;
        Ok(record)
    }

    /// Append a summary written ahead of time (`summary_draft`); the writer
    /// assigns `seq` and `ts`. It changes nothing until a compaction
    /// applies it.
    pub fn append_draft(
        &mut self,
        mut record: SummaryDraftRecord,
    ) -> Result<SummaryDraftRecord, StoreError> {
        record.seq = self.next_seq;
        record.ts = eonyx_core::time::now_rfc3339_nanos();
        self.append_line(Record::SummaryDraft(record.clone()).to_line())?;
        self.next_seq += 1;
        Ok(record)
    }

    /// Append a goal record (docs/session-format.md#goal-records); the
    /// writer assigns `seq` and `ts`. On a session not on disk yet it is
    /// the first line after the header (`/goal` before any message).
    pub fn append_goal(&mut self, mut record: GoalRecord) -> Result<GoalRecord, StoreError> {
        record.seq = self.next_seq;
        record.ts = eonyx_core::time::now_rfc3339_nanos();
        self.append_line(Record::Goal(record.clone()).to_line())?;
        self.next_seq += 1;
        Ok(record)
    }

    /// Append a `job` record (docs/session-format.md#job-records); the
    /// writer assigns `seq` and `ts`.
    pub fn append_job(
        &mut self,
        mut record: eonyx_core::job::JobRecord,
    ) -> Result<eonyx_core::job::JobRecord, StoreError> {
        record.seq = self.next_seq;
        record.ts = eonyx_core::time::now_rfc3339_nanos();
        self.append_line(Record::Job(record.clone()).to_line())?;
        self.next_seq += 1;
        Ok(record)
    }

    /// Append a `pin` record (docs/session-format.md#pin-records); the
    /// writer assigns `seq` and `ts`.
    pub fn append_pin(
        &mut self,
        mut record: eonyx_core::pin::PinRecord,
    ) -> Result<eonyx_core::pin::PinRecord, StoreError> {
        record.seq = self.next_seq;
        record.ts = eonyx_core::time::now_rfc3339_nanos();
        self.append_line(Record::Pin(record.clone()).to_line())?;
        self.next_seq += 1;
        Ok(record)
    }

    /// Append a rewind record to `to_seq` (below the next seq); the writer
    /// assigns `seq` and `ts`. From it on the session's view is the view
    /// as of `to_seq` (docs/session-format.md#rewind-records).
    pub fn append_rewind(&mut self, to_seq: u64) -> Result<RewindRecord, StoreError> {
        if to_seq >= self.next_seq {
            return Err(StoreError::InvalidRewind {
                id: self.header.id.clone(),
                to_seq,
                last_seq: self.next_seq.saturating_sub(1),
            });
        }
        let record = RewindRecord {
            seq: self.next_seq,
            ts: eonyx_core::time::now_rfc3339_nanos(),
            to_seq,
        };
        self.append_line(Record::Rewind(record.clone()).to_line())?;
        self.next_seq += 1;
        Ok(record)
    }

    /// Rename: appends a `title` record (or sets the header's title while
    /// the session is not on disk yet; it then takes no title number).
    pub fn rename(&mut self, title: &str) -> Result<(), StoreError> {
        let title = validate_title(title)?;
        if self.file.is_some() {
            self.append_line(
                Record::Title(TitleRecord {
                    title: title.clone(),
                    ts: eonyx_core::time::now_rfc3339_nanos(),
                })
                .to_line(),
            )?;
        } else {
            self.header.title = title.clone();
            self.title_pending = false;
        }
        self.title = title;
        Ok(())
    }

    /// Record a model or effort switch (`/model`): appends a `model`
    /// record, or keeps it for the header's company while the session is
    /// not on disk yet (a session is born with its first message).
    pub fn switch_model(
        &mut self,
        key: &str,
        effort: Option<eonyx_core::config::ReasoningEffort>,
    ) -> Result<ModelRecord, StoreError> {
        let record = ModelRecord {
            key: key.to_owned(),
            reasoning_effort: effort,
            ts: eonyx_core::time::now_rfc3339_nanos(),
        };
        if self.file.is_some() {
            self.append_line(Record::Model(record.clone()).to_line())?;
        } else {
            self.pending_model = Some(record.clone());
        }
        Ok(record)
    }

    fn open_new_file(&self, path: &Utf8PathBuf) -> io::Result<Box<dyn SessionFile>> {
        let f = private_options().append(true).create_new(true).open(path)?;
        #[cfg(test)]
        if let Some(w) = self.wrap {
            return Ok(w(f));
        }
        Ok(Box::new(f))
    }

    /// Create the session file with the header and `line` in one write,
    /// or leave nothing.
    fn create_file(&mut self, path: &Utf8PathBuf, line: &str) -> Result<(), StoreError> {
        let mut buf = Record::Session(self.header.clone()).to_line();
        buf.push('\n');
        if let Some(m) = &self.pending_model {
            buf.push_str(&Record::Model(m.clone()).to_line());
            buf.push('\n');
        }
        buf.push_str(line);
        let mut f = self
            .open_new_file(path)
            .map_err(StoreError::io("create session file", path))?;
        if let Err(e) = f.append(buf.as_bytes()).and_then(|()| f.sync()) {
            drop(f);
            let _ = std::fs::remove_file(path);
            return Err(StoreError::io("write session file", path)(e));
        }
        sync_dir(&self.dirs.sessions);
        self.len = buf.len() as u64;
        self.file = Some(f);
        self.pending_model = None;
        Ok(())
    }

    fn append_line(&mut self, mut line: String) -> Result<(), StoreError> {
        line.push('\n');
        let path = self.path();
        match &mut self.file {
            None => {
                // First message: the session is born. It takes its title
                // number now (not at create, so sessions that never got a
                // message burn none) and its file appears with header +
                // message in one write, or not at all.
                self.header.created = eonyx_core::time::now_rfc3339();
                if self.title_pending {
                    let store = crate::Store {
                        dirs: self.dirs.clone(),
                    };
                    store.with_next_title(|title| {
                        self.header.title = title.to_owned();
                        self.create_file(&path, &line)
                    })?;
                    self.title = self.header.title.clone();
                    self.title_pending = false;
                } else {
                    self.create_file(&path, &line)?;
                }
            }
            Some(f) => {
                if self.needs_repair {
                    f.truncate(self.len)
                        .map_err(StoreError::io("repair the torn end of", &path))?;
                    self.needs_repair = false;
                }
                if let Err(e) = f.append(line.as_bytes()).and_then(|()| f.sync()) {
                    // Take back whatever part of the line reached the file.
                    if f.truncate(self.len).is_err() {
                        self.needs_repair = true;
                    }
                    return Err(StoreError::io("append to session file", &path)(e));
                }
                self.len += line.len() as u64;
            }
        }
        if self.journal.is_none() {
            self.journal = journal::open_append(&self.dirs.data).ok();
        }
        if let Some(j) = &self.journal {
            journal::note(j, &self.header.id);
        }
        Ok(())
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        if self.file.is_none() {
            // Never materialised: leave nothing behind.
            if let Some(lock) = self.lock.take() {
                lock.remove();
            }
        }
    }
}

/// Titles are one line of visible text.
pub(crate) fn validate_title(title: &str) -> Result<String, StoreError> {
    let t = title.trim();
    let bad = |reason| {
        Err(StoreError::InvalidTitle {
            title: title.to_owned(),
            reason,
        })
    };
    if t.is_empty() {
        return bad("a title cannot be empty");
    }
    if t.chars().any(char::is_control) {
        return bad("a title must be one line without control characters");
    }
    if t.len() > 200 {
        return bad("a title can be at most 200 bytes");
    }
    Ok(t.to_owned())
}
