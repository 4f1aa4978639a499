//! Background jobs in the agent (docs/tools.md#jobs): each session gets its
//! own [`Jobs`] room (`eonyx-tools`' `jobs` module, which runs them); here
//! its starts and exits become `job` records of the session file, events
//! for the frontends and, for an exit the model has not seen, a notice
//! appended before the next request (never edited into earlier messages).
//! A compaction pins the running ones (`goal.rs`, `pin`).

use std::collections::HashMap;
use std::sync::Arc;

use eonyx_core::Message;
use eonyx_core::job::{JobEvent, JobRecord, exit_notice};
use eonyx_tools::jobs::{JobInfo, JobNote, Jobs, JobsConfig};

use super::Agent;
use crate::error::AgentError;
use crate::events::AgentEvent;

/// The agent's side of the session's jobs.
#[derive(Default)]
pub(super) struct JobsState {
    /// Notices of exits the model has not seen, for the next request.
    pub notices: Vec<String>,
    /// A job that asked for `"notify": true` exited: the REPL may start
    /// a turn with the notice.
    pub notify: bool,
    /// The `shell` call that started each job (ACP updates it).
    pub calls: HashMap<u32, String>,
}

impl Agent {
    /// A fresh room for the current session's jobs.
    pub(super) fn new_jobs(&self) -> Arc<Jobs> {
        let t = &self.config.tools;
        Arc::new(Jobs::new(JobsConfig {
            max_jobs: t.max_jobs,
            log_max_bytes: t.job_log_max_bytes,
            output_cap_bytes: t.output_cap_bytes,
            dir: self.store.jobs_dir(self.session_id()),
            keeper: self
                .tools
                .ctx
                .sandbox
                .helper()
                .map(std::path::Path::to_path_buf),
        }))
    }

    fn jobs_room(&self) -> Option<&Arc<Jobs>> {
        self.tools.ctx.jobs.as_ref()
    }

    /// Record and report the jobs' starts and exits since the last call;
    /// `call_id` is the call that just ran (a start belongs to it).
    pub(super) fn take_job_events(
        &mut self,
        call_id: Option<&str>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), AgentError> {
        let Some(room) = self.jobs_room().cloned() else {
            return Ok(());
        };
        for note in room.take_events() {
            match note {
                JobNote::Started { id, command, log } => {
                    if let Some(c) = call_id {
                        self.jobs.calls.insert(id, c.to_owned());
                    }
                    self.writer.append_job(JobRecord {
                        seq: 0,
                        ts: String::new(),
                        id,
                        command: command.clone(),
                        event: JobEvent::Started,
                        status: None,
                    })?;
                    sink(AgentEvent::JobStarted {
                        id,
                        command,
                        log: log.to_string(),
                        call_id: call_id.map(str::to_owned),
                    });
                }
                JobNote::Exited {
                    id,
                    command,
                    state,
                    secs,
                    unseen,
                    notify,
                } => {
                    self.writer.append_job(JobRecord {
                        seq: 0,
                        ts: String::new(),
                        id,
                        command: command.clone(),
                        event: JobEvent::Exited,
                        status: Some(state.to_string()),
                    })?;
                    if unseen {
                        self.jobs
                            .notices
                            .push(exit_notice(id, state, secs, &command));
                        self.jobs.notify |= notify;
                    }
                    sink(AgentEvent::JobExited {
                        id,
                        command,
                        status: state.to_string(),
                        secs,
                        call_id: self.jobs.calls.get(&id).cloned(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Append the notices of exits the model has not seen as one message
    /// (before the next request).
    pub(super) fn announce_job_exits(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), AgentError> {
        self.take_job_events(None, sink)?;
        if self.jobs.notices.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.jobs.notices).join("\n");
        self.jobs.notify = false;
        self.append(&Message::user(text))
    }

    /// The session's jobs (`/jobs`).
    pub fn jobs(&self) -> Vec<JobInfo> {
        self.jobs_room().map(|r| r.list()).unwrap_or_default()
    }

    /// Wakes on every new output and exit of the session's jobs (the REPL
    /// watches it while it waits for the user).
    pub fn job_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.jobs_room().map(|r| r.subscribe())
    }

    /// While the user is idle: record exits and report them; true when a
    /// job that asked for `"notify": true` exited, and the REPL should
    /// start a turn ([`Agent::notify_turn`]).
    pub fn poll_jobs(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<bool, AgentError> {
        self.take_job_events(None, sink)?;
        Ok(self.jobs.notify && !self.jobs.notices.is_empty())
    }

    /// The text of the turn a `notify` job's exit starts by itself.
    pub fn notify_turn(&mut self) -> Option<String> {
        if !self.jobs.notify || self.jobs.notices.is_empty() {
            return None;
        }
        self.jobs.notify = false;
        Some(std::mem::take(&mut self.jobs.notices).join("\n"))
    }

    /// `/jobs stop N`: stop job `id` as `job_stop` does.
    pub async fn stop_job(
        &mut self,
        id: u32,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<String, AgentError> {
        let Some(room) = self.jobs_room().cloned() else {
            return Err(crate::UsageError::Job("no background jobs in this session".into()).into());
        };
        let out = room
            .stop(id, eonyx_tools::jobs::Seen::ByUser)
            .await
            .map_err(|e| AgentError::from(crate::UsageError::Job(e.to_string())))?;
        self.take_job_events(None, sink)?;
        Ok(out)
    }

    /// Stop every running job (eonyx exits, the session ends): the ones
    /// stopped, recorded and reported.
    pub async fn stop_jobs(&mut self, sink: &mut (dyn FnMut(AgentEvent) + Send)) -> Vec<JobInfo> {
        let Some(room) = self.jobs_room().cloned() else {
            return Vec::new();
        };
        let stopped = room.stop_all().await;
        // Their exits are recorded; no notice (nobody reads it).
        let _ = self.take_job_events(None, sink);
        self.jobs.notices.clear();
        stopped
    }

    /// A resumed session whose file says jobs were running: they ended
    /// with the earlier process. The user and the model are told once, and
    /// their ends are recorded.
    pub(super) fn note_jobs_ended(&mut self, ended: &[(u32, String)]) {
        if ended.is_empty() {
            return;
        }
        let status = "ended with the earlier eonyx process";
        for (id, command) in ended {
            if self
                .writer
                .append_job(JobRecord {
                    seq: 0,
                    ts: String::new(),
                    id: *id,
                    command: command.clone(),
                    event: JobEvent::Exited,
                    status: Some(status.to_owned()),
                })
                .is_err()
            {
                break;
            }
            self.jobs.notices.push(format!(
                "[job {id} {status}: {command} — a notice from eonyx, not user input]"
            ));
        }
        let list: Vec<String> = ended
            .iter()
            .map(|(id, c)| format!("job {id} ({c})"))
            .collect();
        self.startup_notices.push(format!(
            "{} ended with the earlier eonyx process; start again what is still needed",
            list.join(", ")
        ));
    }
}

/// The jobs a resumed session's file says were running when its last
/// process ended: they ended with it.
pub(super) fn ended_with_earlier_process(
    pinned: &[eonyx_core::job::PinnedJob],
    records: &[JobRecord],
) -> Vec<(u32, String)> {
    let mut running: Vec<(u32, String)> =
        pinned.iter().map(|j| (j.id, j.command.clone())).collect();
    for r in records {
        match r.event {
            JobEvent::Started => running.push((r.id, r.command.clone())),
            JobEvent::Exited => running.retain(|(id, _)| *id != r.id),
        }
    }
    running
}
