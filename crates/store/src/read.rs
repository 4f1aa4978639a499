//! Reading sessions: every record (`read_all`), the effective history
//! (`load_effective`) and the raw bytes (`export`).

use std::fs::File;
use std::io::Read;

use eonyx_core::goal::GoalRecord;
use eonyx_core::record::{ModelRecord, ParsedLine, Record, SessionHeader};
use eonyx_core::timeline::Timeline;
use eonyx_core::{CompactionRecord, MessageRecord, Role, SessionId, SummaryDraftRecord};

use crate::lines::for_each_line;
use crate::timeline::{self, Item};
use crate::{Store, StoreError};

/// What the model sees now, plus counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub header: SessionHeader,
    pub title: String,
    /// The compaction record in force (the last one of the timeline).
    pub compaction: Option<CompactionRecord>,
    /// The newest summary draft after the compaction record in force
    /// (drafts before it cannot apply any more), whatever it builds on: the
    /// agent checks that (docs/compaction.md#ahead-of-time-summaries).
    /// Never one a rewind left out.
    pub draft: Option<SummaryDraftRecord>,
    /// The newest goal record of the timeline after the compaction in
    /// force (older ones are pinned by it: `compaction.goal`); the agent
    /// takes the current goal from the two (docs/session-format.md#goal-records).
    pub goal: Option<GoalRecord>,
    /// The `job` records after the compaction in force, oldest first (the
    /// jobs running at it are pinned by it: `compaction.jobs`).
    pub jobs: Vec<eonyx_core::job::JobRecord>,
    /// The `pin` records after the compaction in force, oldest first (the
    /// pins in force at it are kept by it: `compaction.pins`).
    pub pins: Vec<eonyx_core::pin::PinRecord>,
    /// The timeline's messages with seq >= the compaction's
    /// `first_kept_seq` (all of them when there is none), oldest first;
    /// nothing a rewind left out.
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

    /// Which records rewinds left out (docs/session-format.md#rewind-records).
    pub fn timeline(&self) -> Timeline {
        Timeline::from_rewinds(self.records.iter().filter_map(|r| match r {
            Record::Rewind(r) => Some(r),
            _ => None,
        }))
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

    /// Every record of a session handed to `f` in file order as it is
    /// read, so that a long session never sits whole in memory (the
    /// readable exports); what was skipped, counted as [`Store::read_all`]
    /// counts it (a header anywhere but the first line is not a record).
    pub fn read_each(
        &self,
        id: &SessionId,
        mut f: impl FnMut(Record),
    ) -> Result<ReadStats, StoreError> {
        let path = self.session_path(id);
        let file = self.open_existing(id)?;
        let mut stats = ReadStats::default();
        let (_, tail) = for_each_line(file, 0, |off, line| {
            match Record::parse_line(line) {
                Ok(ParsedLine::Record(r)) => match *r {
                    Record::Session(_) if off != 0 => stats.unknown_lines += 1,
                    r => f(r),
                },
                Ok(ParsedLine::Unknown(_)) => stats.unknown_lines += 1,
                Err(_) => stats.bad_lines += 1,
            }
            true
        })
        .map_err(StoreError::io("read session file", &path))?;
        stats.torn_tail_bytes = tail;
        Ok(stats)
    }

    /// Every complete line of a session, as its bytes, in file order (a
    /// torn tail is left out): for a reader that parses only the lines it
    /// needs.
    pub fn read_lines(&self, id: &SessionId, mut f: impl FnMut(&[u8])) -> Result<(), StoreError> {
        let path = self.session_path(id);
        let file = self.open_existing(id)?;
        for_each_line(file, 0, |_, line| {
            f(line);
            true
        })
        .map_err(StoreError::io("read session file", &path))?;
        Ok(())
    }

    /// Effective history: header, current title, the compaction record in
    /// force, the newest summary draft after it and the messages of the
    /// timeline from its `first_kept_seq` on
    /// (docs/session-format.md#reading-efficiently). Reads back from the
    /// end, jumping over what rewinds left out, down to the first retained
    /// message: never the whole history when it was compacted.
    pub fn load_effective(&self, id: &SessionId) -> Result<Effective, StoreError> {
        let (entry, mut file) = self.entry_for(id)?;
        let header = entry.header.clone().ok_or_else(|| StoreError::Unreadable {
            id: id.clone(),
            reason: "its first line is not a session header".into(),
        })?;
        let mut compaction: Option<CompactionRecord> = None;
        let mut draft: Option<SummaryDraftRecord> = None;
        let mut goal: Option<GoalRecord> = None;
        let mut jobs = Vec::new();
        let mut pins = Vec::new();
        let mut messages = Vec::new();
        timeline::walk_back(&mut file, entry.len, |item| match item {
            Item::Job(j) => {
                if compaction.is_none() {
                    jobs.push(j);
                }
                true
            }
            Item::Pin(p) => {
                if compaction.is_none() {
                    pins.push(p);
                }
                true
            }
            // The newest one, newer than the compaction in force.
            Item::Goal(g) => {
                if compaction.is_none() && goal.is_none() {
                    goal = Some(g);
                }
                true
            }
            // The newest one, newer than the compaction in force.
            Item::Draft(d) => {
                if compaction.is_none() && draft.is_none() {
                    draft = Some(d);
                }
                true
            }
            Item::Message(m) => {
                if compaction
                    .as_ref()
                    .is_some_and(|c| m.seq < c.first_kept_seq)
                {
                    return false;
                }
                messages.push(m);
                true
            }
            Item::Compaction(c) => match &compaction {
                None => {
                    compaction = Some(c);
                    true
                }
                // An older compaction inside the retained messages.
                Some(kept) => c.seq >= kept.first_kept_seq,
            },
        })
        .map_err(StoreError::io("read session file", self.session_path(id)))?;
        messages.reverse();
        jobs.reverse();
        pins.reverse();
        Ok(Effective {
            header,
            title: entry.title.clone(),
            compaction,
            draft,
            goal,
            jobs,
            pins,
            messages,
            next_seq: entry.last_seq + 1,
            message_count: entry.message_count,
        })
    }

    /// The messages of the last `turns` user turns of the session's
    /// timeline, oldest first; all of it when the timeline has fewer. A
    /// turn starts at a user message that does not come right after another
    /// user message (`eonyx_core::timeline::count_turns` counts the same
    /// way). Reads back from the end only as far as that.
    pub fn last_turns(
        &self,
        id: &SessionId,
        turns: usize,
    ) -> Result<Vec<MessageRecord>, StoreError> {
        let (entry, mut file) = self.entry_for(id)?;
        let mut out = Vec::new();
        let (mut seen, mut in_user_run) = (0, false);
        if turns > 0 {
            timeline::walk_back(&mut file, entry.len, |item| {
                let Item::Message(m) = item else {
                    return true;
                };
                if m.message.role == Role::User {
                    seen += usize::from(!in_user_run);
                    in_user_run = true;
                } else {
                    // The run of user messages before this one started the
                    // last turn wanted.
                    if in_user_run && seen == turns {
                        return false;
                    }
                    in_user_run = false;
                }
                out.push(m);
                true
            })
            .map_err(StoreError::io("read session file", self.session_path(id)))?;
        }
        out.reverse();
        Ok(out)
    }

    /// The messages of the session's timeline after `seq`, oldest first:
    /// what a rewind to `seq` leaves out. Reads back from the end only as
    /// far as that.
    pub fn messages_after(
        &self,
        id: &SessionId,
        seq: u64,
    ) -> Result<Vec<MessageRecord>, StoreError> {
        let (entry, mut file) = self.entry_for(id)?;
        let mut out = Vec::new();
        timeline::walk_back(&mut file, entry.len, |item| match item {
            Item::Message(m) if m.seq > seq => {
                out.push(m);
                true
            }
            Item::Message(_) => false,
            Item::Compaction(c) => c.seq > seq,
            Item::Draft(d) => d.seq > seq,
            Item::Goal(g) => g.seq > seq,
            Item::Job(j) => j.seq > seq,
            Item::Pin(p) => p.seq > seq,
        })
        .map_err(StoreError::io("read session file", self.session_path(id)))?;
        out.reverse();
        Ok(out)
    }

    /// The last model switch of a session (`/model`,
    /// docs/session-format.md#model-records), if it has one. Reads the
    /// file forward but parses only the lines that are model records (eonyx
    /// writes the type first), so a long session costs a byte scan.
    pub fn model_switch(&self, id: &SessionId) -> Result<Option<ModelRecord>, StoreError> {
        const PREFIX: &[u8] = br#"{"type":"model","#;
        let path = self.session_path(id);
        let file = self.open_existing(id)?;
        let mut last = None;
        for_each_line(file, 0, |_, line| {
            if line.starts_with(PREFIX)
                && let Ok(ParsedLine::Record(r)) = Record::parse_line(line)
                && let Record::Model(m) = *r
            {
                last = Some(m);
            }
            true
        })
        .map_err(StoreError::io("read session file", &path))?;
        Ok(last)
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
}
