//! Background jobs (docs/tools.md#jobs): servers,
//! watchers and long builds a session runs beside the conversation.
//! [`Jobs`] is one session's jobs and their state: `shell` with
//! `"background": true` starts one, `job_output` reads what is new,
//! `job_stop` stops one; the agent takes their starts and exits from
//! [`Jobs::take_events`] (session records, notices, events), pins the
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
mod spawn;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use eonyx_core::job::{JobState, PinnedJob};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ToolDef, ToolName};
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) use keeper::{Flags as KeeperFlags, prepare as keeper_prepare};
pub use keeper::{KEEPER_SUBCOMMAND, KeeperError, Leader, STOP_GRACE, run_keeper};
pub(crate) use spawn::spawn as spawn_kept;

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
        /// The model has not seen the exit: it gets a notice.
        unseen: bool,
        /// The call asked for `"notify": true`.
        notify: bool,
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
    /// handed over once, and counts as seen from then on.
    pub fn take_events(&self) -> Vec<JobNote> {
        let mut t = lock(&self.shared.table);
        let started = std::mem::take(&mut t.started);
        let mut out: Vec<JobNote> = started
            .into_iter()
            .filter_map(|id| {
                t.jobs.get(&id).map(|j| JobNote::Started {
                    id,
                    command: j.command.clone(),
                    log: j.log_path.clone(),
                })
            })
            .collect();
        for (id, j) in t.jobs.iter_mut() {
            if j.state.is_running() || j.exit_taken {
                continue;
            }
            j.exit_taken = true;
            out.push(JobNote::Exited {
                id: *id,
                command: j.command.clone(),
                state: j.state,
                secs: j.secs(),
                unseen: !j.exit_seen,
                notify: j.notify,
            });
            j.exit_seen = true;
        }
        out
    }

    /// Start `cmd` (built by `shell` as for a foreground command) as the
    /// next job; returns its first second of output.
    pub(crate) async fn start(
        &self,
        command: &str,
        cmd: std::process::Command,
        leader: Leader,
        notify: bool,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let id = {
            let t = lock(&self.shared.table);
            let running: Vec<String> = t
                .jobs
                .iter()
                .filter(|(_, j)| j.state.is_running())
                .map(|(id, j)| format!("job {id} ({})", j.command))
                .collect();
            if running.len() as u64 >= u64::from(self.config.max_jobs) {
                return Err(ToolError::Usage(format!(
                    "not started: {} jobs are running, the most tools.max_jobs allows: {}; stop one with job_stop first",
                    running.len(),
                    running.join(", ")
                )));
            }
            t.next_id
        };
        let log_path = self.config.dir.join(format!("{id}.log"));
        let file = create_log(&self.config.dir, &log_path)?;
        let (mut cmd, kept) = keeper::prepare(
            self.config.keeper.as_deref(),
            cmd,
            leader,
            keeper::Flags::default(),
        );
        let spawn_err = |e| ToolError::io("cannot start the job", command, e);
        let (reader, writer) = std::io::pipe().map_err(spawn_err)?;
        cmd.stdin(Stdio::null())
            .stdout(writer.try_clone().map_err(spawn_err)?)
            .stderr(writer);
        let child = match spawn::spawn(cmd) {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&log_path);
                return Err(ToolError::io("cannot start the job", command, e));
            }
        };
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        {
            let mut t = lock(&self.shared.table);
            t.next_id += 1;
            t.started.push(id);
            t.jobs.insert(
                id,
                Job {
                    command: command.to_owned(),
                    started_at: eonyx_core::time::now_rfc3339(),
                    started: Instant::now(),
                    log_path: log_path.clone(),
                    log: log::Log::new(file, self.config.log_max_bytes),
                    read: 0,
                    state: JobState::Running,
                    ended: None,
                    exit_seen: false,
                    exit_taken: false,
                    notify,
                    pid,
                    kept,
                },
            );
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name(format!("job {id} output"))
            .spawn(move || {
                pump(reader, id, &shared);
                let _ = done_tx.send(());
            })
            .map_err(|e| ToolError::io("cannot start the job's output reader", command, e))?;
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name(format!("job {id}"))
            .spawn(move || wait(child, id, &shared, &done_rx))
            .map_err(|e| ToolError::io("cannot start the job's waiter", command, e))?;

        // Its first second.
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + FIRST_OUTPUT;
        loop {
            if !self.state_of(id).is_running() || cancel.is_cancelled() {
                break;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                () = tokio::time::sleep_until(deadline) => break,
                r = rx.changed() => if r.is_err() { break },
            }
        }
        let mut text = format!("job {id} started: {command}\n");
        let read = self.read_new(id)?;
        text.push_str(&read.text);
        if let Some(state) = read.ended {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[job {id} {state} within its first second]\n"));
        }
        Ok(ToolOutput::ok(text))
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

    /// `job_output {"id", "wait_s"}`.
    pub(crate) async fn output(
        &self,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            id: u32,
            #[serde(default)]
            wait_s: Option<f64>,
        }
        let a: Args = parse_args(ToolName::JobOutput, args)?;
        let wait = a.wait_s.unwrap_or(0.0);
        if !(0.0..=MAX_WAIT_S as f64).contains(&wait) {
            return Err(ToolError::bad_args(
                ToolName::JobOutput,
                format!("wait_s must be between 0 and {MAX_WAIT_S} seconds, got {wait}"),
            ));
        }
        {
            let t = lock(&self.shared.table);
            if !t.jobs.contains_key(&a.id) {
                return Err(self.unknown(&t, a.id));
            }
        }
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(wait);
        loop {
            let ready = {
                let t = lock(&self.shared.table);
                t.jobs
                    .get(&a.id)
                    .is_none_or(|j| !j.state.is_running() || j.log.total() > j.read)
            };
            if ready || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ToolError::Interrupted),
                () = tokio::time::sleep_until(deadline) => break,
                r = rx.changed() => if r.is_err() { break },
            }
        }
        let read = self.read_new(a.id)?;
        Ok(ToolOutput::ok(format!(
            "{}\n{}",
            read.header,
            or_none(read.text)
        )))
    }

    /// `job_stop {"id"}`, and `/jobs stop N`.
    pub(crate) async fn stop_tool(&self, args: &Value) -> Result<ToolOutput, ToolError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            id: u32,
        }
        let a: Args = parse_args(ToolName::JobStop, args)?;
        self.stop(a.id, Seen::ByModel).await.map(ToolOutput::ok)
    }

    /// Stop job `id` (SIGTERM to its group, SIGKILL after 2 s); its final
    /// state and last output. `seen`: whether the model sees them (a
    /// user's `/jobs stop` leaves the exit to a notice).
    pub async fn stop(&self, id: u32, seen: Seen) -> Result<String, ToolError> {
        let already = {
            let t = lock(&self.shared.table);
            let Some(j) = t.jobs.get(&id) else {
                return Err(self.unknown(&t, id));
            };
            if j.state.is_running() {
                signal(j, Sig::Term);
                false
            } else {
                true
            }
        };
        if !already {
            // The keeper sends SIGKILL at the grace time; eonyx only steps
            // in for a keeper that does not answer.
            self.wait_exit(id, STOP_GRACE + KEEPER_SLACK).await;
            if self.state_of(id).is_running() {
                if let Some(j) = lock(&self.shared.table).jobs.get(&id) {
                    signal(j, Sig::Kill);
                }
                self.wait_exit(id, Duration::from_secs(2)).await;
            }
        }
        if seen == Seen::ByUser {
            let header = {
                let t = lock(&self.shared.table);
                t.jobs
                    .get(&id)
                    .map(|j| format!("job {id} {} after {} s: {}", j.state, j.secs(), j.command))
                    .unwrap_or_default()
            };
            return Ok(header);
        }
        let read = self.read_new(id)?;
        let first = if already {
            format!("{} (it had already ended)", read.header)
        } else {
            read.header
        };
        Ok(format!("{first}\n{}", or_none(read.text)))
    }

    async fn wait_exit(&self, id: u32, within: Duration) {
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        while self.state_of(id).is_running() {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return,
                r = rx.changed() => if r.is_err() { return },
            }
        }
    }

    /// Stop every running job (eonyx's exit, the end of a session or a
    /// task); the ones that were running, as they ended.
    pub async fn stop_all(&self) -> Vec<JobInfo> {
        let ids: Vec<u32> = {
            let t = lock(&self.shared.table);
            let ids: Vec<u32> = t
                .jobs
                .iter()
                .filter(|(_, j)| j.state.is_running())
                .map(|(id, _)| *id)
                .collect();
            for id in &ids {
                if let Some(j) = t.jobs.get(id) {
                    signal(j, Sig::Term);
                }
            }
            ids
        };
        for id in &ids {
            self.wait_exit(*id, STOP_GRACE + KEEPER_SLACK).await;
            if self.state_of(*id).is_running() {
                if let Some(j) = lock(&self.shared.table).jobs.get(id) {
                    signal(j, Sig::Kill);
                }
                self.wait_exit(*id, Duration::from_secs(1)).await;
            }
        }
        let mut t = lock(&self.shared.table);
        ids.iter()
            .filter_map(|id| {
                let j = t.jobs.get_mut(id)?;
                j.exit_seen = true;
                Some(j.info(*id))
            })
            .collect()
    }

    /// What is new in job `id`'s output (marked read), head and tail over
    /// the cap, and its state line.
    fn read_new(&self, id: u32) -> Result<NewOutput, ToolError> {
        let mut t = lock(&self.shared.table);
        let cap = self.config.output_cap_bytes.max(256);
        let Some(j) = t.jobs.get_mut(&id) else {
            return Err(ToolError::Usage(format!("no job {id} in this session")));
        };
        let (from, to) = (j.read, j.log.total());
        let io = |e| ToolError::io("cannot read the job log", j.log_path.as_str(), e);
        let mut text = String::new();
        let mut dropped = 0;
        let mut left_out = 0;
        if to - from <= cap {
            let c = j.log.read(from, to).map_err(io)?;
            dropped += c.dropped;
            text.push_str(&String::from_utf8_lossy(&c.bytes));
        } else {
            let half = cap / 2;
            let head = j.log.read(from, from + half).map_err(io)?;
            let tail = j.log.read(to - half, to).map_err(io)?;
            dropped += head.dropped + tail.dropped;
            left_out = to - from - 2 * half;
            text.push_str(&String::from_utf8_lossy(&head.bytes));
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[… {left_out} bytes left out (over tools.output_cap_bytes); the whole output is in {} …]\n",
                j.log_path
            ));
            text.push_str(&String::from_utf8_lossy(&tail.bytes));
        }
        if dropped > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{dropped} bytes of this output were already dropped from the log (tools.job_log_max_bytes)]\n"
            ));
        }
        let _ = left_out;
        j.read = to;
        let ended = (!j.state.is_running()).then_some(j.state);
        if ended.is_some() {
            j.exit_seen = true;
        }
        let header = match j.state {
            JobState::Running => format!("job {id} running for {} s: {}", j.secs(), j.command),
            s => format!("job {id} {s} after {} s: {}", j.secs(), j.command),
        };
        Ok(NewOutput {
            header,
            text,
            ended,
        })
    }
}

