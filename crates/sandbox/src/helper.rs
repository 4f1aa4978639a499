//! The Landlock backend (`helper`): `eonyx sandbox-exec -- SPEC -- sh -c COMMAND`, a
//! re-executed helper (no `pre_exec`, so no `unsafe`) that confines itself
//! and then `exec`s the command:
//!
//! 0. a new session (`setsid`): no controlling terminal, so the command
//!    cannot push keystrokes into the user's terminal (`TIOCSTI`); it is
//!    also the process group eonyx kills on a timeout, so the helper must be
//!    spawned outside any new process group of its own (see
//!    [`crate::Plan::starts_session`]);
//! 1. a private mount namespace (with a user namespace when not root) in
//!    which `.git` and `eonyx.json` are bound read-only onto themselves:
//!    Landlock only grants, so it cannot keep a directory read-only inside
//!    a writable one;
//! 2. a Landlock ruleset (best effort from ABI 7 down to ABI 1): read and
//!    execute everywhere, write only beneath the policy's roots and a few
//!    devices; with the network off also no TCP bind/connect (ABI 4) and no
//!    abstract UNIX sockets outside (ABI 6). A ruleset the kernel does not
//!    enforce at all is an error, so the backend counts as unavailable; a
//!    partially enforced one (older kernels) is accepted (docs/tools.md#sandbox);
//! 3. with the network off, a seccomp filter that refuses `socket` for
//!    every family but `AF_UNIX` (and `io_uring_setup`, which could open
//!    sockets behind the filter's back) with `EACCES`; not in the session's
//!    network namespace (`--netns`, joined first: [`crate::netns`]), where
//!    sockets reach nothing but its own loopback;
//! 4. no capabilities: the bounding, ambient and inheritable sets are
//!    cleared, so even a command run by root has none after `exec` (as under
//!    bubblewrap) and cannot enter the host's mount namespace again, load a
//!    kernel module or the like. Landlock's signal scope (ABI 6) keeps it
//!    from signalling processes outside the sandbox.
//!
//! Landlock and seccomp survive `exec` and are inherited by every child;
//! neither can be undone from inside (and Landlock forbids changing mounts).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::netns::NetRef;
use crate::policy::{DEVICES, Policy};

/// The hidden subcommand of the `eonyx` binary that runs the helper.
pub const HELPER_SUBCOMMAND: &str = "sandbox-exec";

/// What the helper is told to enforce.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spec {
    /// Paths (directories or files) a command may write.
    pub rw: Vec<PathBuf>,
    /// Paths bound read-only in the helper's mount namespace.
    pub ro: Vec<PathBuf>,
    pub network: bool,
    /// Without the network: the session's network namespace to join
    /// first ([`crate::netns`]); its loopback is then the command's to use.
    pub netns: Option<NetRef>,
    /// Confine, report, and run nothing.
    pub probe: bool,
    /// The program and its arguments.
    pub argv: Vec<OsString>,
}

impl Spec {
    /// The spec for `policy`.
    pub fn for_policy(policy: &Policy) -> Self {
        let mut rw: Vec<PathBuf> = policy
            .writable
            .iter()
            .map(|p| p.as_std_path().to_path_buf())
            .collect();
        rw.extend(DEVICES.iter().map(PathBuf::from));
        Self {
            rw,
            ro: policy
                .read_only
                .iter()
                .map(|p| p.as_std_path().to_path_buf())
                .collect(),
            network: policy.network,
            netns: None,
            probe: false,
            argv: Vec::new(),
        }
    }

    /// The helper's arguments after `sandbox-exec --`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a = Vec::new();
        if self.network {
            a.push("--net".into());
        }
        if let Some(n) = &self.netns {
            a.extend([
                "--netns".into(),
                n.pid.to_string().into(),
                n.id.clone().into(),
            ]);
        }
        if self.probe {
            a.push("--probe".into());
        }
        for p in &self.rw {
            a.extend(["--rw".into(), p.as_os_str().to_owned()]);
        }
        for p in &self.ro {
            a.extend(["--ro".into(), p.as_os_str().to_owned()]);
        }
        a.push("--".into());
        a.extend(self.argv.iter().cloned());
        a
    }

    /// Reads [`Spec::to_args`]'s output back.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, HelperError> {
        let mut spec = Spec::default();
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.to_str() {
                Some("--net") => spec.network = true,
                Some("--probe") => spec.probe = true,
                Some("--netns") => {
                    let pid = it.next().and_then(|p| p.to_str()?.parse().ok());
                    let id = it.next().and_then(|i| i.into_string().ok());
                    let (Some(pid), Some(id)) = (pid, id) else {
                        return Err(HelperError::Usage(
                            "--netns needs a pid and a namespace id".to_owned(),
                        ));
                    };
                    spec.netns = Some(NetRef { pid, id });
                }
                Some(flag @ ("--rw" | "--ro")) => {
                    let path = it
                        .next()
                        .ok_or_else(|| HelperError::Usage(format!("{flag} needs a path")))?;
                    if flag == "--rw" {
                        spec.rw.push(path.into());
                    } else {
                        spec.ro.push(path.into());
                    }
                }
                Some("--") => {
                    spec.argv = it.collect();
                    break;
                }
                _ => {
                    return Err(HelperError::Usage(format!(
                        "unexpected argument {:?}",
                        a.to_string_lossy()
                    )));
                }
            }
        }
        if spec.argv.is_empty() && !spec.probe {
            return Err(HelperError::Usage("no command after `--`".to_owned()));
        }
        Ok(spec)
    }
}

