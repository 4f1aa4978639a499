//! The job keeper: `eonyx job-keeper [--session | --pid-namespace] -- PROGRAM ARGS…`, the
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
//!    starts, grandchildren included, and not the keeper; the command
//!    starts with an empty signal mask, whatever the keeper blocks;
//! 3. on SIGTERM (`job_stop`, eonyx's exit, the parent-death signal) it
//!    sends SIGTERM to that group and SIGKILL 2 s later; when the command
//!    exits by itself it SIGKILLs what is left of the group;
//! 4. it exits as the command did (the same code, or the same signal), so
//!    eonyx reads the job's state from the keeper's status;
//! 5. it is a child subreaper (`eonyx_sandbox::reaper`): whatever the
//!    command does to its group or session (`setpgid`, `setsid`, GNU
//!    `timeout`, `set -m`), its processes stay below the keeper, and a stop,
//!    the command's end, `kill -9` of eonyx (through the parent-death
//!    signal) or a `SIGUSR1` ("kill now": a foreground command's timeout
//!    or cancel) kills every one of them, found by walking `/proc`, not by
//!    process group. Without a PID namespace the command runs below a
//!    second keeper (`--guard`), so a command that kills its parent
//!    (`kill -9 $PPID`) kills the guard, and this keeper, the subreaper
//!    above it, still kills what the command left.
//!
//! `--note` (foreground commands): when the command exits and left
//! processes running, the keeper says on its stderr (the command's
//! output) that they were stopped.
//!
//! Under bubblewrap (`--pid-namespace`) the group is bwrap itself, which
//! runs the program in a PID namespace (`--unshare-pid`,
//! `--die-with-parent`) and a session of its own (`--new-session`):
//! killing bwrap takes every process inside with it, by SIGKILL. So a stop
//! sends SIGTERM to the sessions below bwrap instead (the program's, and
//! any it made), and bwrap only gets the SIGKILL if they are not gone in
//! the grace time; bwrap reports a program killed by signal N as exit code
//! 128 + N, which the keeper turns back into that signal after a stop.

use std::ffi::OsString;
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

/// How a job's command takes the keeper's signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leader {
    /// The keeper puts it in a process group of its own (unconfined).
    Group,
    /// It makes a new session itself (the Landlock helper): `--session`.
    Session,
    /// It is bwrap, running the program in a PID namespace and a session
    /// of its own: `--pid-namespace`.
    PidNamespace,
}

/// What else a keeper is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// It is the inner keeper of another (no further guard).
    pub guard: bool,
    /// Say on stderr when the command's end left processes to stop.
    pub note: bool,
}

