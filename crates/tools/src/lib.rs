//! The built-in tools (SPEC section 26): `read_file`, `list_dir`, `grep`,
//! `shell`, `write_file`, `edit_file`, `recall`, `skill` and `web_fetch`
//! (docs/tools.md),
//! and the definitions and argument parsing of `memory` and `task`. Every
//! tool is named by [`eonyx_core::ToolName`], never by a string of its own.
//! This crate depends on core, store, sandbox and web only, never on the agent:
//! what a tool needs from the session comes in a [`ToolContext`], and the
//! tools that need the agent itself (`memory`, `task`, the MCP tools) are
//! handed to it through the [`AgentTools`] trait, which the agent implements.
//!
//! [`execute`] runs one tool call and always returns a [`ToolOutput`]: bad
//! arguments, unknown tools, I/O errors, denials and cancellation become an
//! error result whose text tells the model what to do next; it never panics
//! and never returns early without a result, so every tool call in a session
//! gets exactly one tool message.
//!
//! The parts every tool shares live beside the tools: `definitions` (the
//! schemas offered to the model), `args` (argument parsing), `approval`
//! (what needs a yes and the policy that decides), `path` (resolving a path
//! against the project root, confinement); this file holds the context, the
//! result and error types, and the dispatch.
//!
//! Invariants:
//! - Paths are resolved against the project root, with `..` and symlinks
//!   resolved before the root check; anything outside needs approval, and so
//!   does every `shell` command. The [`Approver`] (chosen by the frontend)
//!   decides; a denial is returned to the model as the tool result.
//! - `write_file` / `edit_file` ask before every change (inside the root:
//!   `tools.write` / `--allow-write`; outside, and `.git/` or `eonyx.json`
//!   inside: only a user can say yes), showing the diff, and write atomically.
//! - Every `shell` command is spawned by `shell::run_command`, confined by
//!   [`ToolContext::sandbox`] (docs/using-tools.md, section "Sandbox").
//! - Output is returned whole (truncation for the model happens in the view
//!   layer); only absurd sizes are capped, always with a visible note.
//! - A `shell` result's first line is exactly `exit status: N`,
//!   `timed out after Ns` or `interrupted`; the output follows.
//! - Walking tools (`list_dir`, `grep`) respect `.gitignore` and skip `.git`.

mod approval;
mod args;
pub mod check;
pub mod cmdline;
mod definitions;
pub mod differential;
mod foreground;
mod grep;
pub mod jobs;
mod list_dir;
pub mod memory;
mod path;
pub mod permissions;
mod plan;
mod read_file;
mod recall;
mod shell;
pub mod skill;
pub mod task;
mod web_fetch;
mod write;

use std::time::Duration;

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_core::provider::{BoxFuture, CancellationToken};
use eonyx_core::{ToolCall, ToolName};

pub use approval::{
    AllowAll, ApprovalKind, Approver, Decision, DenyAll, McpPolicy, MustAsk, Permissions,
    PolicyApprover, TaskLabel, WebFetchVerdict, approve, approve_read, rule_verdict,
    web_fetch_verdict,
};
pub(crate) use args::{Count, parse_args};
pub use definitions::{definitions, enabled_definitions};
pub use list_dir::walker;
pub(crate) use path::resolve_approved;
pub use path::{Resolved, display_path, resolve_path};
pub use plan::{GoalUpdate, goal_update_definition, parse_goal_update, plan_definition};
pub use recall::RecallSource;
pub use shell::{Tee, run_command};
pub use skill::{NoSkills, Skill, SkillSource};
pub use web_fetch::web_denied;
pub use write::{FileChange, SeenFiles, WRITE_DENIED};

/// The built-in tools [`execute`] runs, in the order of [`definitions`]
/// (`memory` needs the session's memory store and `task` the whole agent:
/// the agent runs those two).
pub const TOOLS: [ToolName; 9] = match ToolName::ALL.first_chunk() {
    Some(tools) => *tools,
    None => panic!("ToolName::ALL lists memory and task after these"),
};

/// The result text of a denied `shell` call.
pub const SHELL_DENIED: &str = "denied: shell commands need approval; run eonyx with --allow-shell or set tools.shell = \"allow\"";

