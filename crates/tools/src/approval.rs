//! Approval: what needs the user's yes ([`ApprovalKind`]), who decides
//! ([`Approver`]), and the policy of docs/tools.md#paths-and-approval
//! ([`PolicyApprover`]) that applies config and flags before asking.

use std::borrow::Cow;
use std::collections::BTreeMap;

use camino::Utf8PathBuf;
use eonyx_core::ToolName;
use eonyx_core::config::{McpApproval, ShellPolicy, ToolsConfig, WritePolicy};
use eonyx_core::provider::{BoxFuture, CancellationToken};

use super::ToolError;

/// Something that needs the user's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalKind {
    /// Any `shell` command.
    Shell { command: String },
    /// A file tool touching a path outside the project root (after `..` and
    /// symlinks are resolved).
    OutsideProject { tool: ToolName, path: Utf8PathBuf },
    /// `write_file` / `edit_file` about to change a file; `diff` is shown
    /// before asking.
    Write {
        tool: ToolName,
        /// Resolved absolute path.
        path: Utf8PathBuf,
        /// As shown to the user (relative inside the root).
        shown: String,
        diff: String,
        /// Outside the project root: never allowed without a user.
        outside: bool,
        /// `.git/` or `eonyx.json` inside the root (they run code outside
        /// any sandbox and grant tool permissions): never allowed without
        /// a user either, whatever `--allow-write` and `tools.write` say.
        protected: bool,
    },
    /// A tool of an MCP server (docs/mcp.md#approval).
    Mcp {
        server: String,
        /// The name the model called (`mcp__<server>__<tool>`).
        tool: String,
        /// The arguments as compact JSON.
        arguments: String,
    },
    /// The user's `@path` names a file outside the project root: only a
    /// user can allow sending it (batch runs refuse).
    Attach { path: Utf8PathBuf },
    /// What a task's child agent asks, labelled with the task's
    /// description (the same user answers, docs/tools.md#task).
    Task {
        task: String,
        kind: Box<ApprovalKind>,
    },
}

/// Arguments shown in an MCP approval question are cut to this many
/// characters.
const SHOWN_ARGUMENT_CHARS: usize = 300;

impl ApprovalKind {
    /// Stable class name; an "always" answer applies to every request of
    /// the same class for the rest of the session (for MCP: that one tool,
    /// `mcp:<tool>`).
    pub fn class(&self) -> Cow<'static, str> {
        match self {
            ApprovalKind::Task { kind, .. } => kind.class(),
            ApprovalKind::Shell { .. } => "shell".into(),
            ApprovalKind::OutsideProject { .. } => "outside_project".into(),
            ApprovalKind::Write {
                protected: true, ..
            } => "write_protected".into(),
            ApprovalKind::Write { outside: false, .. } => "write".into(),
            ApprovalKind::Write { outside: true, .. } => "write_outside_project".into(),
            ApprovalKind::Attach { .. } => "attach_outside_project".into(),
            ApprovalKind::Mcp { tool, .. } => format!("mcp:{tool}").into(),
        }
    }

    /// One line for an approval prompt, e.g. `run shell command: ls -la`.
    pub fn describe(&self) -> String {
        match self {
            ApprovalKind::Task { task, kind } => format!("[task: {task}] {}", kind.describe()),
            ApprovalKind::Shell { command } => format!("run shell command: {command}"),
            ApprovalKind::OutsideProject { tool, path } => {
                format!("{tool} outside the project: {path}")
            }
            ApprovalKind::Write {
                tool,
                shown,
                protected: true,
                ..
            } => format!("{tool} {shown} (git's or eonyx's own configuration)"),
            ApprovalKind::Write {
                tool,
                shown,
                outside: false,
                ..
            } => format!("{tool} {shown}"),
            ApprovalKind::Write {
                tool,
                path,
                outside: true,
                ..
            } => format!("{tool} outside the project: {path}"),
            ApprovalKind::Mcp {
                server,
                tool,
                arguments,
            } => format!(
                "call {tool} (MCP server `{server}`) with {}",
                eonyx_core::text::ellipsize(arguments, SHOWN_ARGUMENT_CHARS)
            ),
            ApprovalKind::Attach { path } => {
                format!("send a file from outside the project: {path}")
            }
        }
    }
}