/// Who a stop's result is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// `job_stop`: the result is the model's, its exit seen.
    ByModel,
    /// `/jobs stop N`: the user's; the model gets the exit's notice.
    ByUser,
}

/// `(no new output)` for nothing new.
fn or_none(text: String) -> String {
    if text.is_empty() {
        "(no new output)\n".to_owned()
    } else {
        text
    }
}

struct NewOutput {
    header: String,
    text: String,
    ended: Option<JobState>,
}

impl Drop for Jobs {
    /// Whatever still runs is stopped (SIGTERM, SIGKILL after the grace
    /// time): a job never outlives its session.
    fn drop(&mut self) {
        let running = |t: &Table| t.jobs.values().any(|j| j.state.is_running());
        {
            let t = lock(&self.shared.table);
            if !running(&t) {
                return;
            }
            for j in t.jobs.values().filter(|j| j.state.is_running()) {
                signal(j, Sig::Term);
            }
        }
        let deadline = Instant::now() + STOP_GRACE + KEEPER_SLACK;
        while Instant::now() < deadline && running(&lock(&self.shared.table)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let t = lock(&self.shared.table);
        for j in t.jobs.values().filter(|j| j.state.is_running()) {
            signal(j, Sig::Kill);
        }
    }
}

enum Sig {
    Term,
    Kill,
}

/// Signal a job: its keeper (which stops the group), or its group.
fn signal(j: &Job, sig: Sig) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, kill, killpg};
        let s = match sig {
            Sig::Term => Signal::SIGTERM,
            Sig::Kill => Signal::SIGKILL,
        };
        let pid = nix::unistd::Pid::from_raw(j.pid);
        if j.kept {
            let _ = kill(pid, s);
        } else {
            let _ = killpg(pid, s);
        }
    }
    #[cfg(not(unix))]
    let _ = (j, sig);
}

