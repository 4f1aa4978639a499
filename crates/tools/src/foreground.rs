//! A foreground command's process (docs/tools.md#sandbox): spawned under
//! the job keeper where there is one and no PID namespace ends it (the
//! Landlock backend, the sandbox off), so that nothing it starts outlives
//! it: when the shell exits the keeper kills what it left, and a timeout,
//! a cancel or the drop of the call kills everything at once (`SIGUSR1`
//! to the keeper). Under bubblewrap, or where there is no keeper (library
//! tests), the command leads a process group of its own, killed as one.
//!
//! Spawned from the jobs' long-lived spawner thread (the keeper's
//! parent-death signal follows the thread that forked it) and waited for
//! on a thread of its own, so nothing here blocks eonyx's exit.

use std::process::ExitStatus;

use tokio::sync::oneshot;

use crate::jobs::{KeeperFlags, Leader, keeper_prepare, spawn_kept};

/// A running foreground command.
pub(crate) struct Running {
    pid: Option<i32>,
    kept: bool,
    status: Option<oneshot::Receiver<std::io::Result<ExitStatus>>>,
    ended: bool,
}

/// Spawn `cmd` with stdin `/dev/null` and stdout and stderr to `output`:
/// under `keeper` when given, else in a process group of its own unless it
/// makes its own session (`leader`).
pub(crate) fn spawn(
    cmd: std::process::Command,
    keeper: Option<&std::path::Path>,
    leader: Leader,
    output: std::io::PipeWriter,
) -> std::io::Result<Running> {
    // Under bubblewrap its PID namespace ends everything: no keeper.
    let keeper = keeper.filter(|_| leader != Leader::PidNamespace);
    let flags = KeeperFlags {
        note: true,
        ..Default::default()
    };
    let (mut cmd, kept) = keeper_prepare(keeper, cmd, leader, flags);
    cmd.stdin(std::process::Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output);
    let mut child = spawn_kept(cmd)?;
    let pid = i32::try_from(child.id()).ok();
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("eonyx command".into())
        .spawn(move || {
            let _ = tx.send(child.wait());
        })?;
    Ok(Running {
        pid,
        kept,
        status: Some(rx),
        ended: false,
    })
}

impl Running {
    /// The command's exit status (of the keeper, which exits as it did).
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let Some(rx) = self.status.take() else {
            return Err(std::io::Error::other("the command was already waited for"));
        };
        let status = rx
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("the command's waiter is gone")));
        self.ended = true;
        status
    }

    /// Kill the command and everything it started, now.
    pub(crate) fn kill_now(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.pid {
            use nix::sys::signal::{Signal, kill, killpg};
            let pid = nix::unistd::Pid::from_raw(pid);
            if self.kept {
                let _ = kill(pid, Signal::SIGUSR1);
            } else {
                let _ = killpg(pid, Signal::SIGKILL);
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
    }

    /// [`Running::kill_now`], then wait for the end.
    pub(crate) async fn kill_and_wait(&mut self) {
        self.kill_now();
        let _ = self.wait().await;
    }
}

impl Drop for Running {
    /// A call dropped while its command runs kills the command.
    fn drop(&mut self) {
        if !self.ended {
            self.kill_now();
        }
    }
}