impl ApprovalKind {
    /// What is asked, without the task labels around it.
    pub fn innermost(&self) -> &ApprovalKind {
        match self {
            ApprovalKind::Task { kind, .. } => kind.innermost(),
            other => other,
        }
    }
}

/// An approver's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

/// Decides whether a shell command, an outside path, a file write or an
/// MCP tool call may go ahead.
///
/// The agent's [`PolicyApprover`] applies config and flags and consults the
/// frontend's approver (the user) only when the answer is "ask": the REPL
/// asks y/n/always (always = for the rest of the session, per
/// [`ApprovalKind::class`]); batch and `run` have none, so "ask" denies.
pub trait Approver: Send + Sync {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision>;
}

/// Approves everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Approver for AllowAll {
    fn decide<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }
}

/// Denies everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn decide<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Deny })
    }
}

/// The rules of docs/tools.md#paths-and-approval, one place for all tools. Shell commands (and reads
/// outside the root): `--allow-shell` or `tools.shell = "allow"` allow,
/// `"deny"` denies, `"ask"` asks `ask` (the REPL's prompt) and denies when
/// there is no one to ask (batch, `run`). Writes inside the root: the same
/// with `--allow-write` and `tools.write`. Writes outside the root: asked
/// when there is someone to ask (and `tools.write` is not `"deny"`), else
/// denied, whatever the flags; so are writes to `.git/` and `eonyx.json`
/// inside the root. A flag given on the command line wins over the config
/// file. MCP tools: each server's `approval` (`"deny"` denies whatever the
/// flags, `"allow"` allows), and for `"ask"` `--allow-mcp` allows, else the
/// user is asked, else denied.
pub struct PolicyApprover {
    /// `tools.shell`.
    pub shell: ShellPolicy,
    /// `tools.write`.
    pub write: WritePolicy,
    /// What the command line allowed up front.
    pub allowed: Permissions,
    pub mcp: McpPolicy,
    /// Who is asked when the answer is "ask" (the REPL's prompt; `None`
    /// in batch runs and `eonyx run`, where "ask" denies).
    pub ask: Option<std::sync::Arc<dyn Approver>>,
}

/// What the user allowed up front, on the command line: `--allow-shell`
/// (shell commands and reads outside the root), `--allow-write` (writes
/// inside the root) and `--allow-mcp` (MCP tools of servers set to
/// `"ask"`). A task's child inherits them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Permissions {
    pub shell: bool,
    pub write: bool,
    pub mcp: bool,
}

impl Permissions {
    /// Nothing allowed up front: every "ask" is asked (or denied).
    pub const NONE: Permissions = Permissions {
        shell: false,
        write: false,
        mcp: false,
    };
    /// `--allow-shell --allow-write --allow-mcp`.
    pub const ALL: Permissions = Permissions {
        shell: true,
        write: true,
        mcp: true,
    };
}

/// What the config says about MCP tool calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpPolicy {
    /// Each server's `approval` (a server not listed: `"ask"`).
    pub servers: BTreeMap<String, McpApproval>,
}

impl McpPolicy {
    /// The `approval` of `server`.
    pub fn of(&self, server: &str) -> McpApproval {
        self.servers.get(server).copied().unwrap_or_default()
    }
}

impl PolicyApprover {
    /// The session's policy: `tools.shell` and `tools.write` from `tools`,
    /// the flags in `allowed`, each MCP server's `approval` in `mcp`, and
    /// `ask` for the questions left to a user. The one way the agent
    /// builds it, for a session and for a task's child alike.
    pub fn new(
        tools: &ToolsConfig,
        allowed: Permissions,
        mcp: McpPolicy,
        ask: Option<std::sync::Arc<dyn Approver>>,
    ) -> Self {
        Self {
            shell: tools.shell,
            write: tools.write,
            allowed,
            mcp,
            ask,
        }
    }

