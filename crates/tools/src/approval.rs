//! Approval: what needs the user's yes ([`ApprovalKind`]), who decides
//! ([`Approver`]), and the policy of docs/tools.md#paths-and-approval
//! ([`PolicyApprover`]) that applies config and flags before asking.

use std::borrow::Cow;
use std::collections::BTreeMap;

use camino::Utf8PathBuf;
use eonyx_core::ToolName;
use eonyx_core::config::{
    McpApproval, ShellPolicy, ToolsConfig, WebFetchConfig, WebFetchPolicy, WritePolicy,
};
use eonyx_core::provider::{BoxFuture, CancellationToken};

use super::ToolError;
use crate::permissions::{RuleMatcher, RuleRef, Verdict};

/// Something that needs the user's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalKind {
    /// Any `shell` command.
    Shell { command: String },
    /// A file tool touching a path outside the project root (after `..` and
    /// symlinks are resolved).
    OutsideProject { tool: ToolName, path: Utf8PathBuf },
    /// A file tool reading a path inside the project root: no approval of
    /// its own, only permission rules stop or ask it
    /// ([`Approver::decide_read`]).
    Read { tool: ToolName, path: Utf8PathBuf },
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
    /// `web_fetch` reading `url`; an "always" holds for its host.
    WebFetch {
        /// Lowercased, without the port.
        host: String,
        url: String,
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
            ApprovalKind::Read { .. } => "read".into(),
            ApprovalKind::Write {
                protected: true, ..
            } => "write_protected".into(),
            ApprovalKind::Write { outside: false, .. } => "write".into(),
            ApprovalKind::Write { outside: true, .. } => "write_outside_project".into(),
            ApprovalKind::Attach { .. } => "attach_outside_project".into(),
            ApprovalKind::Mcp { tool, .. } => format!("mcp:{tool}").into(),
            ApprovalKind::WebFetch { host, .. } => format!("web_fetch:{host}").into(),
        }
    }

    /// One line for an approval prompt, e.g. `run shell command: ls -la`:
    /// the whole command, every hidden character escaped
    /// ([`eonyx_core::text::escape_controls`]; newlines kept), so what is
    /// shown for a yes is what runs.
    pub fn describe(&self) -> String {
        eonyx_core::text::escape_controls(&self.describe_raw(), false).into_owned()
    }

    fn describe_raw(&self) -> String {
        match self {
            ApprovalKind::Task { task, kind } => format!("[task: {task}] {}", kind.describe_raw()),
            ApprovalKind::Shell { command } => format!("run shell command: {command}"),
            ApprovalKind::OutsideProject { tool, path } => {
                format!("{tool} outside the project: {path}")
            }
            ApprovalKind::Read { tool, path } => format!("{tool} {path}"),
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
            ApprovalKind::WebFetch { url, host } => format!(
                "fetch {} ([a]lways: every page of {host} this session)",
                eonyx_core::text::ellipsize(url, SHOWN_ARGUMENT_CHARS)
            ),
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

    /// Decides a request that must be asked of the user, if anyone is
    /// asked at all (an `ask` permission rule matched, or a `PreToolUse`
    /// hook answered `ask`): an approver that may answer for the user by
    /// itself (ACP's `auto` mode) asks the user here instead. Approvers
    /// that wrap another forward it.
    ///
    /// No method of this trait has a default: a wrapper that forgot one
    /// would answer for its inner approver, and a default "allow" would
    /// fail open (docs/tools.md#permission-rules).
    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision>;

    /// For a request this approver denied: the denial as the model should
    /// read it when a permission rule made it (which rule, where); `None`
    /// when no rule did, and the tool says how the user can allow it.
    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String>;

    /// Decides a read inside the project ([`ApprovalKind::Read`]), which
    /// needs no approval: only permission rules deny or ask it (deny >
    /// ask > allow > the tool's setting, which allows). Approvers that
    /// wrap a policy forward it.
    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision>;

    /// The permission rules reads follow, for a search that comes across
    /// files no one named (`grep` of a directory skips those a `deny` or
    /// `ask` rule names); `None`: no rules.
    fn read_rules(&self) -> Option<std::sync::Arc<RuleMatcher>>;
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
    /// `tools.web_fetch` and `tools.web_fetch_domains` (the rest of
    /// [`WebFetchConfig`] is the fetcher's).
    pub web: WebFetchConfig,
    /// Who is asked when the answer is "ask" (the REPL's prompt; `None`
    /// in batch runs and `eonyx run`, where "ask" denies).
    pub ask: Option<std::sync::Arc<dyn Approver>>,
    /// The `[permissions]` rules, applied before everything above
    /// (deny > ask > allow > the tool's setting).
    pub rules: std::sync::Arc<RuleMatcher>,
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
    /// `--allow-web`: `web_fetch` without asking (not over
    /// `tools.web_fetch = "deny"`).
    pub web: bool,
}

impl Permissions {
    /// Nothing allowed up front: every "ask" is asked (or denied).
    pub const NONE: Permissions = Permissions {
        shell: false,
        write: false,
        mcp: false,
        web: false,
    };
    /// `--allow-shell --allow-write --allow-mcp`.
    pub const ALL: Permissions = Permissions {
        shell: true,
        write: true,
        mcp: true,
        web: true,
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
            web: tools.web.clone(),
            ask,
            rules: std::sync::Arc::new(RuleMatcher::new(&tools.permissions)),
        }
    }

    /// A policy with no one to ask and no MCP servers (batch runs).
    pub fn batch(shell: ShellPolicy, write: WritePolicy, allowed: Permissions) -> Self {
        Self {
            shell,
            write,
            allowed,
            mcp: McpPolicy::default(),
            web: WebFetchConfig::default(),
            ask: None,
            rules: std::sync::Arc::default(),
        }
    }

    /// How many permission rules apply.
    pub fn rules_len(&self) -> usize {
        self.rules.len()
    }

    /// What the permission rules say about `kind`.
    pub fn verdict(&self, kind: &ApprovalKind) -> Verdict {
        rule_verdict(&self.rules, kind)
    }
}

