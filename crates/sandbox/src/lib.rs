//! Confinement of the commands eonyx runs (docs/using-tools.md, section "Sandbox";
//! docs/tools.md#sandbox): the policy (what a command may write, whether it
//! may reach the network), the backends that enforce it on Linux
//! (bubblewrap, or Landlock with seccomp in a re-executed helper), probing
//! which of them works (once per process), and the line that tells the
//! model when the sandbox stopped a command.
//!
//! [`Sandbox::plan`] decides how the next command runs; [`Sandbox::command`]
//! turns "`sh -c COMMAND` in DIR" into the process to spawn.
//!
//! Invariants:
//! - No command runs unconfined unless the user said so (`tools.sandbox =
//!   "off"`), or no backend works and `tools.sandbox_required` is false, in
//!   which case the caller warns once per process ([`first_unconfined`]).
//! - Both backends enforce the same [`Policy`]: read everywhere, write only
//!   beneath its writable roots with `.git` and `eonyx.json` of the project
//!   read-only, no socket but `AF_UNIX` unless the network is allowed, or
//!   only the session's own loopback ([`netns`]).
//! - This crate depends on `eonyx-core` only, never prints and does no
//!   network I/O; the platform code and its crates (landlock, seccompiler)
//!   stay here, behind `cfg(target_os = "linux")`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::{SandboxBackend, SandboxConfig, SandboxMode};
use eonyx_core::paths::Env;

pub mod bwrap;
pub mod denied;
pub mod helper;
pub mod netns;
pub mod policy;
mod probe;
pub mod reaper;
pub mod shell;

pub use helper::{HELPER_SUBCOMMAND, HelperError, run_helper};
pub use netns::{NET_SUBCOMMAND, NetError, SessionNet};
pub use policy::{Policy, Verdict};
pub use shell::{ShellProgram, shell_program};

/// The environment variable a confined command finds set to the backend's
/// name (`bwrap` or `landlock`).
pub const SANDBOX_ENV: &str = "EONYX_SANDBOX";

/// A backend that works here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// `bwrap` at this path.
    Bwrap(PathBuf),
    /// The `eonyx` executable that runs the helper, and what the probe found
    /// enforced (e.g. `Landlock ABI 7, fully enforced`).
    Landlock { helper: PathBuf, enforced: String },
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Bwrap(_) => "bwrap",
            Backend::Landlock { .. } => "landlock",
        }
    }
}

/// How the next command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `tools.sandbox = "off"`: unconfined, as the user asked.
    Off,
    Confined(Backend),
    /// No backend works; the reason says why for each one tried.
    Unavailable {
        reason: String,
    },
}

impl Plan {
    /// Whether the command makes itself a new session (and so its own
    /// process group, which eonyx kills on a timeout): the Landlock helper
    /// does, so the caller must not put it in a process group first
    /// (`setsid` fails for a group leader). Other commands should get their
    /// own process group from the caller.
    pub fn starts_session(&self) -> bool {
        matches!(self, Plan::Confined(Backend::Landlock { .. }))
    }
}

/// The sandbox of one agent: the `tools.sandbox*` settings for a project.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxConfig,
    root: Utf8PathBuf,
    env: Env,
    /// The `eonyx` executable for the Landlock helper; `None` where there is
    /// none (tests of the library crates), and then Landlock is unavailable.
    helper: Option<PathBuf>,
}

impl Sandbox {
    /// `config` for commands run in the project at `root`; `env` supplies
    /// `TMPDIR`; `helper` is the `eonyx` executable (`current_exe()`).
    pub fn new(config: SandboxConfig, root: &Utf8Path, env: &Env, helper: Option<PathBuf>) -> Self {
        Self {
            config,
            root: root.to_path_buf(),
            env: env.clone(),
            helper,
        }
    }

