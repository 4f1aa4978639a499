//! Approval: what needs the user's yes ([`ApprovalKind`]), who decides
//! ([`Approver`]), and the policy of docs/tools.md#paths-and-approval
//! ([`PolicyApprover`]) that applies config and flags before asking.

use camino::Utf8PathBuf;
use eonyx_config::{ShellPolicy, WritePolicy};
use eonyx_core::ToolName;
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

impl ApprovalKind {
    /// Stable class name; an "always" answer applies to every request of
    /// the same class for the rest of the session.
    pub fn class(&self) -> &'static str {
        match self {
            ApprovalKind::Task { kind, .. } => kind.class(),
            ApprovalKind::Shell { .. } => "shell",
            ApprovalKind::OutsideProject { .. } => "outside_project",
            ApprovalKind::Write {
                protected: true, ..
            } => "write_protected",
            ApprovalKind::Write { outside: false, .. } => "write",
            ApprovalKind::Write { outside: true, .. } => "write_outside_project",
            ApprovalKind::Attach { .. } => "attach_outside_project",
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

/// Decides whether a shell command, an outside path or a file write may
/// go ahead.
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
/// file.
pub struct PolicyApprover {
    pub shell: ShellPolicy,
    pub allow_shell: bool,
    pub write: WritePolicy,
    pub allow_write: bool,
    pub ask: Option<std::sync::Arc<dyn Approver>>,
}

impl PolicyApprover {
    /// A policy with no one to ask (batch runs, `eonyx run`).
    pub fn batch(
        shell: ShellPolicy,
        allow_shell: bool,
        write: WritePolicy,
        allow_write: bool,
    ) -> Self {
        Self {
            shell,
            allow_shell,
            write,
            allow_write,
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
                ApprovalKind::Write { .. } => (self.write, self.allow_write),
                ApprovalKind::Shell { .. } | ApprovalKind::OutsideProject { .. } => {
                    (self.shell, self.allow_shell)
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
pub(crate) async fn approve(
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
                shell: policy,
                allow_shell: allow_flag,
                write: ShellPolicy::Deny,
                allow_write: false,
                ask,
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
            shell: ShellPolicy::Allow,
            allow_shell: true,
            write: write_policy,
            allow_write,
            ask,
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
            shell: ShellPolicy::Allow,
            allow_shell: true,
            write: ShellPolicy::Allow,
            allow_write: true,
            ask,
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
        let batch = PolicyApprover::batch(ShellPolicy::Allow, true, ShellPolicy::Allow, true);
        assert_eq!(batch.decide(&kind).await, Decision::Deny);
        let rec = Arc::new(Recorder::new(Decision::Allow));
        let repl = PolicyApprover {
            ask: Some(rec.clone()),
            ..PolicyApprover::batch(ShellPolicy::Ask, false, ShellPolicy::Ask, false)
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
    async fn a_task_label_reaches_the_user_and_the_policy_still_decides_first() {
        use std::sync::Arc;
        let rec = Arc::new(Recorder::new(Decision::Allow));
        let child = PolicyApprover {
            shell: ShellPolicy::Ask,
            allow_shell: false,
            write: ShellPolicy::Deny,
            allow_write: false,
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