/// `HELPER sandbox-exec -- SPEC -- sh -c COMMAND`, in the session's
/// network namespace `netns` when given.
pub fn command(
    helper: &Path,
    policy: &Policy,
    dir: &Path,
    shell_command: &str,
    netns: Option<NetRef>,
) -> Command {
    let mut spec = Spec::for_policy(policy);
    spec.netns = netns;
    spec.argv = vec![
        crate::shell_program().path.as_os_str().to_owned(),
        "-c".into(),
        shell_command.into(),
    ];
    helper_command(helper, &spec, dir)
}

pub(crate) fn helper_command(helper: &Path, spec: &Spec, dir: &Path) -> Command {
    let mut cmd = Command::new(helper);
    cmd.arg(HELPER_SUBCOMMAND)
        .arg("--")
        .args(spec.to_args())
        .current_dir(dir);
    cmd
}

/// Why the helper could not confine or run the command.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("sandbox-exec: {0} (this subcommand is run by eonyx itself)")]
    Usage(String),
    #[error("cannot start a new session for the command (setsid): {0}")]
    Session(std::io::Error),
    #[error("cannot set up the sandbox's mount namespace ({what}): {source}")]
    Namespace {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Net(#[from] crate::netns::NetError),
    #[error("cannot set up Landlock: {0}")]
    Landlock(String),
    #[error(
        "Landlock is not enforced by this kernel (it needs Linux 5.13 or later with Landlock enabled in the `lsm=` boot parameter)"
    )]
    NotEnforced,
    #[error("cannot install the seccomp filter: {0}")]
    Seccomp(String),
    #[error("cannot drop the capabilities of the command: {0}")]
    Capabilities(String),
    #[error("cannot run {program}: {source}")]
    Exec {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the Landlock backend exists only on Linux")]
    Unsupported,
}

/// The helper: confine this process as `args` say, then `exec` the command
/// (never returns on success). With `--probe`, returns a description of what
/// is enforced instead of running anything.
pub fn run_helper(args: Vec<OsString>) -> Result<String, HelperError> {
    let spec = Spec::parse(args)?;
    imp::confine(&spec).and_then(|enforced| {
        if spec.probe {
            return Ok(enforced);
        }
        let (program, rest) = spec
            .argv
            .split_first()
            .ok_or_else(|| HelperError::Usage("no command after `--`".to_owned()))?;
        Err(exec(program, rest))
    })
}

