//! One network namespace per session (docs/tools.md#one-network-per-session):
//! with the network off, a session's confined commands and jobs share a
//! network namespace that has only its own loopback, so a server started
//! as a job answers the session's later commands on `127.0.0.1` and
//! nothing else can reach it (not the host, not another session).
//!
//! A holder process owns the namespace: `eonyx sandbox-net -- hold` makes
//! itself a new session, enters a new user and network namespace (no
//! privilege needed: the user namespace maps only the caller's own ids),
//! brings `lo` up over netlink, prints the namespace's id, and waits until
//! its stdin reaches end of file, which happens when the session's
//! [`SessionNet`] is dropped or eonyx dies (`kill -9` included). A confined
//! command joins the namespace before it is confined: the Landlock helper
//! itself (`--netns`), or `eonyx sandbox-net -- join PID ID -- bwrap …` for
//! bubblewrap, which then runs without `--unshare-net`. Joining needs the
//! capabilities of the namespace's owner, so a confined command (no
//! capabilities, in a user namespace of its own) cannot join another
//! session's namespace.
//!
//! Both are re-executions of the `eonyx` binary, so no `pre_exec` and no
//! `unsafe`: `unshare` and `setns` of a user namespace need a
//! single-threaded process, which a freshly started helper is.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// The hidden subcommand of the `eonyx` binary for the holder and the
/// joining step.
pub const NET_SUBCOMMAND: &str = "sandbox-net";

/// A namespace to join: the holder's pid and the namespace's id as
/// `/proc/PID/ns/net` names it (`net:[4026532179]`), checked on joining
/// so that a reused pid is never joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRef {
    pub pid: u32,
    pub id: String,
}

impl NetRef {
    fn to_args(&self) -> [OsString; 2] {
        [self.pid.to_string().into(), self.id.clone().into()]
    }

    fn parse(pid: Option<OsString>, id: Option<OsString>) -> Result<Self, NetError> {
        let pid = pid
            .and_then(|p| p.to_str().and_then(|p| p.parse().ok()))
            .ok_or_else(|| NetError::Usage("a holder pid is needed".to_owned()))?;
        let id = id
            .and_then(|i| i.into_string().ok())
            .filter(|i| i.starts_with("net:["))
            .ok_or_else(|| NetError::Usage("a namespace id `net:[N]` is needed".to_owned()))?;
        Ok(Self { pid, id })
    }
}

/// Why the session's namespace could not be made or joined.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("sandbox-net: {0} (this subcommand is run by eonyx itself)")]
    Usage(String),
    #[error("cannot {what}: {source}")]
    Setup {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the session's network namespace (holder {pid}) is gone or is not {id} any more; start a new session"
    )]
    Gone { pid: u32, id: String },
    #[error("cannot run {program}: {source}")]
    Exec {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("one network namespace per session exists only on Linux")]
    Unsupported,
}

/// What `eonyx sandbox-net ARGS` is to do.
#[derive(Debug)]
pub enum NetStep {
    /// `hold`: the namespace is made; the caller prints its id on stdout,
    /// then calls [`hold_until_eof`].
    Held(String),
}

/// `eonyx sandbox-net -- hold` or `eonyx sandbox-net join PID ID -- PROGRAM
/// ARGS…` (never returns on success: it runs the program).
pub fn run_net(args: Vec<OsString>) -> Result<NetStep, NetError> {
    let mut it = args.into_iter();
    match it.next().as_ref().and_then(|a| a.to_str()) {
        Some("hold") => imp::hold().map(NetStep::Held),
        Some("join") => {
            let net = NetRef::parse(it.next(), it.next())?;
            if it.next().as_ref().and_then(|a| a.to_str()) != Some("--") {
                return Err(NetError::Usage("`--` and a command must follow".to_owned()));
            }
            let argv: Vec<OsString> = it.collect();
            let (program, rest) = argv
                .split_first()
                .ok_or_else(|| NetError::Usage("no command after `--`".to_owned()))?;
            join(&net)?;
            Err(exec(program, rest))
        }
        _ => Err(NetError::Usage("`hold` or `join` expected".to_owned())),
    }
}

