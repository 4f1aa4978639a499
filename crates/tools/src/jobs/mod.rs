//! Background jobs (docs/tools.md#jobs): servers,
//! watchers and long builds a session runs beside the conversation.
//! [`Jobs`] is one session's jobs and their state: `shell` with
//! `"background": true` starts one, `job_output` reads what is new,
//! `job_stop` stops one; the agent takes their starts and exits from
//! [`Jobs::take_events`] (session records, events), the notices of exits
//! the model has not seen from [`Jobs::take_notices`] (`notices.rs`: all
//! the session's job state lives here), pins the
//! running ones at each compaction ([`Jobs::pinned`]) and stops them all
//! when the session ends ([`Jobs::stop_all`]; dropping [`Jobs`] kills
//! what is left).
//!
//! Invariants:
//! - A job is spawned like a foreground command (the same sandbox plan,
//!   environment and directory; `shell` builds the command) but through
//!   the job keeper (`jobs/keeper.rs`) when eonyx runs as its binary: its own
//!   process group, stdin `/dev/null`, dead with eonyx even on `kill -9`.
//! - The whole output goes to `jobs/<session id>/<N>.log` (0600), capped
//!   at `tools.job_log_max_bytes`; the model reads it by offset, head and
//!   tail over `tools.output_cap_bytes`, never the whole file.
//! - A refused or failed start takes no id. The output a start returned
//!   counts as read; an exit the model saw (`job_output`, `job_stop`, a
//!   start that outlived its command by less than a second) gets no notice.

mod keeper;
mod log;
mod notices;
mod read;
mod spawn;
mod start;
mod stop;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use eonyx_core::job::{JobState, PinnedJob, exit_notice};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ToolDef, ToolName};
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) use keeper::{Flags as KeeperFlags, prepare as keeper_prepare};
pub use keeper::{KEEPER_SUBCOMMAND, KeeperError, Leader, STOP_GRACE, run_keeper};
pub(crate) use spawn::spawn as spawn_kept;
pub use stop::Seen;

use super::{ToolError, ToolOutput, parse_args};

/// How long a start waits for the job's first output.
const FIRST_OUTPUT: Duration = Duration::from_secs(1);
/// How long past the grace time eonyx waits for a keeper before it kills
/// the keeper itself (a loaded machine may be slow to schedule it).
const KEEPER_SLACK: Duration = Duration::from_secs(5);
/// The longest `wait_s` of `job_output`.
pub const MAX_WAIT_S: u64 = 60;

/// What a session's jobs run with.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// `tools.max_jobs`.
    pub max_jobs: u32,
    /// `tools.job_log_max_bytes`.
    pub log_max_bytes: u64,
    /// `tools.output_cap_bytes`: what one read returns at most.
    pub output_cap_bytes: u64,
    /// `jobs/<session id>` under the data dir.
    pub dir: Utf8PathBuf,
    /// The `eonyx` executable that runs the keeper; `None` (library
    /// tests): the command is spawned directly in its own process group,
    /// without the parent-death signal.
    pub keeper: Option<PathBuf>,
}

/// A job's start or end, for the agent to record and announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobNote {
    Started {
        id: u32,
        command: String,
        log: Utf8PathBuf,
    },
    Exited {
        id: u32,
        command: String,
        state: JobState,
        secs: u64,
        /// The `shell` call that started it.
        call_id: Option<String>,
    },
}

/// One job as `/jobs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: u32,
    pub command: String,
    pub state: JobState,
    /// Seconds it ran (so far).
    pub secs: u64,
    pub log: Utf8PathBuf,
    /// RFC 3339.
    pub started: String,
}

/// One session's background jobs.
#[derive(Debug)]
pub struct Jobs {
    config: JobsConfig,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    /// Bumped on every new output and every exit.
    changed: tokio::sync::watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u32,
    jobs: BTreeMap<u32, Job>,
    /// Starts not taken by the agent yet; exits are found in `jobs`.
    started: Vec<u32>,
    /// What the session still owes about them.
    notices: notices::Notices,
}

#[derive(Debug)]
struct Job {
    command: String,
    started_at: String,
    started: Instant,
    log_path: Utf8PathBuf,
    log: log::Log,
    /// The model's read cursor (logical offset).
    read: u64,
    state: JobState,
    ended: Option<Instant>,
    /// The model saw the final state.
    exit_seen: bool,
    /// The exit was handed to the agent.
    exit_taken: bool,
    notify: bool,
    pid: i32,
    /// Signals go to the keeper (which forwards them), else to the group.
    kept: bool,
}

impl Job {
    fn secs(&self) -> u64 {
        self.ended
            .unwrap_or_else(Instant::now)
            .duration_since(self.started)
            .as_secs()
    }