    /// No confinement (`tools.sandbox = "off"`).
    pub fn off(root: &Utf8Path) -> Self {
        let config = SandboxConfig {
            mode: SandboxMode::Off,
            ..SandboxConfig::default()
        };
        Self::new(config, root, &Env::default(), None)
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The `eonyx` executable that runs the helpers (the Landlock helper,
    /// the job keeper); `None` in library tests.
    pub fn helper(&self) -> Option<&Path> {
        self.helper.as_deref()
    }

    /// The policy as of now (`.git` or `eonyx.json` created since the last
    /// command are protected from the next one on).
    pub fn policy(&self) -> Policy {
        Policy::new(&self.config, &self.root, &self.env)
    }

    /// How the next command runs. May block the first time (it probes the
    /// backends, once per process: a few milliseconds each).
    pub fn plan(&self) -> Plan {
        if self.config.mode == SandboxMode::Off {
            return Plan::Off;
        }
        if !cfg!(target_os = "linux") {
            return Plan::Unavailable {
                reason: format!("no sandbox backend exists for {} yet", std::env::consts::OS),
            };
        }
        let bwrap = || probe::bwrap().map(Backend::Bwrap);
        let landlock = || {
            let helper = self
                .helper
                .as_deref()
                .ok_or_else(|| "no eonyx executable to run the Landlock helper with".to_owned())?;
            probe::landlock(helper).map(|enforced| Backend::Landlock {
                helper: helper.to_path_buf(),
                enforced,
            })
        };
        let found = match self.config.backend {
            SandboxBackend::Bwrap => bwrap().map_err(|e| format!("bwrap: {e}")),
            SandboxBackend::Landlock => landlock().map_err(|e| format!("landlock: {e}")),
            SandboxBackend::Auto => {
                bwrap().or_else(|b| landlock().map_err(|l| format!("bwrap: {b}; landlock: {l}")))
            }
        };
        match found {
            Ok(b) => Plan::Confined(b),
            Err(reason) => Plan::Unavailable { reason },
        }
    }

    /// `sh -c shell_command` in `dir`, confined as `plan` says (unconfined
    /// for [`Plan::Off`] and [`Plan::Unavailable`]: refusing is the
    /// caller's decision).
    pub fn command(&self, plan: &Plan, shell_command: &str, dir: &Path) -> Command {
        self.command_in(plan, shell_command, dir, None)
    }

    /// [`Sandbox::command`] for a session: without the network, in the
    /// session's network namespace `net` once [`Sandbox::hold_net`] made it
    /// (else in a network namespace of its own, as [`Sandbox::command`]).
    pub fn command_in(
        &self,
        plan: &Plan,
        shell_command: &str,
        dir: &Path,
        net: Option<&SessionNet>,
    ) -> Command {
        match plan {
            Plan::Confined(backend) => {
                let policy = self.policy();
                let joined = net
                    .filter(|_| !policy.network)
                    .and_then(SessionNet::current);
                let mut cmd = match (backend, joined, self.helper.as_deref()) {
                    (Backend::Bwrap(bwrap), Some(n), Some(eonyx)) => {
                        let inner = bwrap::command_in(
                            bwrap,
                            &policy,
                            dir,
                            shell_command,
                            bwrap::Net::Session,
                        );
                        netns::join_command(eonyx, &n, &inner)
                    }
                    (Backend::Bwrap(bwrap), ..) => {
                        bwrap::command(bwrap, &policy, dir, shell_command)
                    }
                    (Backend::Landlock { helper, .. }, joined, _) => {
                        helper::command(helper, &policy, dir, shell_command, joined)
                    }
                };
                cmd.env(SANDBOX_ENV, backend.name());
                cmd
            }
            Plan::Off | Plan::Unavailable { .. } => {
                let mut cmd = Command::new(&shell_program().path);
                cmd.arg("-c").arg(shell_command).current_dir(dir);
                cmd
            }
        }
    }

    /// Make the session's network namespace `net` if the next command
    /// would use it (confined by `plan`, without the network) and it is
    /// not made yet. Blocks the first time (it starts the holder).
    pub fn hold_net(&self, plan: &Plan, net: &SessionNet) {
        if let (Plan::Confined(_), false, Some(eonyx)) =
            (plan, self.config.network, self.helper.as_deref())
        {
            net.ensure(eonyx);
        }
    }

    /// The line added to a failed confined command's result when its output
    /// shows the sandbox stopped it ([`denied`]).
    pub fn denial_note(&self, output: &str) -> Option<String> {
        denied::note(&self.policy(), output)
    }

    /// One line for `eonyx config` and `/status`: the backend in use and
    /// what it allows, or why none works and what happens then.
    pub fn status(&self) -> String {
        self.describe(&self.plan())
    }

    /// [`Sandbox::status`] for a plan already made.
    pub fn describe(&self, plan: &Plan) -> String {
        let c = &self.config;
        let net = if c.network {
            "network on"
        } else {
            "no network"
        };
        match plan {
            Plan::Off => "off (tools.sandbox = \"off\"): commands run unconfined".to_owned(),
            Plan::Confined(Backend::Bwrap(_)) => format!("bwrap, {}, {net}", c.mode.as_str()),
            Plan::Confined(Backend::Landlock { enforced, .. }) => {
                format!(
                    "landlock ({enforced}, with seccomp), {}, {net}",
                    c.mode.as_str()
                )
            }
            Plan::Unavailable { reason } if c.required => format!(
                "none works ({reason}); commands are refused (tools.sandbox_required = true)"
            ),
            Plan::Unavailable { reason } => {
                format!("none works ({reason}); commands run unconfined")
            }
        }
    }

    /// The warning shown once when commands run unconfined because no
    /// backend works.
    pub fn unconfined_warning(&self, reason: &str) -> String {
        format!(
            "no sandbox backend works here ({reason}); shell commands run unconfined. To confine \
             them, {}; set tools.sandbox_required = true to refuse commands instead, or \
             tools.sandbox = \"off\" to silence this",
            remedy()
        )
    }

    /// The result of a command refused because the sandbox is required
    /// and no backend works.
    pub fn refusal(&self, reason: &str) -> String {
        format!(
            "denied: the sandbox is required (tools.sandbox_required = true) and no backend \
             works here ({reason}); the command did not run. To run commands, the user can {}, \
             or set tools.sandbox_required = false to run them unconfined",
            remedy()
        )
    }
}

/// What makes a backend work here.
fn remedy() -> &'static str {
    if cfg!(target_os = "linux") {
        "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
    } else {
        "run eonyx on Linux (no sandbox backend exists for this system yet)"
    }
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// `true` the first time it is called in this process: commands about to
/// run unconfined because no backend works are warned about once.
pub fn first_unconfined() -> bool {
    !WARNED.swap(true, Ordering::Relaxed)
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests;