/// The result text of a call cancelled by the user (Ctrl-C).
pub const INTERRUPTED: &str = eonyx_core::tool::INTERRUPTED;

/// Default guard for `read_file`: at most this many bytes of a file are read.
pub const DEFAULT_MAX_READ_BYTES: u64 = 1024 * 1024;

/// What the tools need from the session.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Relative paths are relative to this directory; `shell` runs in it.
    pub project_root: Utf8PathBuf,
    /// `tools.shell_timeout_secs`.
    pub shell_timeout: Duration,
    /// `read_file` reads at most this many bytes and says so when it stops.
    pub max_read_bytes: u64,
    /// Environment variables removed from `shell`'s child (the provider
    /// key variables, `eonyx_config::secrets::key_env_vars`).
    pub hidden_env: Vec<String>,
    /// `tools.max_edit_bytes`: larger files are not edited.
    pub max_edit_bytes: u64,
    /// Files read or written in this session, for the stale-edit warning.
    pub seen: SeenFiles,
    /// Where `recall` searches; `None` when `tools.recall = false`.
    pub recall: Option<RecallSource>,
    /// The skills `skill` reads (found when the session started).
    pub skills: Arc<dyn SkillSource>,
    /// How `shell` commands are confined (docs/using-tools.md, section "Sandbox").
    pub sandbox: Arc<eonyx_sandbox::Sandbox>,
    /// Where `write_file` / `edit_file` keep what `/rewind` needs; `None`
    /// records no `undo` (unit tests).
    pub undo: Option<UndoStore>,
    /// The session's background jobs (docs/tools.md#jobs); `None`: `shell`
    /// refuses `"background": true`.
    pub jobs: Option<Arc<jobs::Jobs>>,
    /// The session's network namespace, shared by its confined commands
    /// and jobs when the network is off (docs/tools.md#one-network-per-session);
    /// made by the first such command. A task's child shares its parent's.
    pub net: Arc<eonyx_sandbox::SessionNet>,
    /// The client's file system (`eonyx acp`), read and written by
    /// `read_file`, `write_file` and `edit_file` instead of the disk;
    /// `None`: the disk.
    pub files: Option<Arc<dyn ClientFiles>>,
    /// `web_fetch`'s fetcher (its options and its cache), shared with a
    /// task's children.
    pub web: Arc<eonyx_web::Fetcher>,
    /// `tools.output_cap_bytes`: `web_fetch` cuts its result to it (the
    /// session keeps what was sent).
    pub output_cap_bytes: u64,
}

/// A file system the file tools use instead of the disk: an ACP client's,
/// so the editor's unsaved buffers count (docs/acp.md#client-file-system).
/// Only reading and writing text go through it: resolving paths, approval,
/// the diff, the undo records and the compaction facts are as for the disk.
pub trait ClientFiles: Send + Sync + std::fmt::Debug {
    /// The text of the file at `path` (absolute), as the client has it.
    fn read_text<'a>(&'a self, path: &'a camino::Utf8Path)
    -> BoxFuture<'a, Result<String, String>>;
    /// Replace the text of the file at `path` (absolute).
    fn write_text<'a>(
        &'a self,
        path: &'a camino::Utf8Path,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// The session's file history and what must never go into it
/// (docs/session-format.md#file-history).
#[derive(Debug, Clone)]
pub struct UndoStore {
    pub history: eonyx_store::FileHistory,
    /// Values of the configured API keys: a content holding one is not
    /// kept, and its change is marked as not undoable.
    pub secrets: Arc<Vec<String>>,
}

impl ToolContext {
    /// A context with the config's shell timeout, the default read guard
    /// and the default sandbox (workspace-write; no Landlock helper, so
    /// bubblewrap or none).
    pub fn new(project_root: impl Into<Utf8PathBuf>, shell_timeout: Duration) -> Self {
        let project_root = project_root.into();
        let sandbox = eonyx_sandbox::Sandbox::new(
            eonyx_core::config::SandboxConfig::default(),
            &project_root,
            &eonyx_core::paths::Env::from_process(),
            None,
        );
        Self {
            sandbox: Arc::new(sandbox),
            project_root,
            shell_timeout,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            hidden_env: eonyx_core::config::WELL_KNOWN_KEY_VARS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            max_edit_bytes: DEFAULT_MAX_READ_BYTES,
            seen: SeenFiles::default(),
            recall: None,
            skills: Arc::new(NoSkills),
            undo: None,
            jobs: None,
            net: Arc::default(),
            files: None,
            web: Arc::new(eonyx_web::Fetcher::default()),
            output_cap_bytes: eonyx_core::config::ToolsConfig::default().output_cap_bytes,
        }
    }
}

/// The result of one tool call, as stored in the session and shown to the
/// model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    /// The file a write tool changed (for the diff and the event).
    pub change: Option<FileChange>,
    /// Something else the frontend reports on its own (a stderr line, a
    /// JSON event), besides the result.
    pub event: Option<ToolEvent>,
    /// How to undo the file change this call made (stored on its result).
    pub undo: Option<eonyx_core::Undo>,
}