    fn info(&self, id: u32) -> JobInfo {
        JobInfo {
            id,
            command: self.command.clone(),
            state: self.state,
            secs: self.secs(),
            log: self.log_path.clone(),
            started: self.started_at.clone(),
        }
    }
}

fn lock(m: &Mutex<Table>) -> MutexGuard<'_, Table> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Jobs {
    /// The jobs of a session; numbering goes on after the logs an
    /// earlier process of the session left.
    pub fn new(config: JobsConfig) -> Self {
        let (changed, _) = tokio::sync::watch::channel(0);
        let next_id = std::fs::read_dir(&config.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                name.to_str()?.strip_suffix(".log")?.parse::<u32>().ok()
            })
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        Self {
            config,
            shared: Arc::new(Shared {
                table: Mutex::new(Table {
                    next_id,
                    ..Table::default()
                }),
                changed,
            }),
        }
    }

    pub fn config(&self) -> &JobsConfig {
        &self.config
    }

    /// Wakes on every new output and every exit.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Every job of the session, by id.
    pub fn list(&self) -> Vec<JobInfo> {
        let t = lock(&self.shared.table);
        t.jobs.iter().map(|(id, j)| j.info(*id)).collect()
    }

    /// The jobs running now, as a compaction pins them.
    pub fn pinned(&self) -> Vec<PinnedJob> {
        let t = lock(&self.shared.table);
        t.jobs
            .iter()
            .filter(|(_, j)| j.state.is_running())
            .map(|(id, j)| PinnedJob {
                id: *id,
                command: j.command.clone(),
                started: j.started_at.clone(),
                log: j.log_path.to_string(),
            })
            .collect()
    }

    /// Starts and exits since the last call, in that order; an exit is
    /// handed over once, and counts as seen from then on. `call_id`: the
    /// call that just ran (a start belongs to it). An exit the model has
    /// not seen leaves a notice ([`Jobs::take_notices`]).
    pub fn take_events(&self, call_id: Option<&str>) -> Vec<JobNote> {
        let mut guard = lock(&self.shared.table);
        let t = &mut *guard;
        let started = std::mem::take(&mut t.started);
        let mut out = Vec::new();
        for id in started {
            let Some(j) = t.jobs.get(&id) else { continue };
            if let Some(c) = call_id {
                t.notices.started_by(id, c);
            }
            out.push(JobNote::Started {
                id,
                command: j.command.clone(),
                log: j.log_path.clone(),
            });
        }
        for (id, j) in t.jobs.iter_mut() {
            if j.state.is_running() || j.exit_taken {
                continue;
            }
            j.exit_taken = true;
            let secs = j.secs();
            if !j.exit_seen {
                t.notices
                    .unseen_exit(exit_notice(*id, j.state, secs, &j.command), j.notify);
            }
            out.push(JobNote::Exited {
                id: *id,
                command: j.command.clone(),
                state: j.state,
                secs,
                call_id: t.notices.call_of(*id),
            });
            j.exit_seen = true;
        }
        out
    }

    fn state_of(&self, id: u32) -> JobState {
        lock(&self.shared.table)
            .jobs
            .get(&id)
            .map_or(JobState::Exited(-1), |j| j.state)
    }

    /// The error for an id no job has.
    fn unknown(&self, t: &Table, id: u32) -> ToolError {
        if t.jobs.is_empty() {
            return ToolError::Usage(format!(
                "no job {id}: no job was started in this session (start one with shell and \"background\": true)"
            ));
        }
        let known: Vec<String> = t
            .jobs
            .iter()
            .map(|(i, j)| format!("job {i} ({}: {})", j.state, j.command))
            .collect();
        ToolError::Usage(format!(
            "no job {id} in this session; its jobs: {}",
            known.join(", ")
        ))
    }
}

/// The definitions of `job_output` and `job_stop`, offered with `shell`
/// (kept short: every request carries them).
pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: ToolName::JobOutput.as_str().into(),
            description: "A background job's new output since the last read, and its state. \
                          wait_s waits for new output or the exit: never poll with sleep."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "id": { "type": "integer" },
                    "wait_s": { "type": "integer", "minimum": 0, "maximum": MAX_WAIT_S }
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: ToolName::JobStop.as_str().into(),
            description: "Stop a background job (SIGTERM, SIGKILL after 2 s).".into(),
            parameters: json!({
                "type": "object",
                "properties": { "id": { "type": "integer" } },
                "required": ["id"],
                "additionalProperties": false
            }),
        },
    ]
}

#[cfg(test)]
#[cfg(unix)]
mod tests;
