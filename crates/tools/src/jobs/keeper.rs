//! The job keeper: `eonyx job-keeper [--session] -- PROGRAM ARGS…`, the
//! process eonyx starts for each background job (docs/tools.md#jobs). It is
//! what makes a job die with eonyx even on `kill -9`, with no `pre_exec`
//! (so no `unsafe`):
//!
//! 1. it makes itself a new session (no controlling terminal) and asks
//!    the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`;
//!    eonyx spawns keepers from one thread that lives as long as eonyx,
//!    since the signal follows the thread that forked);
//! 2. it starts the command in a process group of its own (or, with
//!    `--session`, lets the Landlock helper make a new session, which is
//!    a new group too), so the group holds the command and everything it
//!    starts, grandchildren included, and not the keeper;
//! 3. on SIGTERM (`job_stop`, eonyx's exit, the parent-death signal) it
//!    sends SIGTERM to that group and SIGKILL 2 s later; when the command
//!    exits by itself it SIGKILLs what is left of the group;
//! 4. it exits as the command did (the same code, or the same signal), so
//!    eonyx reads the job's state from the keeper's status.
//!
//! Under bubblewrap the group is bwrap itself, which runs the command in
//! a PID namespace (`--unshare-pid`, `--die-with-parent`): killing bwrap
//! takes every process inside with it.

use std::ffi::OsString;
use std::process::Command;
use std::time::{Duration, Instant};

/// The hidden subcommand of the `eonyx` binary that runs the keeper.
pub const KEEPER_SUBCOMMAND: &str = "job-keeper";

/// How long a stopped job has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Why the keeper could not run the command.
#[derive(Debug, thiserror::Error)]
pub enum KeeperError {
    #[error("job-keeper: {0} (this subcommand is run by eonyx itself)")]
    Usage(String),
    #[error("cannot start the job's command {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the job keeper failed: {0}")]
    Sys(String),
}

/// `--session`: the command starts a session itself (the Landlock helper).
pub(crate) fn keeper_args(
    starts_session: bool,
    program: OsString,
    args: Vec<OsString>,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![KEEPER_SUBCOMMAND.into()];
    if starts_session {
        a.push("--session".into());
    }
    a.push("--".into());
    a.push(program);
    a.extend(args);
    a
}

/// Runs the keeper with the arguments after `job-keeper`; returns the
/// command's exit code (a command killed by a signal makes the keeper die
/// of the same signal, so this only returns a code).
pub fn run_keeper(args: Vec<OsString>) -> Result<u8, KeeperError> {
    let mut it = args.into_iter();
    let mut session = false;
    let program = loop {
        match it.next() {
            Some(a) if a == "--session" => session = true,
            Some(a) if a == "--" => {
                break it
                    .next()
                    .ok_or_else(|| KeeperError::Usage("no command after `--`".into()))?;
            }
            Some(a) => {
                return Err(KeeperError::Usage(format!(
                    "unexpected argument {:?}",
                    a.to_string_lossy()
                )));
            }
            None => return Err(KeeperError::Usage("no `--` before the command".into())),
        }
    };
    let rest: Vec<OsString> = it.collect();
    imp::keep(program, rest, session)
}

#[cfg(unix)]
mod imp {
    use super::*;
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, raise, sigprocmask};
    use nix::unistd::{Pid, getppid, setsid};
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};

    fn sys(e: nix::Error) -> KeeperError {
        KeeperError::Sys(e.to_string())
    }

    pub(super) fn keep(
        program: OsString,
        args: Vec<OsString>,
        session: bool,
    ) -> Result<u8, KeeperError> {
        let parent = getppid();
        // No controlling terminal for the job (it may not read or steal
        // the user's terminal); fails only for a group leader.
        let _ = setsid();
        let mut mask = SigSet::empty();
        for s in [
            Signal::SIGTERM,
            Signal::SIGINT,
            Signal::SIGHUP,
            Signal::SIGQUIT,
            Signal::SIGCHLD,
        ] {
            mask.add(s);
        }
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None).map_err(sys)?;
        #[cfg(target_os = "linux")]
        nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(sys)?;
        if getppid() != parent {
            // eonyx died before the signal was asked for.
            return Ok(143);
        }
        let mut cmd = Command::new(&program);
        cmd.args(&args);
        if !session {
            cmd.process_group(0);
        }
        // (std resets the signal mask in the child.)
        let mut child = cmd.spawn().map_err(|source| KeeperError::Spawn {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
        let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let status = loop {
            let sig = mask.wait().map_err(sys)?;
            if sig == Signal::SIGCHLD {
                if let Ok(Some(status)) = child.try_wait() {
                    break status;
                }
                continue;
            }
            // Stop: SIGTERM to the group, SIGKILL after the grace time.
            let _ = killpg(group, Signal::SIGTERM);
            let deadline = Instant::now() + STOP_GRACE;
            let exited = loop {
                if let Ok(Some(status)) = child.try_wait() {
                    break Some(status);
                }
                if Instant::now() >= deadline {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            match exited {
                Some(status) => break status,
                None => {
                    let _ = killpg(group, Signal::SIGKILL);
                    break child.wait().map_err(|e| KeeperError::Sys(e.to_string()))?;
                }
            }
        };
        // What the command left running goes with it.
        let _ = killpg(group, Signal::SIGKILL);
        if let Some(code) = status.code() {
            return Ok(u8::try_from(code & 0xff).unwrap_or(1));
        }
        let sig = status.signal().unwrap_or(Signal::SIGKILL as i32);
        // Die of the same signal, so eonyx reads `killed by SIG…`.
        let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
        // (SIGPIPE is ignored in eonyx's process: that one reads as an
        // exit code, 141, as a shell reports it.)
        if let Ok(s) = Signal::try_from(sig) {
            let _ = raise(s);
        }
        Ok(u8::try_from((128 + sig) & 0xff).unwrap_or(1))
    }
}

#[cfg(not(unix))]
mod imp {
    use super::*;

    pub(super) fn keep(
        _program: OsString,
        _args: Vec<OsString>,
        _session: bool,
    ) -> Result<u8, KeeperError> {
        Err(KeeperError::Usage(
            "background jobs need a Unix system".into(),
        ))
    }
}