/// The log file, new and private (0600), in a private directory.
fn create_log(dir: &camino::Utf8Path, path: &camino::Utf8Path) -> Result<std::fs::File, ToolError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
        .map_err(|e| ToolError::io("cannot create the job log directory", dir.as_str(), e))?;
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
        .map_err(|e| ToolError::io("cannot create the job log", path.as_str(), e))
}

/// Reads the job's output into its log until every writer is gone.
fn pump(mut reader: std::io::PipeReader, id: u32, shared: &Shared) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let mut t = lock(&shared.table);
            if let Some(j) = t.jobs.get_mut(&id) {
                // A log that cannot be written loses output, not the job.
                let _ = j.log.append(&buf[..n]);
            }
        }
        shared.changed.send_modify(|g| *g += 1);
    }
}

/// Waits for the job's process, then (its output drained, or half a
/// second on) records how it ended.
fn wait(
    mut child: std::process::Child,
    id: u32,
    shared: &Shared,
    drained: &std::sync::mpsc::Receiver<()>,
) {
    let state = match child.wait() {
        Ok(status) => state_of(status),
        Err(_) => JobState::Exited(-1),
    };
    let _ = drained.recv_timeout(Duration::from_millis(500));
    {
        let mut t = lock(&shared.table);
        if let Some(j) = t.jobs.get_mut(&id) {
            j.state = state;
            j.ended = Some(Instant::now());
        }
    }
    shared.changed.send_modify(|g| *g += 1);
}

