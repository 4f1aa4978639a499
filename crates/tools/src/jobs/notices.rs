//! What a session still owes about its jobs: the notices of exits the
//! model has not seen (appended as one message before the next request,
//! never edited into earlier messages), whether a job that asked for
//! `"notify": true` exited (the REPL may start a turn with them), and the
//! `shell` call that started each job (ACP updates that call). Kept in
//! the jobs' table, so the session's jobs have one home.

use std::collections::HashMap;

use super::{Jobs, lock};

#[derive(Debug, Default)]
pub(super) struct Notices {
    /// Notices of exits the model has not seen, for the next request.
    pending: Vec<String>,
    /// A job that asked for `"notify": true` exited.
    notify: bool,
    /// The `shell` call that started each job.
    calls: HashMap<u32, String>,
}

impl Notices {
    pub(super) fn started_by(&mut self, id: u32, call_id: &str) {
        self.calls.insert(id, call_id.to_owned());
    }

    pub(super) fn call_of(&self, id: u32) -> Option<String> {
        self.calls.get(&id).cloned()
    }

    /// An exit the model has not seen.
    pub(super) fn unseen_exit(&mut self, notice: String, notify: bool) {
        self.pending.push(notice);
        self.notify |= notify;
    }

    fn take(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        self.notify = false;
        Some(std::mem::take(&mut self.pending).join("\n"))
    }
}

impl Jobs {
    /// The notices of exits the model has not seen, as one message's text
    /// (before the next request); `None` when there are none.
    pub fn take_notices(&self) -> Option<String> {
        lock(&self.shared.table).notices.take()
    }

    /// A job that asked for `"notify": true` exited and its notice waits:
    /// the REPL may start a turn ([`Jobs::notify_turn`]).
    pub fn notify_pending(&self) -> bool {
        let t = lock(&self.shared.table);
        t.notices.notify && !t.notices.pending.is_empty()
    }

    /// The text of the turn a `notify` job's exit starts by itself.
    pub fn notify_turn(&self) -> Option<String> {
        let mut t = lock(&self.shared.table);
        if !t.notices.notify {
            return None;
        }
        t.notices.take()
    }

    /// Drop the notices nobody will read (the session ends).
    pub fn forget_notices(&self) {
        lock(&self.shared.table).notices.pending.clear();
    }

    /// A resumed session whose file says jobs were running: they ended
    /// with the earlier process, and the model is told once.
    pub fn ended_earlier(&self, ended: &[(u32, String)], status: &str) {
        let mut t = lock(&self.shared.table);
        for (id, command) in ended {
            t.notices.pending.push(format!(
                "[job {id} {status}: {command} — a notice from eonyx, not user input]"
            ));
        }
    }
}
