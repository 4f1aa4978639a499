//! Background jobs' shared vocabulary (docs/tools.md#jobs):
//! a job's state as the model reads it, the `job` record of a session
//! file, the running jobs a compaction pins, and the notice an unseen exit
//! is announced with. Running them is `eonyx-tools`' `jobs` module.

use serde::{Deserialize, Serialize};

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Running,
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal number.
    Killed(i32),
}

impl JobState {
    pub fn is_running(self) -> bool {
        self == JobState::Running
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobState::Running => f.write_str("running"),
            JobState::Exited(code) => write!(f, "exited {code}"),
            JobState::Killed(sig) => write!(f, "killed by {}", signal_name(*sig)),
        }
    }
}

/// `SIGTERM` for 15, `signal 99` for a number this list does not know.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_owned()
}

/// Whether a `job` record is a start or an end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobEvent {
    Started,
    Exited,
}

/// One `job` line of a session file (docs/session-format.md#job-records):
/// a job started, or ended (`status`: `exited 0`, `killed by SIGTERM`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub seq: u64,
    pub ts: String,
    /// The job's number in its session (1, 2, 3…).
    pub id: u32,
    pub command: String,
    pub event: JobEvent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A job running when a compaction was made, pinned verbatim above the
/// summary (docs/compaction.md#what-is-pinned).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedJob {
    pub id: u32,
    pub command: String,
    /// When it started (RFC 3339).
    pub started: String,
    /// Its whole output.
    pub log: String,
}

/// The heading the pinned running jobs start with.
pub const PINNED_JOBS_HEADING: &str =
    "## Background jobs running at this compaction (kept verbatim by eonyx)";

/// The pinned section's part for `jobs` (empty when there are none).
pub fn pinned_jobs(jobs: &[PinnedJob]) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let mut s = PINNED_JOBS_HEADING.to_owned();
    for j in jobs {
        s.push_str(&format!(
            "\n- job {}: {} (started {}; log {}; read it with job_output, stop it with job_stop)",
            j.id, j.command, j.started, j.log
        ));
    }
    s
}

/// The message an exit the model has not seen is announced with, appended
/// after the tool results (never edited into earlier messages).
pub fn exit_notice(id: u32, state: JobState, secs: u64, command: &str) -> String {
    format!("[job {id} {state} after {secs} s: {command} — a notice from eonyx, not user input]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_notices_read_as_documented() {
        assert_eq!(JobState::Exited(0).to_string(), "exited 0");
        assert_eq!(JobState::Killed(15).to_string(), "killed by SIGTERM");
        assert_eq!(
            exit_notice(3, JobState::Exited(0), 41, "npm run dev"),
            "[job 3 exited 0 after 41 s: npm run dev — a notice from eonyx, not user input]"
        );
    }

    #[test]
    fn a_job_record_has_the_documented_shape() {
        let r = JobRecord {
            seq: 4,
            ts: "t".into(),
            id: 1,
            command: "sleep 9".into(),
            event: JobEvent::Exited,
            status: Some("exited 0".into()),
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"seq":4,"ts":"t","id":1,"command":"sleep 9","event":"exited","status":"exited 0"}"#
        );
    }
}