    /// A policy with no one to ask and no MCP servers (batch runs).
    pub fn batch(shell: ShellPolicy, write: WritePolicy, allowed: Permissions) -> Self {
        Self {
            shell,
            write,
            allowed,
            mcp: McpPolicy::default(),
            ask: None,
        }
    }
}

impl Approver for PolicyApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            // A labelled question is decided as what it asks; the label
            // goes to the user with it.
            let (policy, flag) = match kind.innermost() {
                ApprovalKind::Task { .. } => (ShellPolicy::Deny, false),
                ApprovalKind::Attach { .. } => {
                    return match &self.ask {
                        Some(ask) => ask.decide(kind).await,
                        None => Decision::Deny,
                    };
                }
                ApprovalKind::Write { outside: true, .. }
                | ApprovalKind::Write {
                    protected: true, ..
                } => {
                    return match (&self.ask, self.write) {
                        (Some(ask), WritePolicy::Ask | WritePolicy::Allow) => {
                            ask.decide(kind).await
                        }
                        _ => Decision::Deny,
                    };
                }
                ApprovalKind::Mcp { server, .. } => {
                    return match (self.mcp.of(server), &self.ask) {
                        (McpApproval::Deny, _) => Decision::Deny,
                        (McpApproval::Allow, _) => Decision::Allow,
                        (McpApproval::Ask, _) if self.allowed.mcp => Decision::Allow,
                        (McpApproval::Ask, Some(ask)) => ask.decide(kind).await,
                        (McpApproval::Ask, None) => Decision::Deny,
                    };
                }
                ApprovalKind::Write { .. } => (self.write, self.allowed.write),
                ApprovalKind::Shell { .. } | ApprovalKind::OutsideProject { .. } => {
                    (self.shell, self.allowed.shell)
                }
            };
            if flag {
                return Decision::Allow;
            }
            match (policy, &self.ask) {
                (ShellPolicy::Allow, _) => Decision::Allow,
                (ShellPolicy::Deny, _) | (ShellPolicy::Ask, None) => Decision::Deny,
                (ShellPolicy::Ask, Some(ask)) => ask.decide(kind).await,
            }
        })
    }
}

/// The user's approver as a task's child sees it: every question is
/// labelled with the task ([`ApprovalKind::Task`]) before it is asked.
pub struct TaskLabel {
    pub task: String,
    pub inner: std::sync::Arc<dyn Approver>,
}

impl Approver for TaskLabel {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            // Let the parent show the child's progress (the call being
            // asked about) before the question is drawn.
            tokio::task::yield_now().await;
            let labelled = ApprovalKind::Task {
                task: self.task.clone(),
                kind: Box::new(kind.clone()),
            };
            self.inner.decide(&labelled).await
        })
    }
}