/// Blocks until stdin reaches end of file: the holder's life.
pub fn hold_until_eof() {
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
}

/// Enter `net`'s user and network namespaces (Linux; single-threaded).
pub fn join(net: &NetRef) -> Result<(), NetError> {
    imp::join(net)
}

#[cfg(unix)]
fn exec(program: &std::ffi::OsStr, args: &[OsString]) -> NetError {
    use std::os::unix::process::CommandExt;
    let source = Command::new(program).args(args).exec();
    NetError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

#[cfg(not(unix))]
fn exec(_program: &std::ffi::OsStr, _args: &[OsString]) -> NetError {
    NetError::Unsupported
}

/// `eonyx sandbox-net -- join PID ID -- PROGRAM ARGS…` wrapping `inner`
/// (bubblewrap's command), with `inner`'s directory.
pub(crate) fn join_command(helper: &Path, net: &NetRef, inner: &Command) -> Command {
    let mut cmd = Command::new(helper);
    cmd.arg(NET_SUBCOMMAND)
        .arg("--")
        .arg("join")
        .args(net.to_args())
        .arg("--")
        .arg(inner.get_program())
        .args(inner.get_args());
    if let Some(dir) = inner.get_current_dir() {
        cmd.current_dir(dir);
    }
    cmd
}

/// One session's network namespace (a room of its own, held by the
/// session's tool context): made by the first confined command without the
/// network, ended when the session ends.
#[derive(Debug, Default)]
pub struct SessionNet {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    NotYet,
    Held(Holder),
    /// It could not be made (no user namespaces here, say): every command
    /// gets a network namespace of its own, as before.
    Failed(String),
}

#[derive(Debug)]
struct Holder {
    child: Child,
    net: NetRef,
}

impl Drop for Holder {
    fn drop(&mut self) {
        // End of file on its stdin ends it; the kill covers a stuck one.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SessionNet {
    /// The namespace to join, making it the first time with `helper` (the
    /// `eonyx` executable); `None` when it could not be made (the reason
    /// is in [`SessionNet::failure`]). Blocks the first time (a few
    /// milliseconds).
    pub fn ensure(&self, helper: &Path) -> Option<NetRef> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let State::Held(h) = &mut *state
            && !matches!(h.child.try_wait(), Ok(None))
        {
            // The holder died (killed by hand): make a new one.
            *state = State::NotYet;
        }
        if matches!(*state, State::NotYet) {
            *state = match start_holder(helper) {
                Ok(h) => State::Held(h),
                Err(reason) => State::Failed(reason),
            };
        }
        self.current_locked(&state)
    }

    /// The namespace made so far, without making one.
    pub fn current(&self) -> Option<NetRef> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.current_locked(&state)
    }

    fn current_locked(&self, state: &State) -> Option<NetRef> {
        match state {
            State::Held(h) => Some(h.net.clone()),
            _ => None,
        }
    }

    /// Why the namespace could not be made, if it could not.
    pub fn failure(&self) -> Option<String> {
        match &*self.state.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Failed(r) => Some(r.clone()),
            _ => None,
        }
    }
}

