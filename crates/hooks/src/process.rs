//! Running one hook command (docs/hooks.md#running): `sh -c COMMAND` in
//! the project root, outside the sandbox, without the provider key
//! variables, `EONYX_PROJECT_DIR` and `CLAUDE_PROJECT_DIR` set, the input on
//! stdin, stdout and stderr read up to [`OUTPUT_CAP_BYTES`] each, its own
//! process group killed whole at the timeout or when the run is dropped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::RunEnv;

/// Bytes of stdout (and of stderr) kept; the rest is read and dropped.
pub const OUTPUT_CAP_BYTES: usize = 64 * 1024;

/// After the shell exits, how long its output may still take to close
/// (a background process it started may hold it open).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// How one command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Exit code (128 + signal when killed by one).
    Exited(i32),
    /// Killed with its process group after `timeout`.
    TimedOut,
    /// Could not be started.
    NotStarted(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Ran {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
    pub millis: u64,
}

/// Kills the process group when dropped, unless disarmed (the command
/// ended and its output closed).
struct Group(Option<i32>);

impl Group {
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.take() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        self.0 = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_capped(mut r: impl AsyncRead + Unpin) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut buf = vec![0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP_BYTES.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
                dropped += (n - room) as u64;
            }
        }
    }
    (kept, dropped)
}

fn text((bytes, dropped): (Vec<u8>, u64)) -> String {
    let mut s = String::from_utf8_lossy(&bytes).into_owned();
    if dropped > 0 {
        s.push_str(&format!(
            "\n[hook output truncated: {dropped} more bytes (limit {OUTPUT_CAP_BYTES})]"
        ));
    }
    s
}

/// Run `command` with `input` on stdin.
pub(crate) async fn run(command: &str, input: &[u8], timeout: Duration, env: &RunEnv) -> Ran {
    let start = Instant::now();
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(env.project_dir.as_std_path())
        .env("EONYX_PROJECT_DIR", env.project_dir.as_str())
        .env("CLAUDE_PROJECT_DIR", env.project_dir.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // A hook never sees a provider key.
    for var in &env.hidden_env {
        cmd.env_remove(var);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                ended: Ended::NotStarted(format!(
                    "cannot start `sh -c` in {}: {e}",
                    env.project_dir
                )),
                stdout: String::new(),
                stderr: String::new(),
                millis: elapsed(start),
            };
        }
    };
    let mut group = Group(child.id().and_then(|p| i32::try_from(p).ok()));
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let feed = async move {
        if let Some(mut w) = stdin {
            // A hook that does not read its input is fine (EPIPE ignored).
            let _ = w.write_all(input).await;
            let _ = w.shutdown().await;
        }
    };
    let out = async move {
        match stdout {
            Some(r) => read_capped(r).await,
            None => (Vec::new(), 0),
        }
    };
    let err = async move {
        match stderr {
            Some(r) => read_capped(r).await,
            None => (Vec::new(), 0),
        }
    };
    let outputs = async { tokio::join!(out, err) };
    tokio::pin!(outputs);
    let work = async {
        let ((), status) = tokio::join!(feed, child.wait());
        status
    };
    let ended = tokio::time::timeout(timeout, work).await;
    let (ended, outputs) = match ended {
        Ok(Ok(status)) => {
            let outs = tokio::time::timeout(DRAIN_GRACE, &mut outputs).await.ok();
            group.0 = None;
            (Ended::Exited(exit_code(status)), outs)
        }
        Ok(Err(e)) => {
            group.kill();
            (
                Ended::NotStarted(format!("cannot wait for `sh -c`: {e}")),
                None,
            )
        }
        Err(_) => {
            group.kill();
            let _ = child.wait().await;
            let outs = tokio::time::timeout(DRAIN_GRACE, &mut outputs).await.ok();
            (Ended::TimedOut, outs)
        }
    };
    // It ended by itself: what it started in the background is its own.
    group.0 = None;
    let (stdout, stderr) = match outputs {
        Some((o, e)) => (text(o), text(e)),
        None => (String::new(), String::new()),
    };
    Ran {
        ended,
        stdout,
        stderr,
        millis: elapsed(start),
    }
}

fn elapsed(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    -1
}
