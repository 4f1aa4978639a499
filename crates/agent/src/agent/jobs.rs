//! Background jobs in the agent (docs/tools.md#jobs): each session gets its
//! own [`Jobs`] room (`eonyx-tools`' `jobs` module), which runs them and
//! holds all their state, notices owed to the model included; it lives in
//! the tool context, its one home. [`SessionJobs`] is the session's handle
//! on it ([`Agent::jobs`]): the jobs' starts and exits become `job` records
//! of the session file and events for the frontends; an exit the model has
//! not seen leaves a notice appended before the next request (never edited
//! into earlier messages). A compaction pins the running ones (`goal.rs`,
//! `pin`).

use std::sync::Arc;

use eonyx_config::Config;
use eonyx_core::SessionId;
use eonyx_core::job::{JobEvent, JobRecord};
use eonyx_store::{SessionWriter, Store};
use eonyx_tools::jobs::{JobInfo, JobNote, Jobs, JobsConfig, Seen};

use super::Agent;
use crate::error::AgentError;
use crate::events::{AgentEvent, Events};

/// The session's jobs as the agent and the frontends see them: the room,
/// and the session file their starts and exits are recorded in.
pub struct SessionJobs<'a> {
    room: Option<&'a Arc<Jobs>>,
    writer: &'a mut SessionWriter,
    events: &'a Events,
}

impl Agent {
    /// The session's background jobs (`/jobs`, the REPL's prompt, the end
    /// of a session).
    pub fn jobs(&mut self) -> SessionJobs<'_> {
        SessionJobs {
            room: self.tools.ctx.jobs.as_ref(),
            writer: &mut self.writer,
            events: &self.events,
        }
    }
}

/// A fresh room for the jobs of session `id`.
pub(super) fn new_room(
    config: &Config,
    store: &Store,
    id: &SessionId,
    sandbox: &eonyx_sandbox::Sandbox,
) -> Arc<Jobs> {
    let t = &config.tools;
    Arc::new(Jobs::new(JobsConfig {
        max_jobs: t.max_jobs,
        log_max_bytes: t.job_log_max_bytes,
        output_cap_bytes: t.output_cap_bytes,
        dir: store.jobs_dir(id),
        keeper: sandbox.helper().map(std::path::Path::to_path_buf),
    }))
}

fn record(id: u32, command: String, event: JobEvent, status: Option<String>) -> JobRecord {
    JobRecord {
        seq: 0,
        ts: String::new(),
        id,
        command,
        event,
        status,
    }
}

impl SessionJobs<'_> {
    /// Record and report the jobs' starts and exits since the last call;
    /// `call_id` is the call that just ran (a start belongs to it).
    pub(super) fn take_events(&mut self, call_id: Option<&str>) -> Result<(), AgentError> {
        let Some(room) = self.room else {
            return Ok(());
        };
        for note in room.take_events(call_id) {
            match note {
                JobNote::Started { id, command, log } => {
                    self.writer
                        .append_job(record(id, command.clone(), JobEvent::Started, None))?;
                    self.events.send(AgentEvent::JobStarted {
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
                    call_id,
                } => {
                    let status = Some(state.to_string());
                    self.writer.append_job(record(
                        id,
                        command.clone(),
                        JobEvent::Exited,
                        status,
                    ))?;
                    self.events.send(AgentEvent::JobExited {
                        id,
                        command,
                        status: state.to_string(),
                        secs,
                        call_id,
                    });
                }
            }
        }
        Ok(())
    }

    /// The notices of exits the model has not seen, as one message's text
    /// (appended before the next request); the exits recorded first.
    pub(super) fn notices(&mut self) -> Result<Option<String>, AgentError> {
        self.take_events(None)?;
        Ok(self.room.and_then(|r| r.take_notices()))
    }

    /// The session's jobs (`/jobs`).
    pub fn list(&self) -> Vec<JobInfo> {
        self.room.map(|r| r.list()).unwrap_or_default()
    }

    /// Wakes on every new output and exit of the session's jobs (the REPL
    /// watches it while it waits for the user).
    pub fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.room.map(|r| r.subscribe())
    }

    /// While the user is idle: record exits and report them; true when a
    /// job that asked for `"notify": true` exited, and the REPL should
    /// start a turn ([`SessionJobs::notify_turn`]).
    pub fn poll(&mut self) -> Result<bool, AgentError> {
        self.take_events(None)?;
        Ok(self.room.is_some_and(|r| r.notify_pending()))
    }

    /// The text of the turn a `notify` job's exit starts by itself.
    pub fn notify_turn(&mut self) -> Option<String> {
        self.room.and_then(|r| r.notify_turn())
    }

    /// `/jobs stop N`: stop job `id` as `job_stop` does.
    pub async fn stop(&mut self, id: u32) -> Result<String, AgentError> {
        let Some(room) = self.room else {
            return Err(crate::UsageError::Job("no background jobs in this session".into()).into());
        };
        let out = room
            .stop(id, Seen::ByUser)
            .await
            .map_err(|e| AgentError::from(crate::UsageError::Job(e.to_string())))?;
        self.take_events(None)?;
        Ok(out)
    }

    /// Stop every running job (eonyx exits, the session ends): the ones
    /// stopped, recorded and reported.
    pub async fn stop_all(&mut self) -> Vec<JobInfo> {
        let Some(room) = self.room else {
            return Vec::new();
        };
        let stopped = room.stop_all().await;
        // Their exits are recorded; no notice (nobody reads it).
        let _ = self.take_events(None);
        room.forget_notices();
        stopped
    }

    /// A resumed session whose file says jobs were running: they ended
    /// with the earlier process. Their ends are recorded, the model gets a
    /// notice; the user's, returned, is said once at the start.
    pub(super) fn ended_earlier(&mut self, ended: &[(u32, String)]) -> Option<String> {
        if ended.is_empty() {
            return None;
        }
        let status = "ended with the earlier eonyx process";
        let mut recorded = 0;
        for (id, command) in ended {
            let r = record(
                *id,
                command.clone(),
                JobEvent::Exited,
                Some(status.to_owned()),
            );
            if self.writer.append_job(r).is_err() {
                break;
            }
            recorded += 1;
        }
        if let Some(room) = self.room {
            room.ended_earlier(&ended[..recorded], status);
        }
        let list: Vec<String> = ended
            .iter()
            .map(|(id, c)| format!("job {id} ({c})"))
            .collect();
        Some(format!(
            "{} ended with the earlier eonyx process; start again what is still needed",
            list.join(", ")
        ))
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