/// What a tool did that the user is told about directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolEvent {
    /// A `recall` search ran.
    Recall {
        query: String,
        scope: &'static str,
        /// Every match, including those past the limit.
        matches: u64,
        /// Matches returned to the model.
        returned: u64,
    },
    /// A `web_fetch` call completed (docs/cli.md#json-events).
    WebFetch {
        /// The final URL (after same-host redirects).
        url: String,
        status: u16,
        /// Bytes of the body read.
        bytes: u64,
        /// Served from the 15-minute cache.
        cached: bool,
    },
    /// A warning for the user (stderr, a `warning` JSON event), e.g. that
    /// commands run unconfined because no sandbox backend works.
    Warning(String),
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
            change: None,
            event: None,
            undo: None,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            change: None,
            event: None,
            undo: None,
        }
    }

    /// The result for a call that was cancelled before or while it ran.
    pub fn interrupted() -> Self {
        Self::error(format!("{INTERRUPTED}: the user cancelled this tool call"))
    }
}

/// Failures of a tool, turned into the error text the model sees.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {message}")]
    BadArguments { tool: ToolName, message: String },
    #[error("{0}")]
    Denied(String),
    #[error("{INTERRUPTED}: the user cancelled this tool call")]
    Interrupted,
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
}

impl ToolError {
    /// Arguments that parse but make no sense (`invalid arguments for TOOL: …`).
    pub fn bad_args(tool: ToolName, message: impl Into<String>) -> Self {
        ToolError::BadArguments {
            tool,
            message: message.into(),
        }
    }

    pub fn io(what: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

/// The tools the agent runs itself, because they need more than a
/// [`ToolContext`]: `memory` (the session's memory store), `task` (a child
/// agent) and the MCP tools (`mcp_describe`, `mcp_call`, `mcp__…`). The
/// agent implements this; [`execute`] hands it every call that is not one
/// of [`TOOLS`].
pub trait AgentTools: Send {
    /// Runs `call` when the agent has that tool in this session; `None`
    /// when it does not (memory off, no MCP servers, a name nobody knows),
    /// and [`execute`] answers "unknown tool".
    fn run<'a>(
        &'a mut self,
        call: &'a ToolCall,
        cancel: &'a CancellationToken,
    ) -> Option<BoxFuture<'a, ToolOutput>>;
}

/// No tools of the agent's own (unit tests, benches).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAgentTools;

impl AgentTools for NoAgentTools {
    fn run<'a>(
        &'a mut self,
        _call: &'a ToolCall,
        _cancel: &'a CancellationToken,
    ) -> Option<BoxFuture<'a, ToolOutput>> {
        None
    }
}