/// What `rules` say about `kind` (a task's question: what it asks).
pub fn rule_verdict(rules: &RuleMatcher, kind: &ApprovalKind) -> Verdict {
    match kind.innermost() {
        ApprovalKind::Shell { command } => rules.shell(command),
        ApprovalKind::Write { path, .. } => rules.write(path),
        ApprovalKind::OutsideProject { path, .. } | ApprovalKind::Read { path, .. } => {
            rules.read(path)
        }
        ApprovalKind::Mcp { server, tool, .. } => {
            let own = tool
                .strip_prefix("mcp__")
                .and_then(|t| t.strip_prefix(server.as_str()))
                .and_then(|t| t.strip_prefix("__"))
                .unwrap_or(tool);
            rules.mcp(server, own)
        }
        ApprovalKind::WebFetch { host, url } => rules.web_fetch(&web_host_port(host, url)),
        ApprovalKind::Attach { .. } | ApprovalKind::Task { .. } => Verdict::Unmatched,
    }
}

impl ApprovalKind {
    /// The rule `p` ("always in this project") in the REPL would save for
    /// this request: `shell(<first two words>:*)` for a simple command,
    /// `write(<path>)` for a write inside the project; `None` where `p` is
    /// not offered (a compound line, anything else).
    pub fn project_rule(&self) -> Option<String> {
        match self.innermost() {
            ApprovalKind::Shell { command } => crate::permissions::project_shell_rule(command),
            ApprovalKind::Write {
                shown,
                outside: false,
                protected: false,
                ..
            } => crate::permissions::project_write_rule(shown),
            _ => None,
        }
    }
}