pub(crate) fn keeper_args(
    leader: Leader,
    flags: Flags,
    program: OsString,
    args: Vec<OsString>,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec![KEEPER_SUBCOMMAND.into()];
    match leader {
        Leader::Group => {}
        Leader::Session => a.push("--session".into()),
        Leader::PidNamespace => a.push("--pid-namespace".into()),
    }
    if flags.guard {
        a.push("--guard".into());
    }
    if flags.note {
        a.push("--note".into());
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
    let mut leader = Leader::Group;
    let mut flags = Flags::default();
    let program = loop {
        match it.next() {
            Some(a) if a == "--session" => leader = Leader::Session,
            Some(a) if a == "--pid-namespace" => leader = Leader::PidNamespace,
            Some(a) if a == "--guard" => flags.guard = true,
            Some(a) if a == "--note" => flags.note = true,
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
    imp::keep(program, rest, leader, flags)
}

/// `cmd` run under `keeper` ([`wrap`]) when there is one; else `cmd` in a
/// process group of its own unless it makes its own session (`leader`).
/// Whether it is kept.
pub(crate) fn prepare(
    keeper: Option<&std::path::Path>,
    cmd: std::process::Command,
    leader: Leader,
    flags: Flags,
) -> (std::process::Command, bool) {
    match keeper {
        Some(k) => (wrap(k, &cmd, leader, flags), true),
        None => {
            let mut cmd = cmd;
            #[cfg(unix)]
            if leader != Leader::Session {
                std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            }
            (cmd, false)
        }
    }
}

/// `eonyx job-keeper [--session | --pid-namespace] [--note] -- PROGRAM
/// ARGS…` with `cmd`'s environment and directory.
pub(crate) fn wrap(
    keeper: &std::path::Path,
    cmd: &std::process::Command,
    leader: Leader,
    flags: Flags,
) -> std::process::Command {
    let mut k = std::process::Command::new(keeper);
    k.args(keeper_args(
        leader,
        flags,
        cmd.get_program().to_owned(),
        cmd.get_args().map(OsString::from).collect(),
    ));
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => k.env(key, v),
            None => k.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        k.current_dir(dir);
    }
    k
}

#[cfg(unix)]
mod imp {
    use super::*;
    use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg, raise, sigprocmask};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::{Pid, getppid, setsid};
    use std::ffi::CString;
    use std::io::Write as _;
    use std::os::unix::ffi::OsStrExt as _;

    fn sys(e: nix::Error) -> KeeperError {
        KeeperError::Sys(e.to_string())
    }

    /// How the command ended.
    #[derive(Debug, Clone, Copy)]
    enum Ended {
        Code(i32),
        Signal(i32),
    }

    /// The signals the keeper waits for (blocked in the keeper, and only
    /// there: see [`spawn`]).
    fn stop_signals() -> SigSet {
        let mut set = SigSet::empty();
        for s in [
            Signal::SIGTERM,
            Signal::SIGINT,
            Signal::SIGHUP,
            Signal::SIGQUIT,
            Signal::SIGCHLD,
            Signal::SIGUSR1,
        ] {
            set.add(s);
        }
        set
    }

    fn c_string(s: &std::ffi::OsStr, program: &OsString) -> Result<CString, KeeperError> {
        CString::new(s.as_bytes()).map_err(|_| KeeperError::Spawn {
            program: program.to_string_lossy().into_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an argument holds a NUL byte",
            ),
        })
    }

    /// Start the command with an empty signal mask and the stop signals
    /// (and SIGPIPE, which eonyx ignores) at their defaults, in a group of
    /// its own unless it makes its session itself. Not `std::process`: a
    /// child inherits the keeper's mask there, with SIGTERM blocked, and a
    /// program that does not reset its mask (bwrap does not) would then
    /// sit out every SIGTERM until the SIGKILL 2 s later.
    fn spawn(program: &OsString, args: &[OsString], session: bool) -> Result<Pid, KeeperError> {
        let mut argv = vec![c_string(program, program)?];
        for a in args {
            argv.push(c_string(a, program)?);
        }
        let mut envp = Vec::new();
        for (k, v) in std::env::vars_os() {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            envp.push(c_string(&kv, program)?);
        }
        let mut attr = PosixSpawnAttr::init().map_err(sys)?;
        let mut flags =
            PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF;
        if !session {
            flags |= PosixSpawnFlags::POSIX_SPAWN_SETPGROUP;
            attr.set_pgroup(Pid::from_raw(0)).map_err(sys)?;
        }
        attr.set_flags(flags).map_err(sys)?;
        attr.set_sigmask(&SigSet::empty()).map_err(sys)?;
        let mut default = stop_signals();
        default.add(Signal::SIGPIPE);
        attr.set_sigdefault(&default).map_err(sys)?;
        let actions = PosixSpawnFileActions::init().map_err(sys)?;
        posix_spawnp(&argv[0], &actions, &attr, &argv, &envp).map_err(|e| KeeperError::Spawn {
            program: program.to_string_lossy().into_owned(),
            source: std::io::Error::from(e),
        })
    }

    /// The command's end, if it ended (`block`: wait for it).
    fn reap(pid: Pid, block: bool) -> Result<Option<Ended>, KeeperError> {
        let flags = (!block).then_some(WaitPidFlag::WNOHANG);
        loop {
            match waitpid(pid, flags) {
                Ok(WaitStatus::Exited(_, code)) => return Ok(Some(Ended::Code(code))),
                Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(Some(Ended::Signal(sig as i32))),
                Ok(WaitStatus::StillAlive) => return Ok(None),
                // (Stopped or continued: not an end.)
                Ok(_) if !block => return Ok(None),
                Ok(_) | Err(nix::Error::EINTR) => {}
                Err(e) => return Err(sys(e)),
            }
        }
    }

    /// The process groups below `pid` other than its own (under bwrap: the
    /// program's session, and any group made under it); read from
    /// `/proc`, so empty where there is none.
    fn inner_groups(pid: Pid) -> Vec<Pid> {
        let mut groups: Vec<Pid> = eonyx_sandbox::reaper::descendants(pid.as_raw())
            .iter()
            .filter(|p| p.pgrp != pid.as_raw())
            .map(|p| Pid::from_raw(p.pgrp))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// SIGTERM for a stop: to every process below the keeper (whatever
    /// group it made), or under bubblewrap to the sessions inside it
    /// (bwrap itself only when it has started none yet).
    fn terminate(group: Pid, leader: Leader) {
        if leader == Leader::PidNamespace {
            let inner = inner_groups(group);
            if !inner.is_empty() {
                for g in inner {
                    let _ = killpg(g, Signal::SIGTERM);
                }
                return;
            }
        }
        if eonyx_sandbox::reaper::signal_descendants(Signal::SIGTERM as i32) == 0
            && killpg(group, Signal::SIGTERM).is_err()
        {
            let _ = nix::sys::signal::kill(group, Signal::SIGTERM);
        }
    }

    /// Reap the orphans re-parented to the keeper that have exited (not
    /// the command: its status is the keeper's to read).
    fn reap_orphans(command: Pid) {
        let me = nix::unistd::getpid().as_raw();
        for p in eonyx_sandbox::reaper::descendants(me) {
            if p.zombie && p.ppid == me && p.pid != command.as_raw() {
                let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }

    pub(super) fn keep(
        program: OsString,
        args: Vec<OsString>,
        leader: Leader,
        flags: Flags,
    ) -> Result<u8, KeeperError> {
        let parent = getppid();
        // No controlling terminal for the job (it may not read or steal
        // the user's terminal); fails only for a group leader.
        let _ = setsid();
        let mask = stop_signals();
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None).map_err(sys)?;
        #[cfg(target_os = "linux")]
        nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(sys)?;
        if getppid() != parent {
            // eonyx died before the signal was asked for.
            return Ok(143);
        }
        eonyx_sandbox::reaper::become_subreaper()
            .map_err(|e| KeeperError::Sys(format!("cannot become a child subreaper: {e}")))?;
        // Without a PID namespace, a guard keeper between this one and
        // the command (see the module's point 5).
        let guarded = leader != Leader::PidNamespace && !flags.guard;
        let group = if guarded {
            let exe = std::env::current_exe()
                .map_err(|e| KeeperError::Sys(format!("cannot find the eonyx executable: {e}")))?;
            let inner = Flags {
                guard: true,
                ..flags
            };
            let argv = keeper_args(leader, inner, program, args);
            spawn(&exe.into_os_string(), &argv, false)?
        } else {
            spawn(&program, &args, leader == Leader::Session)?
        };
        let leader = if guarded { Leader::Group } else { leader };
        let mut stopped = false;
        let ended = loop {
            let sig = mask.wait().map_err(sys)?;
            if sig == Signal::SIGCHLD {
                if let Some(ended) = reap(group, false)? {
                    break ended;
                }
                reap_orphans(group);
                continue;
            }
            stopped = true;
            if sig == Signal::SIGUSR1 {
                // Kill now: a foreground command's timeout or cancel.
                eonyx_sandbox::reaper::kill_descendants(Some(group.as_raw()));
                if let Some(ended) = reap(group, true)? {
                    break ended;
                }
                continue;
            }
            // Stop: SIGTERM, SIGKILL to all after the grace time.
            terminate(group, leader);
            let deadline = Instant::now() + STOP_GRACE;
            let exited = loop {
                if let Some(ended) = reap(group, false)? {
                    break Some(ended);
                }
                if Instant::now() >= deadline {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            match exited {
                Some(ended) => break ended,
                None => {
                    eonyx_sandbox::reaper::kill_descendants(Some(group.as_raw()));
                    if killpg(group, Signal::SIGKILL).is_err() {
                        let _ = nix::sys::signal::kill(group, Signal::SIGKILL);
                    }
                    match reap(group, true)? {
                        Some(ended) => break ended,
                        None => {
                            return Err(KeeperError::Sys(
                                "the command could not be waited for".into(),
                            ));
                        }
                    }
                }
            }
        };
        // What the command left running goes with it (counted before the
        // group's SIGKILL, which would race the count).
        let left = eonyx_sandbox::reaper::kill_descendants(None);
        let _ = killpg(group, Signal::SIGKILL);
        if flags.note && left > 0 && !stopped {
            // The keeper's stderr is the command's output: the model reads it.
            let _ = writeln!(
                std::io::stderr(),
                "[eonyx: the command ended and {left} process{} it started {} still running; \
                 {} stopped. Run a server or watcher as a background job (\"background\": true)]",
                if left == 1 { "" } else { "es" },
                if left == 1 { "was" } else { "were" },
                if left == 1 { "it was" } else { "they were" },
            );
        }
        let sig = match ended {
            // bwrap's report of a program killed by the stop's signal.
            Ended::Code(code)
                if stopped
                    && leader == Leader::PidNamespace
                    && code == 128 + Signal::SIGTERM as i32 =>
            {
                Signal::SIGTERM as i32
            }
            Ended::Code(code) => return Ok(u8::try_from(code & 0xff).unwrap_or(1)),
            Ended::Signal(sig) => sig,
        };
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
        _leader: Leader,
        _flags: Flags,
    ) -> Result<u8, KeeperError> {
        Err(KeeperError::Usage(
            "background jobs need a Unix system".into(),
        ))
    }
}