fn state_of(status: std::process::ExitStatus) -> JobState {
    if let Some(code) = status.code() {
        return JobState::Exited(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(sig) = status.signal() {
            return JobState::Killed(sig);
        }
    }
    JobState::Exited(-1)
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
mod tests {
    use serde_json::json;

    use super::super::test_support::Fixture;
    use super::*;

    fn with_jobs(cap: u64) -> Fixture {
        let mut f = Fixture::new();
        let dir = f.outside().join("jobs");
        f.ctx.jobs = Some(Arc::new(Jobs::new(JobsConfig {
            max_jobs: 8,
            log_max_bytes: 64 * 1024 * 1024,
            output_cap_bytes: cap,
            dir,
            keeper: None,
        })));
        f
    }

    #[tokio::test]
    async fn a_job_that_floods_output_is_read_head_and_tail_and_never_whole() {
        let f = with_jobs(1000);
        let out = f
            .run(
                "shell",
                json!({"command": "head -c 300000 /dev/urandom; echo; echo THE-END", "background": true}),
            )
            .await;
        assert!(!out.is_error, "{}", out.text);
        let read = f.run("job_output", json!({"id": 1, "wait_s": 30})).await;
        let read = if read.text.starts_with("job 1 running") {
            f.run("job_output", json!({"id": 1, "wait_s": 30})).await
        } else {
            read
        };
        let all = format!("{}{}", out.text, read.text);
        assert!(all.len() < 8000, "{}", all.len());
        assert!(
            all.contains("bytes left out (over tools.output_cap_bytes)"),
            "{all}"
        );
        // Read again: no new output, the final state.
        let mut again = f.run("job_output", json!({"id": 1})).await;
        for _ in 0..50 {
            if !again.text.starts_with("job 1 running") {
                break;
            }
            again = f.run("job_output", json!({"id": 1, "wait_s": 1})).await;
        }
        assert!(
            again.text.starts_with("job 1 exited 0 after "),
            "{}",
            again.text
        );
        let last = f.run("job_output", json!({"id": 1})).await;
        assert!(last.text.ends_with("(no new output)\n"), "{}", last.text);
        assert!(
            last.text.starts_with("job 1 exited 0 after "),
            "{}",
            last.text
        );
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error_and_a_failed_start_takes_no_id() {
        let f = with_jobs(1000);
        let out = f.run("job_output", json!({"id": 3})).await;
        assert!(out.is_error);
        assert!(
            out.text
                .starts_with("no job 3: no job was started in this session"),
            "{}",
            out.text
        );
        let out = f.run("job_output", json!({"id": 1, "wait_s": -1})).await;
        assert_eq!(
            out.text,
            "invalid arguments for job_output: wait_s must be between 0 and 60 seconds, got -1"
        );
        let out = f.run("job_stop", json!({"id": "one"})).await;
        assert!(
            out.text.starts_with("invalid arguments for job_stop:"),
            "{}",
            out.text
        );
        let out = f
            .run("shell", json!({"command": "true", "notify": true}))
            .await;
        assert!(
            out.text.contains("notify applies to background jobs only"),
            "{}",
            out.text
        );
        // A project root that is gone: the command cannot start.
        let mut g = with_jobs(1000);
        g.ctx.project_root = g.outside().join("missing");
        let out = g
            .run("shell", json!({"command": "true", "background": true}))
            .await;
        assert!(out.is_error, "{}", out.text);
        assert!(out.text.starts_with("cannot start the job"), "{}", out.text);
        let out = g
            .run("shell", json!({"command": "sleep 5", "background": true}))
            .await;
        assert!(out.is_error);
        let jobs = g.ctx.jobs.as_ref().unwrap();
        assert!(jobs.list().is_empty());
        g.ctx.project_root = f.root().to_owned();
        let out = g
            .run("shell", json!({"command": "echo hi", "background": true}))
            .await;
        assert!(
            out.text.starts_with("job 1 started: echo hi\nhi\n"),
            "{}",
            out.text
        );
    }
}