/// What rules, config and flags say about a `web_fetch` before anyone is
/// asked; see [`web_fetch_verdict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebFetchVerdict {
    Allow,
    /// The user is asked (REPL); denied where no one can be. `rule`: the
    /// `ask` permission rule that said so (asked even where a mode would
    /// answer by itself, as ACP's `auto`).
    Ask {
        rule: Option<RuleRef>,
    },
    /// `rule`: the `deny` permission rule that said so.
    Deny {
        rule: Option<RuleRef>,
    },
}

/// **The** decision about fetching from `host` (`host:port` as the URL
/// names it, docs/tools.md#web-fetch): the permission rules first (a
/// `web_fetch(HOST)` rule in `deny`, then `ask`, then `allow`); then
/// `tools.web_fetch = "deny"` denies whatever else is said; `"allow"`,
/// `--allow-web` (`allow_web`) or a match in `tools.web_fetch_domains`
/// allows; anything else asks. An untrusted project's `allow` rules are
/// not in `rules` ([`RuleMatcher::new`] leaves them out).
pub fn web_fetch_verdict(
    web: &WebFetchConfig,
    rules: &RuleMatcher,
    allow_web: bool,
    host: &str,
) -> WebFetchVerdict {
    match rules.web_fetch(host) {
        Verdict::Deny(rule) => return WebFetchVerdict::Deny { rule: Some(rule) },
        Verdict::Ask(rule) => return WebFetchVerdict::Ask { rule: Some(rule) },
        Verdict::Allow => return WebFetchVerdict::Allow,
        Verdict::Unmatched => {}
    }
    let bare = match host.rsplit_once(':') {
        Some((h, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    match web.policy {
        WebFetchPolicy::Deny => WebFetchVerdict::Deny { rule: None },
        WebFetchPolicy::Allow => WebFetchVerdict::Allow,
        WebFetchPolicy::Ask
            if allow_web
                || web
                    .domains
                    .iter()
                    .any(|d| eonyx_web::domain_matches(d, bare)) =>
        {
            WebFetchVerdict::Allow
        }
        WebFetchPolicy::Ask => WebFetchVerdict::Ask { rule: None },
    }
}

/// The `host:port` a `web_fetch` question is about, as rules match it.
fn web_host_port(host: &str, url: &str) -> String {
    eonyx_web::parse_url(url)
        .map(|u| eonyx_web::host_port(&u))
        .unwrap_or_else(|_| host.to_owned())
}

impl Approver for PolicyApprover {
    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        match self.verdict(kind) {
            Verdict::Deny(rule) => Some(format!(
                "denied by the permission rule {rule}; do not retry it: do it another way, or ask \
                 the user (who can change that rule)"
            )),
            Verdict::Ask(rule) if self.ask.is_none() => Some(format!(
                "denied: the permission rule {rule} needs the user's yes, and there is no one to \
                 ask in this run (no --allow-* flag covers it); the user can run it in the REPL"
            )),
            _ => None,
        }
    }

    fn read_rules(&self) -> Option<std::sync::Arc<RuleMatcher>> {
        (!self.rules.is_empty()).then(|| self.rules.clone())
    }

    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            match self.verdict(kind) {
                Verdict::Deny(_) => Decision::Deny,
                Verdict::Ask(_) => match &self.ask {
                    Some(ask) => ask.decide_asked(kind).await,
                    None => Decision::Deny,
                },
                Verdict::Allow | Verdict::Unmatched => Decision::Allow,
            }
        })
    }

    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(self.decide_as(kind, Question::Usual))
    }

    /// The same policy, but what it asks the user goes as a question that
    /// must be asked ([`Approver::decide_asked`]): a `PreToolUse` hook's
    /// `ask`. Config, flags and rules decide as usual.
    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(self.decide_as(kind, Question::MustAsk))
    }
}

/// How a policy puts a question to its user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Question {
    /// [`Approver::decide`]: the user's approver may answer by itself.
    Usual,
    /// [`Approver::decide_asked`]: the user is asked.
    MustAsk,
}