/// Start `helper sandbox-net hold` and read the id it prints.
fn start_holder(helper: &Path) -> Result<Holder, String> {
    let mut child = Command::new(helper)
        .arg(NET_SUBCOMMAND)
        .args(["--", "hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", helper.display()))?;
    let pid = child.id();
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let id = line.trim().to_owned();
    if !id.starts_with("net:[") {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = child.kill();
        let _ = child.wait();
        let err = err.trim();
        return Err(if err.is_empty() {
            "the namespace holder said nothing".to_owned()
        } else {
            err.to_owned()
        });
    }
    Ok(Holder {
        child,
        net: NetRef { pid, id },
    })
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::fd::AsFd;

    use nix::sched::{CloneFlags, setns, unshare};

    use super::{NetError, NetRef};

    fn setup(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> NetError {
        let what = what.into();
        move |source| NetError::Setup { what, source }
    }

    fn errno(e: nix::Error) -> std::io::Error {
        std::io::Error::from(e)
    }

    /// The holder's namespace, set up; its id.
    pub(super) fn hold() -> Result<String, NetError> {
        // Out of the terminal's process group: Ctrl-C is not for it.
        nix::unistd::setsid().map_err(|e| setup("start a new session")(errno(e)))?;
        let uid = nix::unistd::geteuid();
        let gid = nix::unistd::getegid();
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
            .map_err(|e| setup("make a user and network namespace (unshare)")(errno(e)))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(setup(format!("write {file}")))
        };
        write("/proc/self/setgroups", "deny".to_owned())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
        loopback_up().map_err(setup("bring the loopback interface up"))?;
        let id =
            std::fs::read_link("/proc/self/ns/net").map_err(setup("read /proc/self/ns/net"))?;
        Ok(id.to_string_lossy().into_owned())
    }

    /// `lo` up: one RTM_NEWLINK over netlink (its index is 1 in a new
    /// namespace), and the kernel's acknowledgement.
    fn loopback_up() -> std::io::Result<()> {
        use rustix::net::{
            AddressFamily, RecvFlags, SendFlags, SocketType, netlink::SocketAddrNetlink, recv,
            sendto, socket,
        };
        let fd = socket(AddressFamily::NETLINK, SocketType::RAW, None)?;
        let mut msg = Vec::with_capacity(32);
        // struct nlmsghdr
        msg.extend(32u32.to_ne_bytes());
        msg.extend(libc::RTM_NEWLINK.to_ne_bytes());
        msg.extend(((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
        msg.extend(1u32.to_ne_bytes());
        msg.extend(0u32.to_ne_bytes());
        // struct ifinfomsg
        msg.extend([libc::AF_UNSPEC as u8, 0]);
        msg.extend(0u16.to_ne_bytes());
        msg.extend(1i32.to_ne_bytes());
        msg.extend((libc::IFF_UP as u32).to_ne_bytes());
        msg.extend((libc::IFF_UP as u32).to_ne_bytes());
        sendto(&fd, &msg, SendFlags::empty(), &SocketAddrNetlink::new(0, 0))?;
        let mut buf = [0u8; 512];
        let (n, _) = recv(&fd, &mut buf[..], RecvFlags::empty())?;
        // struct nlmsgerr after the header: 0 is the acknowledgement.
        let kind = buf.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
        let code = buf
            .get(16..20)
            .filter(|_| n >= 20)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
        match (kind, code) {
            (Some(k), Some(0)) if k == libc::NLMSG_ERROR as u16 => Ok(()),
            (Some(k), Some(c)) if k == libc::NLMSG_ERROR as u16 => {
                Err(std::io::Error::from_raw_os_error(-c))
            }
            _ => Err(std::io::Error::other("no acknowledgement from the kernel")),
        }
    }

    pub(super) fn join(net: &NetRef) -> Result<(), NetError> {
        let open = |kind: &str| {
            let path = format!("/proc/{}/ns/{kind}", net.pid);
            std::fs::File::open(&path).map_err(|_| NetError::Gone {
                pid: net.pid,
                id: net.id.clone(),
            })
        };
        let user = open("user")?;
        let netns = open("net")?;
        // The namespace the descriptor holds, whatever the pid is now.
        let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&netns));
        let held = std::fs::read_link(&fd_path).map_err(setup(format!("read {fd_path}")))?;
        if held.to_string_lossy() != net.id {
            return Err(NetError::Gone {
                pid: net.pid,
                id: net.id.clone(),
            });
        }
        setns(user.as_fd(), CloneFlags::CLONE_NEWUSER)
            .map_err(|e| setup("enter the session's user namespace (setns)")(errno(e)))?;
        setns(netns.as_fd(), CloneFlags::CLONE_NEWNET)
            .map_err(|e| setup("enter the session's network namespace (setns)")(errno(e)))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{NetError, NetRef};

    pub(super) fn hold() -> Result<String, NetError> {
        Err(NetError::Unsupported)
    }

    pub(super) fn join(_net: &NetRef) -> Result<(), NetError> {
        Err(NetError::Unsupported)
    }
}
