//! Forks (docs/session-format.md#forks): a new, self-contained session
//! holding a copy of another session's history as of one of its `seq`s.
//!
//! Invariants: the original is only read (never locked, never written); the
//! fork's file appears whole or not at all (written under a temporary name,
//! fsynced, then renamed), with the kept file contents its records name
//! already in its file history; it takes the next title like any session.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

use eonyx_core::record::{FORMAT_VERSION, ForkedFrom, ParsedLine, Record, SessionHeader};
use eonyx_core::{MessageRecord, SessionId};

use crate::lines::for_each_line;
use crate::{Store, StoreError, fsutil, journal};

/// A fork just made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    pub id: SessionId,
    pub title: String,
    /// `forked_from.seq`: the fork's history is the original's as of it.
    pub seq: u64,
}

impl Store {
    /// Fork session `id` as of `at` (default: its last record): a new
    /// session whose file holds the header (with `forked_from`) and every
    /// record of the original up to the record with that `seq`, rewinds
    /// and compaction records included (renames left out), so its view is
    /// the original's view as of `at`. The original is untouched.
    pub fn fork(&self, id: &SessionId, at: Option<u64>) -> Result<Forked, StoreError> {
        let (entry, mut file) = self.entry_for(id)?;
        let original = entry.header.clone().ok_or_else(|| StoreError::Unreadable {
            id: id.clone(),
            reason: "its first line is not a session header".into(),
        })?;
        let at = at.unwrap_or(entry.last_seq);
        let refuse = |reason| {
            Err(StoreError::InvalidFork {
                id: id.clone(),
                at,
                reason,
            })
        };
        if original.is_child() {
            return refuse("it is a task's child session; fork the session that started it");
        }
        if at == 0 {
            return refuse("a fork needs at least one record; start a new session instead");
        }
        if at > entry.last_seq {
            return refuse("the session has no record that far");
        }
        let new_id = loop {
            let candidate = SessionId::generate();
            if !self.session_path(&candidate).exists() {
                break candidate;
            }
        };
        let root = original
            .forked_from
            .as_ref()
            .map(|f| f.root.clone().unwrap_or_else(|| f.id.clone()));
        let final_path = self.session_path(&new_id);
        let tmp = self.dirs.sessions.join(format!(".tmp-fork-{new_id}"));
        let forked = self.with_next_title(|title| {
            let header = SessionHeader {
                version: FORMAT_VERSION,
                id: new_id.clone(),
                title: title.to_owned(),
                created: eonyx_core::time::now_rfc3339(),
                cwd: original.cwd.clone(),
                project: original.project.clone(),
                model: original.model.clone(),
                forked_from: Some(ForkedFrom {
                    id: id.clone(),
                    seq: at,
                    root: root.clone(),
                }),
                parent: None,
                parent_call: None,
                profile: None,
            };
            let written = (|| {
                let out = fsutil::private_options()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(StoreError::io("create", &tmp))?;
                let mut out = BufWriter::with_capacity(256 * 1024, out);
                let mut line = Record::Session(header).to_line();
                line.push('\n');
                out.write_all(line.as_bytes())
                    .map_err(StoreError::io("write", &tmp))?;
                let kept = copy_lines(&mut file, entry.len, at, &mut out)
                    .map_err(StoreError::io("copy the session file into", &tmp))?;
                let out = out
                    .into_inner()
                    .map_err(|e| StoreError::io("write", &tmp)(e.into_error()))?;
                out.sync_all().map_err(StoreError::io("write", &tmp))?;
                self.file_history(id)
                    .copy_to(&self.file_history(&new_id), kept.iter().map(String::as_str))?;
                std::fs::rename(&tmp, &final_path)
                    .map_err(StoreError::io("create session file", &final_path))?;
                fsutil::sync_dir(&self.dirs.sessions);
                Ok(())
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written.map(|()| Forked {
                id: new_id.clone(),
                title: title.to_owned(),
                seq: at,
            })
        })?;
        if let Ok(j) = journal::open_append(&self.dirs.data) {
            journal::note(&j, &forked.id);
        }
        Ok(forked)
    }
}

/// Write to `out` the lines after the header up to the last record with
/// a `seq` at most `at`: every record but renames and stray headers,
/// unknown types included, damaged lines left out. Returns the kept
/// contents the copied `undo`s name.
fn copy_lines(
    file: &mut File,
    len: u64,
    at: u64,
    out: &mut impl Write,
) -> std::io::Result<Vec<String>> {
    let mut kept = Vec::new();
    let mut failed = None;
    file.seek(SeekFrom::Start(0))?;
    for_each_line((&mut *file).take(len), 0, |off, line| {
        if off == 0 {
            return true;
        }
        let copy = match Record::parse_line(line) {
            Ok(ParsedLine::Record(r)) => {
                if r.seq().is_some_and(|seq| seq > at) {
                    return false;
                }
                if let Record::Message(m) = &*r {
                    kept.extend(kept_hash(m));
                }
                !matches!(*r, Record::Title(_) | Record::Session(_))
            }
            Ok(ParsedLine::Unknown(_)) => true,
            Err(_) => false,
        };
        if copy && let Err(e) = out.write_all(line).and_then(|()| out.write_all(b"\n")) {
            failed = Some(e);
            return false;
        }
        true
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(kept),
    }
}

/// The kept content a message's `undo` names.
fn kept_hash(m: &MessageRecord) -> Option<String> {
    let u = m.message.undo.as_ref()?;
    if !u.kept {
        return None;
    }
    u.before.clone()
}