/// Asks the approver, unless `cancel` fires first.
pub async fn approve(
    approver: &dyn Approver,
    kind: &ApprovalKind,
    cancel: &CancellationToken,
) -> Result<Decision, ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Interrupted),
        d = approver.decide(kind) => Ok(d),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn policy_approver_follows_spec_semantics() {
        let shell = ApprovalKind::Shell {
            command: "ls".into(),
        };
        let decide = |policy, allow_flag, ask: Option<std::sync::Arc<dyn Approver>>| {
            let a = PolicyApprover {
                ask,
                ..PolicyApprover::batch(
                    policy,
                    ShellPolicy::Deny,
                    Permissions {
                        shell: allow_flag,
                        ..Permissions::NONE
                    },
                )
            };
            let kind = shell.clone();
            async move { a.decide(&kind).await }
        };
        use std::sync::Arc;
        // batch/run: ask without a prompt denies; the flag or config allows.
        assert_eq!(decide(ShellPolicy::Ask, false, None).await, Decision::Deny);
        assert_eq!(decide(ShellPolicy::Ask, true, None).await, Decision::Allow);
        assert_eq!(
            decide(ShellPolicy::Allow, false, None).await,
            Decision::Allow
        );
        assert_eq!(
            decide(ShellPolicy::Deny, false, Some(Arc::new(AllowAll))).await,
            Decision::Deny
        );
        // REPL: ask delegates to the prompt.
        assert_eq!(
            decide(ShellPolicy::Ask, false, Some(Arc::new(AllowAll))).await,
            Decision::Allow
        );
        assert_eq!(
            decide(ShellPolicy::Ask, false, Some(Arc::new(DenyAll))).await,
            Decision::Deny
        );
    }

    #[tokio::test]
    async fn write_policy_is_separate_from_shell_and_outside_needs_a_user() {
        use std::sync::Arc;
        let write = |outside| ApprovalKind::Write {
            tool: ToolName::WriteFile,
            path: "/p/a".into(),
            shown: "a".into(),
            diff: String::new(),
            outside,
            protected: false,
        };
        let p = |write_policy, allow_write, ask: Option<Arc<dyn Approver>>| PolicyApprover {
            ask,
            ..PolicyApprover::batch(
                ShellPolicy::Allow,
                write_policy,
                Permissions {
                    shell: true,
                    write: allow_write,
                    mcp: false,
                },
            )
        };
        // --allow-shell does not allow writes.
        assert_eq!(
            p(ShellPolicy::Ask, false, None).decide(&write(false)).await,
            Decision::Deny
        );
        assert_eq!(
            p(ShellPolicy::Ask, true, None).decide(&write(false)).await,
            Decision::Allow
        );
        assert_eq!(
            p(ShellPolicy::Allow, false, None)
                .decide(&write(false))
                .await,
            Decision::Allow
        );
        // Outside: no user, no write, whatever the flags.
        assert_eq!(
            p(ShellPolicy::Allow, true, None).decide(&write(true)).await,
            Decision::Deny
        );
        let rec = Arc::new(Recorder::new(Decision::Allow));
        let allowed = p(ShellPolicy::Allow, true, Some(rec.clone()));
        assert_eq!(allowed.decide(&write(true)).await, Decision::Allow);
        assert_eq!(allowed.decide(&write(false)).await, Decision::Allow);
        assert_eq!(rec.asked().len(), 1, "only the outside write is asked");
        assert_eq!(
            p(ShellPolicy::Deny, false, Some(rec))
                .decide(&write(true))
                .await,
            Decision::Deny
        );
    }

    #[tokio::test]
    async fn writes_to_git_or_eonyx_json_need_a_user_whatever_the_flags() {
        use std::sync::Arc;
        let protected = ApprovalKind::Write {
            tool: ToolName::EditFile,
            path: "/p/eonyx.json".into(),
            shown: "eonyx.json".into(),
            diff: String::new(),
            outside: false,
            protected: true,
        };
        assert_eq!(protected.class(), "write_protected");
        let p = |ask: Option<Arc<dyn Approver>>| PolicyApprover {
            ask,
            ..PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::ALL)
        };
        assert_eq!(p(None).decide(&protected).await, Decision::Deny);
        let rec = Arc::new(Recorder::new(Decision::Allow));
        assert_eq!(
            p(Some(rec.clone())).decide(&protected).await,
            Decision::Allow
        );
        assert_eq!(rec.asked(), vec![protected.clone()]);
        let deny = PolicyApprover {
            write: ShellPolicy::Deny,
            ..p(Some(rec))
        };
        assert_eq!(deny.decide(&protected).await, Decision::Deny);
    }

    #[tokio::test]
    async fn attaching_from_outside_the_root_needs_a_user_whatever_the_flags() {
        use std::sync::Arc;
        let kind = ApprovalKind::Attach {
            path: "/etc/hosts".into(),
        };
        let batch = PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::ALL);
        assert_eq!(batch.decide(&kind).await, Decision::Deny);
        let rec = Arc::new(Recorder::new(Decision::Allow));
        let repl = PolicyApprover {
            ask: Some(rec.clone()),
            ..PolicyApprover::batch(ShellPolicy::Ask, ShellPolicy::Ask, Permissions::NONE)
        };
        assert_eq!(repl.decide(&kind).await, Decision::Allow);
        assert_eq!(rec.asked(), vec![kind.clone()]);
        assert_eq!(kind.class(), "attach_outside_project");
        assert_eq!(
            kind.describe(),
            "send a file from outside the project: /etc/hosts"
        );
    }

    #[test]
    fn approval_kinds_describe_themselves() {
        let k = ApprovalKind::OutsideProject {
            tool: ToolName::ReadFile,
            path: "/etc/passwd".into(),
        };
        assert_eq!(k.class(), "outside_project");
        assert_eq!(k.describe(), "read_file outside the project: /etc/passwd");
        let k = ApprovalKind::Shell {
            command: "cargo test".into(),
        };
        assert_eq!(k.class(), "shell");
        assert_eq!(k.describe(), "run shell command: cargo test");
        let m = ApprovalKind::Mcp {
            server: "git".into(),
            tool: "mcp__git__git_status".into(),
            arguments: r#"{"repo_path":"."}"#.into(),
        };
        assert_eq!(m.class(), "mcp:mcp__git__git_status");
        assert_eq!(
            m.describe(),
            r#"call mcp__git__git_status (MCP server `git`) with {"repo_path":"."}"#
        );
        let t = ApprovalKind::Task {
            task: "run the tests".into(),
            kind: Box::new(k.clone()),
        };
        assert_eq!(t.class(), "shell", "\"always\" covers the same kind");
        assert_eq!(
            t.describe(),
            "[task: run the tests] run shell command: cargo test"
        );
        assert_eq!(t.innermost(), &k);
    }

    #[tokio::test]
    async fn mcp_calls_follow_each_servers_approval_and_the_flag() {
        use std::sync::Arc;
        let call = |server: &str| ApprovalKind::Mcp {
            server: server.into(),
            tool: format!("mcp__{server}__t"),
            arguments: "{}".into(),
        };
        let p = |allow: bool, ask: Option<Arc<dyn Approver>>| PolicyApprover {
            shell: ShellPolicy::Allow,
            write: ShellPolicy::Allow,
            allowed: Permissions {
                mcp: allow,
                ..Permissions::ALL
            },
            mcp: McpPolicy {
                servers: [
                    ("open".to_owned(), McpApproval::Allow),
                    ("closed".to_owned(), McpApproval::Deny),
                ]
                .into(),
            },
            ask,
        };
        // Batch / run: "ask" denies, whatever the shell and write flags.
        assert_eq!(p(false, None).decide(&call("other")).await, Decision::Deny);
        assert_eq!(p(true, None).decide(&call("other")).await, Decision::Allow);
        assert_eq!(p(false, None).decide(&call("open")).await, Decision::Allow);
        // "deny" wins over --allow-mcp and over a user.
        let yes: Arc<dyn Approver> = Arc::new(AllowAll);
        assert_eq!(
            p(true, Some(yes.clone())).decide(&call("closed")).await,
            Decision::Deny
        );
        // The REPL asks for "ask".
        let rec = Arc::new(Recorder::new(Decision::Allow));
        assert_eq!(
            p(false, Some(rec.clone())).decide(&call("other")).await,
            Decision::Allow
        );
        assert_eq!(rec.asked().len(), 1);
    }

    #[tokio::test]
    async fn a_task_label_reaches_the_user_and_the_policy_still_decides_first() {
        use std::sync::Arc;
        let rec = Arc::new(Recorder::new(Decision::Allow));
        let child = PolicyApprover {
            shell: ShellPolicy::Ask,
            write: ShellPolicy::Deny,
            allowed: Permissions::NONE,
            mcp: McpPolicy::default(),
            ask: Some(Arc::new(TaskLabel {
                task: "explore".into(),
                inner: rec.clone(),
            })),
        };
        let shell = ApprovalKind::Shell {
            command: "ls".into(),
        };
        assert_eq!(child.decide(&shell).await, Decision::Allow);
        let write = ApprovalKind::Write {
            tool: ToolName::WriteFile,
            path: "/p/a".into(),
            shown: "a".into(),
            diff: String::new(),
            outside: false,
            protected: false,
        };
        assert_eq!(child.decide(&write).await, Decision::Deny, "never asked");
        let asked = rec.asked();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].describe(), "[task: explore] run shell command: ls");
    }
}
