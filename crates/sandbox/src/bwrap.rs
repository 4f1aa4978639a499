//! The bubblewrap backend: `bwrap` with a read-only bind of `/`, writable
//! binds of the policy's roots, read-only re-binds of `.git` and
//! `eonyx.json`, a fresh `/dev` and `/proc`, its own PID namespace (so
//! killing `bwrap` ends everything the command started), no capabilities
//! (also when run by root), and no network namespace of the host unless the
//! policy allows the network (its own, or the session's: [`crate::netns`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::policy::Policy;

/// `bwrap` on `path` (a `PATH` value), if any.
pub fn find(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The arguments before the command: every mount and namespace flag.
pub fn args(policy: &Policy, dir: &Path) -> Vec<OsString> {
    args_in(policy, dir, Net::Own)
}

/// Where a command without the network gets its network namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Net {
    /// One of its own (`--unshare-net`).
    Own,
    /// The one it was started in: the session's
    /// ([`crate::netns`]), joined before bwrap runs.
    Session,
}

/// [`args`], the network namespace chosen by `net`.
pub fn args_in(policy: &Policy, dir: &Path, net: Net) -> Vec<OsString> {
    let mut a: Vec<OsString> = [
        "--new-session",
        "--die-with-parent",
        // Run by root, bwrap would keep every capability (enough to
        // unmount the read-only binds).
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .map(OsString::from)
    .to_vec();
    if !policy.network && net == Net::Own {
        a.push("--unshare-net".into());
    }
    for w in &policy.writable {
        // `/dev` is bwrap's own; a root under it would be hidden anyway.
        if w.starts_with("/dev") || w.starts_with("/proc") {
            continue;
        }
        a.extend(["--bind".into(), w.as_os_str().into(), w.as_os_str().into()]);
    }
    for p in &policy.read_only {
        a.extend([
            "--ro-bind".into(),
            p.as_os_str().into(),
            p.as_os_str().into(),
        ]);
    }
    a.extend(["--chdir".into(), dir.as_os_str().into(), "--".into()]);
    a
}

/// `bwrap ARGS -- sh -c COMMAND`.
pub fn command(bwrap: &Path, policy: &Policy, dir: &Path, shell_command: &str) -> Command {
    command_in(bwrap, policy, dir, shell_command, Net::Own)
}

/// [`command`], the network namespace chosen by `net`.
pub fn command_in(
    bwrap: &Path,
    policy: &Policy,
    dir: &Path,
    shell_command: &str,
    net: Net,
) -> Command {
    let mut cmd = Command::new(bwrap);
    cmd.args(args_in(policy, dir, net))
        .arg(&crate::shell_program().path)
        .arg("-c")
        .arg(shell_command)
        .current_dir(dir);
    cmd
}