/// Runs one call: a built-in tool here, `memory`, `task` and the MCP tools
/// through `agent`. Never panics; bad arguments, an unknown tool, I/O
/// errors, a denial and cancellation become an error [`ToolOutput`] with a
/// message the model can act on.
pub async fn execute(
    call: &ToolCall,
    ctx: &ToolContext,
    approver: &dyn Approver,
    agent: &mut dyn AgentTools,
    cancel: &CancellationToken,
) -> ToolOutput {
    if cancel.is_cancelled() {
        return ToolOutput::interrupted();
    }
    let a = &call.arguments;
    let env = CallEnv {
        ctx,
        approver,
        cancel,
    };
    let result = match ToolName::parse(&call.name) {
        Some(ToolName::ReadFile) => read_file::run(a, env).await,
        Some(ToolName::ListDir) => list_dir::run(a, env).await,
        Some(ToolName::Grep) => grep::run(a, env).await,
        Some(ToolName::Shell) => shell::run(a, env).await,
        Some(ToolName::WriteFile) => write::write_file(a, env).await,
        Some(ToolName::EditFile) => write::edit_file(a, env).await,
        Some(ToolName::Recall) => recall::run(a, ctx, cancel).await,
        Some(ToolName::Skill) => skill::run(a, &ctx.skills, cancel).await,
        Some(ToolName::WebFetch) => web_fetch::run(a, env).await,
        Some(ToolName::JobOutput) => match &ctx.jobs {
            Some(jobs) => jobs.output(a, cancel).await,
            None => Err(no_jobs()),
        },
        Some(ToolName::JobStop) => match &ctx.jobs {
            Some(jobs) => jobs.stop_tool(a).await,
            None => Err(no_jobs()),
        },
        // Offered only with memory on, tasks allowed or MCP servers, and
        // then run by the agent.
        Some(
            ToolName::Memory
            | ToolName::Task
            | ToolName::Plan
            | ToolName::GoalUpdate
            | ToolName::McpDescribe
            | ToolName::McpCall,
        )
        | None => match agent.run(call, cancel) {
            Some(run) => return run.await,
            None => Err(ToolError::Usage(format!(
                "unknown tool `{}`; available tools: {}",
                call.name,
                TOOLS.map(ToolName::as_str).join(", ")
            ))),
        },
    };
    match result {
        Ok(out) => out,
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// The error of a job tool in a session without jobs.
fn no_jobs() -> ToolError {
    ToolError::Usage("no background jobs in this session".into())
}

/// What a call that may touch files or ask for approval runs with, besides
/// its arguments.
#[derive(Clone, Copy)]
pub(crate) struct CallEnv<'a> {
    pub ctx: &'a ToolContext,
    pub approver: &'a dyn Approver,
    pub cancel: &'a CancellationToken,
}

/// Runs blocking file work off the async threads, returning early (the
/// work sees `cancel` and stops on its own) when cancelled.
pub(crate) async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let handle = tokio::task::spawn_blocking(work);
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Interrupted),
        joined = handle => joined.map_err(|e| ToolError::Usage(format!("the tool failed unexpectedly: {e}")))?,
    }
}

/// The metadata of `path` (shown as `shown`): when it does not exist, an
/// error that says so and what to do (`missing`); any other failure is
/// `what` (e.g. `cannot read`) with the I/O error.
pub(crate) fn metadata(
    path: &camino::Utf8Path,
    shown: &str,
    what: &'static str,
    missing: &str,
) -> Result<std::fs::Metadata, ToolError> {
    path.metadata().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::Usage(format!("{shown}: {missing}")),
        _ => ToolError::io(what, shown, e),
    })
}

/// Whether the first bytes of a file look binary (a NUL byte, as git decides).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    head.contains(&0)
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn unknown_tool_names_the_available_ones() {
        let f = Fixture::new();
        let out = f.run("apply_patch", json!({})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "unknown tool `apply_patch`; available tools: read_file, list_dir, grep, shell, write_file, edit_file, recall, skill, web_fetch"
        );
    }

    #[tokio::test]
    async fn memory_is_left_to_the_agent() {
        let f = Fixture::new();
        let out = f
            .run(
                ToolName::Memory.as_str(),
                json!({"action": "add", "text": "x"}),
            )
            .await;
        assert!(out.is_error);
        assert!(
            out.text
                .starts_with("unknown tool `memory`; available tools: read_file,"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn a_cancelled_call_is_interrupted_without_running() {
        let f = Fixture::new();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let call = ToolCall {
            id: "c".into(),
            name: "shell".into(),
            arguments: json!({"command": "touch ran"}),
        };
        let out = execute(&call, &f.ctx, &AllowAll, &mut NoAgentTools, &cancel).await;
        assert!(out.is_error);
        assert!(out.text.starts_with("interrupted"));
        assert!(!f.root().join("ran").exists());
    }
}
