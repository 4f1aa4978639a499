//! A stdio server's process: started with eonyx's environment minus the
//! provider key variables plus its `env`, in its own process group (so the
//! terminal's Ctrl-C does not reach it), its stderr kept as a short tail for
//! error messages, and stopped as a group.
//!
//! rmcp's own `transport-child-process` is not used: it brings process-wrap
//! and a second nix; the JSON-RPC stream here is rmcp's async read/write
//! transport over the child's pipes.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::client::McpError;

/// Lines of a server's stderr kept for error messages.
const TAIL_LINES: usize = 8;
/// Longest stderr line kept (characters).
const TAIL_LINE_CHARS: usize = 300;

/// What to start.
pub(crate) struct Spawn<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a std::collections::BTreeMap<String, String>,
    /// Relative to `root`; `None` = `root`.
    pub cwd: Option<&'a str>,
    pub root: &'a Utf8Path,
    /// Removed from the inherited environment (the provider key variables).
    pub hidden_env: &'a [String],
}

/// A started server process.
pub(crate) struct Process {
    child: Mutex<Option<Child>>,
    pid: Option<u32>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Process {
    /// Start it; the pipes go to the JSON-RPC transport.
    pub(crate) fn spawn(s: &Spawn<'_>) -> Result<(Self, ChildStdout, ChildStdin), McpError> {
        let cwd: Utf8PathBuf = match s.cwd {
            Some(c) => s.root.join(c),
            None => s.root.to_path_buf(),
        };
        let mut cmd = Command::new(s.command);
        cmd.args(s.args)
            .current_dir(&cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in s.hidden_env {
            cmd.env_remove(var);
        }
        cmd.envs(s.env);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::NotFound if !cwd.is_dir() => {
                    format!(" (the working directory {cwd} does not exist)")
                }
                std::io::ErrorKind::NotFound => {
                    " (is it installed and on PATH? `command` may also be an absolute path)"
                        .to_owned()
                }
                _ => String::new(),
            };
            McpError::Start(format!("cannot run `{}`: {e}{hint}", s.command))
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(McpError::Start(
                "the server process has no stdin or stdout pipe".into(),
            ));
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut t = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    if t.len() == TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(eonyx_core::text::ellipsize(
                        line.trim_end(),
                        TAIL_LINE_CHARS,
                    ));
                }
            });
        }
        let pid = child.id();
        Ok((
            Self {
                child: Mutex::new(Some(child)),
                pid,
                stderr,
            },
            stdout,
            stdin,
        ))
    }

    /// Whether the process is still running.
    pub(crate) fn running(&self) -> bool {
        let mut guard = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// `: exit status 3; stderr: …` when it has exited, else the stderr
    /// tail alone (or nothing).
    pub(crate) fn detail(&self) -> String {
        let status = {
            let mut guard = self.child.lock().unwrap_or_else(PoisonError::into_inner);
            guard.as_mut().and_then(|c| c.try_wait().ok().flatten())
        };
        let mut s = String::new();
        if let Some(st) = status {
            s.push_str(&format!(" (the process ended: {})", describe_status(st)));
        }
        let tail = self.stderr_tail();
        if !tail.is_empty() {
            s.push_str(&format!("; its stderr ended with: {tail}"));
        }
        s
    }

    /// [`Process::detail`] once the process has exited (or after half a
    /// second), so a dying server's exit status and last words are in it.
    pub(crate) async fn detail_after_exit(&self) -> String {
        for _ in 0..50 {
            if !self.running() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Its stderr may still be in the pipe.
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.detail()
    }

    /// The last lines the server wrote to stderr, joined with ` | `.
    pub(crate) fn stderr_tail(&self) -> String {
        let t = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        t.iter()
            .filter(|l| !l.trim().is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// Wait up to `grace` for the process to exit on its own (its stdin is
    /// closed by then), then kill its whole process group.
    pub(crate) async fn stop(&self, grace: Duration) {
        let child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut child) = child else {
            return;
        };
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
        kill_group(self.pid);
        let _ = child.kill().await;
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // kill_on_drop only reaches the direct child; a wrapper (uvx, npx)
        // may have started the real server under it.
        let running = self
            .child
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        if running {
            kill_group(self.pid);
        }
    }
}

#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: Option<u32>) {}

fn describe_status(st: std::process::ExitStatus) -> String {
    if let Some(code) = st.code() {
        return format!("exit status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = st.signal() {
            return format!("killed by signal {sig}");
        }
    }
    st.to_string()
}
