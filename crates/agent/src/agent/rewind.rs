//! `/rewind` and `/fork` (docs/cli.md#rewind-and-fork): plan a rewind of the
//! last user turns, carry it out (files, then the rewind record, then the
//! view rebuilt from the file as a resume would), finish one a crash
//! interrupted, and fork the session.
//!
//! Invariant: the rewind record is appended only after every file of the
//! plan was restored or left alone, and a note in the file history says a
//! restore is under way until then; a session opened with that note still
//! there (the process was killed) finishes the rewind first. Restoring is
//! idempotent (a file holding its earlier content counts as restored), so
//! finishing it again is safe.

use std::time::Duration;

use eonyx_store::{Forked, PendingRewind};

use super::session::{Memory, open_session, task_changes};
use super::{Agent, SessionChoice};
use crate::error::{AgentError, UsageError};
use crate::rewind::{self, FileAction, RewindPlan, RewindReport};

/// What `/rewind` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindOptions {
    /// User turns to go back (at least 1).
    pub turns: usize,
    /// `--keep-files`: leave every file alone.
    pub keep_files: bool,
}

/// The test hook that waits after each restored file, so that a test can
/// kill the process in the middle of a restore.
const PAUSE_VAR: &str = "EONYX_TEST_REWIND_PAUSE_MS";

fn pause() -> Option<Duration> {
    std::env::var(PAUSE_VAR)
        .ok()?
        .parse()
        .ok()
        .map(Duration::from_millis)
}

impl Agent {
    /// What rewinding the last `opts.turns` user turns would do; nothing
    /// is changed.
    pub fn plan_rewind(&self, opts: RewindOptions) -> Result<RewindPlan, AgentError> {
        let (records, to_seq) = self.last_turns(opts.turns, "rewind")?;
        let tasks = task_changes(&self.store, self.session_id(), &records)?;
        Ok(rewind::plan(
            &records,
            to_seq,
            &self.project.root,
            &self.store.file_history(self.session_id()),
            &tasks,
            opts.keep_files,
        ))
    }

    /// Carry out `plan`: restore the files (each one at most once,
    /// atomically, only when it still holds what eonyx wrote), append the
    /// rewind record, and rebuild the view from the file.
    pub fn rewind(&mut self, plan: &RewindPlan) -> Result<RewindReport, AgentError> {
        let history = self.store.file_history(self.session_id());
        let touches = plan
            .files
            .iter()
            .any(|f| matches!(f.action, FileAction::Restore | FileAction::Remove));
        if touches {
            history.set_pending(&PendingRewind {
                to_seq: plan.to_seq,
                at_seq: self.writer.next_seq(),
            })?;
        }
        let report = rewind::restore(plan, pause());
        self.writer.append_rewind(plan.to_seq)?;
        if touches {
            // The record is written: a note left behind is cleared by the
            // next open (the session's next seq is past it).
            let _ = history.clear_pending();
        }
        self.reload_view()?;
        Ok(report)
    }

    /// Fork the session before its last `turns` user turns (0: as it is
    /// now) and continue in the fork. The `# Memory` section is kept, so
    /// the fork's first request is what this session's would be.
    pub fn fork(&mut self, turns: usize) -> Result<Forked, AgentError> {
        let at = if turns == 0 {
            if !self.writer.is_on_disk() {
                return Err(UsageError::NothingToFork.into());
            }
            self.writer.next_seq() - 1
        } else {
            self.last_turns(turns, "fork")?.1
        };
        if at == 0 {
            return Err(UsageError::EmptyFork.into());
        }
        let forked = self.store.fork(self.session_id(), Some(at))?;
        let opened = open_session(
            &self.store,
            &self.config,
            &self.cwd,
            &self.project,
            &SessionChoice::Id(forked.id.clone()),
        )?;
        self.replace_session(opened, Memory::Keep);
        Ok(forked)
    }

    /// The messages of the last `turns` user turns and the seq just before
    /// them; a usage error when the session has fewer.
    fn last_turns(
        &self,
        turns: usize,
        what: &'static str,
    ) -> Result<(Vec<eonyx_core::MessageRecord>, u64), AgentError> {
        if turns == 0 {
            return Err(UsageError::NoTurns { what }.into());
        }
        let records = if self.writer.is_on_disk() {
            self.store.last_turns(self.session_id(), turns)?
        } else {
            Vec::new()
        };
        let users = eonyx_core::timeline::count_turns(&records);
        if users < turns {
            return Err(match users {
                0 => UsageError::NoTurnsYet { what },
                have => UsageError::TooFewTurns { what, have },
            }
            .into());
        }
        let to_seq = records.first().map_or(0, |r| r.seq - 1);
        Ok((records, to_seq))
    }
}
