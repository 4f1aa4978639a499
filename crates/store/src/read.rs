//! Reading sessions: every record (`read_all`), the effective history
//! (`load_effective`) and the raw bytes (`export`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use eonyx_core::record::{ParsedLine, Record, SessionHeader};
use eonyx_core::{CompactionRecord, MessageRecord, SessionId, SummaryDraftRecord};

use crate::index::Entry;
use crate::lines::{BackwardLines, for_each_line};
use crate::{Store, StoreError};

/// What the model sees now, plus counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub header: SessionHeader,
    pub title: String,
    pub compaction: Option<CompactionRecord>,
    /// The newest summary draft after the last compaction record (drafts
    /// before it cannot apply any more), whatever it builds on: the agent
    /// checks that (docs/compaction.md#ahead-of-time-summaries).
    pub draft: Option<SummaryDraftRecord>,
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

impl Store {
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

    /// Effective history: header, current title, last compaction record,
    /// the newest summary draft after it and the messages with seq >= its
    /// `first_kept_seq`. Reads only from the first retained message on,
    /// not the whole file.
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

    pub(crate) fn open_existing(&self, id: &SessionId) -> Result<File, StoreError> {
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
        let mut draft = None;
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
                } else {
                    match rec {
                        Some(Record::Message(m)) => after.push(m),
                        Some(Record::SummaryDraft(d)) => draft = Some(d),
                        _ => {}
                    }
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
            draft,
            messages,
            next_seq: entry.last_seq + 1,
            message_count: entry.message_count,
        }))
    }
}