#[cfg(unix)]
fn exec(program: &OsStr, args: &[OsString]) -> HelperError {
    use std::os::unix::process::CommandExt;
    let source = Command::new(program).args(args).exec();
    HelperError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

#[cfg(not(unix))]
fn exec(_program: &OsStr, _args: &[OsString]) -> HelperError {
    HelperError::Unsupported
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::BTreeMap;
    use std::path::Path;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{HelperError, Spec};

    /// The newest Landlock ABI this code was tested with.
    const ABI_TESTED: ABI = ABI::V7;

    pub(super) fn confine(spec: &Spec) -> Result<String, HelperError> {
        // First, while nothing else is set up: setns of a user namespace
        // needs a single-threaded process with its capabilities.
        if let Some(net) = &spec.netns {
            crate::netns::join(net)?;
        }
        nix::unistd::setsid().map_err(|e| HelperError::Session(e.into()))?;
        if !spec.ro.is_empty() {
            read_only_binds(&spec.ro)?;
        }
        let enforced = landlock(spec)?;
        // In the session's namespace sockets reach its loopback only.
        if !spec.network && spec.netns.is_none() {
            seccomp()?;
        }
        drop_capabilities()?;
        Ok(enforced)
    }

    /// Clears the capability sets that survive `exec`. Only root (or a
    /// process inside the user namespace made above) holds `CAP_SETPCAP`;
    /// anyone else has nothing to drop.
    fn drop_capabilities() -> Result<(), HelperError> {
        use caps::{CapSet, Capability};
        let can = caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false);
        if !can {
            return Ok(());
        }
        let err = |e: caps::errors::CapsError| HelperError::Capabilities(e.to_string());
        caps::clear(None, CapSet::Bounding).map_err(err)?;
        caps::clear(None, CapSet::Ambient).map_err(err)?;
        caps::clear(None, CapSet::Inheritable).map_err(err)
    }

    fn ns_err(what: impl Into<String>) -> impl FnOnce(nix::Error) -> HelperError {
        let what = what.into();
        move |e| HelperError::Namespace {
            what,
            source: std::io::Error::from(e),
        }
    }

    /// A private mount namespace in which each path is bound read-only
    /// onto itself (keeping the flags the kernel locks, such as `nosuid`).
    fn read_only_binds(paths: &[std::path::PathBuf]) -> Result<(), HelperError> {
        let uid = nix::unistd::geteuid();
        let gid = nix::unistd::getegid();
        if uid.is_root() {
            unshare(CloneFlags::CLONE_NEWNS).map_err(ns_err("unshare"))?;
        } else {
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
                .map_err(ns_err("unshare of a user namespace"))?;
            let write = |file: &str, text: String| {
                std::fs::write(file, text).map_err(|source| HelperError::Namespace {
                    what: format!("writing {file}"),
                    source,
                })
            };
            write("/proc/self/setgroups", "deny".to_owned())?;
            write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
            write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
        }
        let none: Option<&str> = None;
        mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
            .map_err(ns_err("making / private"))?;
        for p in paths {
            let shown = p.display().to_string();
            mount(
                Some(p.as_path()),
                p.as_path(),
                none,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                none,
            )
            .map_err(ns_err(format!("binding {shown}")))?;
            let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | locked(p);
            mount(none, p.as_path(), none, flags, none)
                .map_err(ns_err(format!("making {shown} read-only")))?;
        }
        Ok(())
    }

    /// The mount flags of `path`'s mount that a remount must keep.
    fn locked(path: &Path) -> MsFlags {
        use nix::sys::statvfs::{FsFlags, statvfs};
        let Ok(st) = statvfs(path) else {
            return MsFlags::empty();
        };
        let f = st.flags();
        [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ]
        .into_iter()
        .filter(|(st, _)| f.contains(*st))
        .fold(MsFlags::empty(), |acc, (_, ms)| acc | ms)
    }

    fn ll_err(e: impl std::fmt::Display) -> HelperError {
        HelperError::Landlock(e.to_string())
    }

    fn landlock(spec: &Spec) -> Result<String, HelperError> {
        let abi = ABI_TESTED;
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(ll_err)?
            .scope(Scope::Signal)
            .map_err(ll_err)?;
        if !spec.network && spec.netns.is_none() {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(ll_err)?;
        }
        if !spec.network {
            ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(ll_err)?;
        }
        let mut created = ruleset.create().map_err(ll_err)?;
        let root = PathFd::new("/").map_err(ll_err)?;
        created = created
            .add_rule(PathBeneath::new(root, AccessFs::from_read(abi)))
            .map_err(ll_err)?;
        for p in &spec.rw {
            let Ok(meta) = std::fs::metadata(p) else {
                continue;
            };
            let Ok(fd) = PathFd::new(p) else {
                continue;
            };
            let access = if meta.is_dir() {
                AccessFs::from_all(abi)
            } else {
                AccessFs::from_file(abi)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(ll_err)?;
        }
        let status = created.restrict_self().map_err(ll_err)?;
        let level = match status.ruleset {
            RulesetStatus::NotEnforced => return Err(HelperError::NotEnforced),
            RulesetStatus::PartiallyEnforced => "partially enforced",
            RulesetStatus::FullyEnforced => "fully enforced",
        };
        Ok(match status.landlock {
            landlock::LandlockStatus::Available { effective_abi, .. } => {
                format!("Landlock ABI {}, {level}", effective_abi as i32)
            }
            _ => format!("Landlock, {level}"),
        })
    }

    fn sc_err(e: impl std::fmt::Display) -> HelperError {
        HelperError::Seccomp(e.to_string())
    }

    /// `socket(family != AF_UNIX, …)` and `io_uring_setup` fail with EACCES.
    fn seccomp() -> Result<(), HelperError> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(sc_err)?;
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(sc_err)?;
        let mut rules = BTreeMap::new();
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(sc_err)?],
        );
        rules.insert(libc::SYS_io_uring_setup, vec![]);
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .map_err(sc_err)?;
        let program: BpfProgram = filter.try_into().map_err(sc_err)?;
        seccompiler::apply_filter(&program).map_err(sc_err)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{HelperError, Spec};

    pub(super) fn confine(_spec: &Spec) -> Result<String, HelperError> {
        Err(HelperError::Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_round_trips_through_the_helper_arguments() {
        let spec = Spec {
            rw: vec!["/work/p".into(), "/tmp".into()],
            ro: vec!["/work/p/.git".into()],
            network: false,
            netns: Some(NetRef {
                pid: 42,
                id: "net:[4026532179]".into(),
            }),
            probe: false,
            argv: vec!["sh".into(), "-c".into(), "echo --rw -- x".into()],
        };
        assert_eq!(Spec::parse(spec.to_args()).unwrap(), spec);
        let mut probe = Spec {
            network: true,
            probe: true,
            ..Spec::default()
        };
        assert_eq!(Spec::parse(probe.to_args()).unwrap(), probe);
        probe.probe = false;
        let err = Spec::parse(probe.to_args()).unwrap_err();
        assert!(err.to_string().contains("no command"), "{err}");
        let err = Spec::parse(["--bogus".into()]).unwrap_err();
        assert!(err.to_string().contains("--bogus"), "{err}");
    }
}