impl PolicyApprover {
    /// Asks the user (`None`: nobody to ask, denied).
    async fn ask_user(&self, kind: &ApprovalKind, question: Question) -> Decision {
        match (&self.ask, question) {
            (None, _) => Decision::Deny,
            (Some(ask), Question::Usual) => ask.decide(kind).await,
            (Some(ask), Question::MustAsk) => ask.decide_asked(kind).await,
        }
    }

    async fn decide_as(&self, kind: &ApprovalKind, question: Question) -> Decision {
        {
            // The rules first: deny > ask > allow > the tool's setting. A
            // write to `.git/` or `eonyx.json` is never allowed by a rule.
            let protected = matches!(
                kind.innermost(),
                ApprovalKind::Write {
                    protected: true,
                    ..
                }
            );
            match self.verdict(kind) {
                Verdict::Deny(_) => return Decision::Deny,
                Verdict::Ask(_) => return self.ask_user(kind, Question::MustAsk).await,
                Verdict::Allow if !protected => return Decision::Allow,
                Verdict::Allow | Verdict::Unmatched => {}
            }
            // A labelled question is decided as what it asks; the label
            // goes to the user with it.
            let (policy, flag) = match kind.innermost() {
                ApprovalKind::Task { .. } => (ShellPolicy::Deny, false),
                // Reads inside the project need no approval.
                ApprovalKind::Read { .. } => return Decision::Allow,
                ApprovalKind::Attach { .. } => return self.ask_user(kind, question).await,
                ApprovalKind::Write { outside: true, .. }
                | ApprovalKind::Write {
                    protected: true, ..
                } => {
                    return match self.write {
                        WritePolicy::Ask | WritePolicy::Allow => {
                            self.ask_user(kind, question).await
                        }
                        WritePolicy::Deny => Decision::Deny,
                    };
                }
                ApprovalKind::Mcp { server, .. } => {
                    return match self.mcp.of(server) {
                        McpApproval::Deny => Decision::Deny,
                        McpApproval::Allow => Decision::Allow,
                        McpApproval::Ask if self.allowed.mcp => Decision::Allow,
                        McpApproval::Ask => self.ask_user(kind, question).await,
                    };
                }
                ApprovalKind::WebFetch { host, url } => {
                    // The rules were applied above (unmatched here); the
                    // same function decides the rest.
                    let host = web_host_port(host, url);
                    return match web_fetch_verdict(&self.web, &self.rules, self.allowed.web, &host)
                    {
                        WebFetchVerdict::Allow => Decision::Allow,
                        WebFetchVerdict::Deny { .. } => Decision::Deny,
                        WebFetchVerdict::Ask { rule: Some(_) } => {
                            self.ask_user(kind, Question::MustAsk).await
                        }
                        WebFetchVerdict::Ask { rule: None } => self.ask_user(kind, question).await,
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
            match policy {
                ShellPolicy::Allow => Decision::Allow,
                ShellPolicy::Deny => Decision::Deny,
                ShellPolicy::Ask => self.ask_user(kind, question).await,
            }
        }
    }
}

mod wrappers;
pub use wrappers::{AllowAll, DenyAll, MustAsk, TaskLabel};

/// Decides a read inside the project ([`Approver::decide_read`]), unless
/// `cancel` fires first.
pub async fn approve_read(
    approver: &dyn Approver,
    kind: &ApprovalKind,
    cancel: &CancellationToken,
) -> Result<Decision, ToolError> {
    unless_cancelled(approver.decide_read(kind), cancel).await
}

/// Asks the approver, unless `cancel` fires first.
pub async fn approve(
    approver: &dyn Approver,
    kind: &ApprovalKind,
    cancel: &CancellationToken,
) -> Result<Decision, ToolError> {
    unless_cancelled(approver.decide(kind), cancel).await
}

async fn unless_cancelled(
    decision: BoxFuture<'_, Decision>,
    cancel: &CancellationToken,
) -> Result<Decision, ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Interrupted),
        d = decision => Ok(d),
    }
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
