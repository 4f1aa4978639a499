//! The built-in tools: `read_file`, `list_dir`, `grep`, `shell`, `write_file`
//! and `edit_file` (docs/tools.md).
//!
//! [`execute`] runs one tool call and always returns a [`ToolOutput`]: bad
//! arguments, unknown tools, I/O errors, denials and cancellation become an
//! error result whose text tells the model what to do next; it never panics
//! and never returns early without a result, so every tool call in a session
//! gets exactly one tool message.
//!
//! Over 600 lines only with its unit tests: the code (dispatch, argument
//! parsing, approval and the helpers every tool shares) is ~600 lines.
//!
//! Invariants:
//! - Paths are resolved against the project root, with `..` and symlinks
//!   resolved before the root check; anything outside needs approval, and so
//!   does every `shell` command. The [`Approver`] (chosen by the frontend)
//!   decides; a denial is returned to the model as the tool result.
//! - `write_file` / `edit_file` ask before every change (inside the root:
//!   `tools.write` / `--allow-write`; outside: only a user can say yes),
//!   showing the diff, and write atomically.
//! - Output is returned whole (truncation for the model happens in the view
//!   layer); only absurd sizes are capped, always with a visible note.
//! - A `shell` result's first line is exactly `exit status: N`,
//!   `timed out after Ns` or `interrupted`; the output follows.
//! - Walking tools (`list_dir`, `grep`) respect `.gitignore` and skip `.git`.

mod grep;
mod list_dir;
pub mod memory;
mod path;
mod read_file;
mod recall;
mod shell;
pub mod skill;
mod write;

use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_config::{ShellPolicy, WritePolicy};
use eonyx_core::provider::{BoxFuture, CancellationToken};
use eonyx_core::{ToolCall, ToolDef, ToolName};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub use path::{Resolved, resolve_path};
pub use recall::RecallSource;
pub use write::{FileChange, SeenFiles, WRITE_DENIED};

/// The built-in tools, in the order of [`definitions`].
pub const TOOLS: [ToolName; 8] = ToolName::ALL;

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
    pub skills: std::sync::Arc<eonyx_prompt::Skills>,
}

impl ToolContext {
    /// A context with the config's shell timeout and the default read guard.
    pub fn new(project_root: impl Into<Utf8PathBuf>, shell_timeout: Duration) -> Self {
        Self {
            project_root: project_root.into(),
            shell_timeout,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            hidden_env: eonyx_config::secrets::WELL_KNOWN_KEY_VARS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
            max_edit_bytes: DEFAULT_MAX_READ_BYTES,
            seen: SeenFiles::default(),
            recall: None,
            skills: Default::default(),
        }
    }
}

/// Something that needs the user's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalKind {
    /// Any `shell` command.
    Shell { command: String },
    /// A file tool touching a path outside the project root (after `..` and
    /// symlinks are resolved).
    OutsideProject { tool: String, path: Utf8PathBuf },
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
    },
}

impl ApprovalKind {
    /// Stable class name; an "always" answer applies to every request of
    /// the same class for the rest of the session.
    pub fn class(&self) -> &'static str {
        match self {
            ApprovalKind::Shell { .. } => "shell",
            ApprovalKind::OutsideProject { .. } => "outside_project",
            ApprovalKind::Write { outside: false, .. } => "write",
            ApprovalKind::Write { outside: true, .. } => "write_outside_project",
        }
    }

    /// One line for an approval prompt, e.g. `run shell command: ls -la`.
    pub fn describe(&self) -> String {
        match self {
            ApprovalKind::Shell { command } => format!("run shell command: {command}"),
            ApprovalKind::OutsideProject { tool, path } => {
                format!("{tool} outside the project: {path}")
            }
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
/// denied, whatever the flags. A flag given on the command line wins over
/// the config file.
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
            let (policy, flag) = match kind {
                ApprovalKind::Write { outside: true, .. } => {
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
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
            change: None,
            event: None,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            change: None,
            event: None,
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
    BadArguments { tool: &'static str, message: String },
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
    pub fn io(what: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}

/// JSON Schemas and descriptions of the built-in tools.
pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "read_file".into(),
            description: "Read a text file. Output lines are prefixed with their line number \
                          and a tab. Use offset and limit to read part of a large file; a note \
                          at the end says how to continue. Binary files are refused. Relative \
                          paths are relative to the project root."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "File to read, relative to the project root or absolute." },
                    "offset": { "type": "integer", "minimum": 1, "description": "First line to show (1-based, default 1)." },
                    "limit": { "type": "integer", "minimum": 1, "description": "Maximum number of lines to show (default: to the end of the file)." }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "list_dir".into(),
            description: "List a directory, sorted by name; directories end with `/`. Files \
                          ignored by .gitignore and the .git directory are left out. With depth \
                          > 1, entries of subdirectories are listed under them as relative paths."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Directory to list, relative to the project root or absolute (default: the project root)." },
                    "depth": { "type": "integer", "minimum": 1, "maximum": list_dir::MAX_DEPTH, "description": "How many levels to descend (default 1: only direct entries)." }
                },
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "grep".into(),
            description: "Search file contents with a regular expression (Rust regex syntax). \
                          Respects .gitignore and skips binary files. Prints one line per match \
                          as `path:line: text`, paths relative to the project root. Stops after \
                          a fixed number of matches with a note; narrow the path or glob then."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "description": "Regular expression to search for, e.g. `fn \\w+_test`." },
                    "path": { "type": "string", "description": "File or directory to search (default: the project root)." },
                    "glob": { "type": "string", "description": "Only search files whose path matches this glob, e.g. `*.rs` or `src/**/*.toml`." },
                    "case_insensitive": { "type": "boolean", "description": "Match without regard to case (default false)." }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "shell".into(),
            description: "Run a command with `sh -c` in the project root, without stdin. Needs \
                          the user's approval. The result's first line is `exit status: N` (or \
                          `timed out after Ns`), followed by stdout and stderr combined. Long \
                          running commands are killed at the timeout."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "description": "The shell command line to run." }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "write_file".into(),
            description: "Create or replace a file with exactly `content`; parent directories \
                          are created. Needs approval. Prefer edit_file for changes."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "content": { "type": "string" }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "edit_file".into(),
            description: "Replace `old_string` with `new_string` in a file. old_string must \
                          match exactly once (copy it from read_file, without line numbers) \
                          unless replace_all. Empty old_string creates a new file. Needs approval."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "old_string": { "type": "string" },
                    "new_string": { "type": "string" },
                    "replace_all": { "type": "boolean" }
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: "recall".into(),
            description: "Fetch earlier messages verbatim from the session files, including \
                          what a summary left out. All words must match (case-insensitive); \
                          \"quoted phrases\" match as written."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" },
                    "scope": { "type": "string", "enum": ["session", "project"], "description": "session (default): this session; project: every session of this project." },
                    "limit": { "type": "integer", "minimum": 1, "description": "Messages to return (default 5)." }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        },
        skill::definition(),
    ]
}

/// The definitions of the tools `tools` leaves on.
pub fn enabled_definitions(tools: &eonyx_config::ToolsConfig) -> Vec<ToolDef> {
    definitions()
        .into_iter()
        .filter(|d| tools.recall || d.name != ToolName::Recall.as_str())
        .collect()
}

/// Runs one call. Never panics; bad arguments, an unknown tool, I/O errors,
/// a denial and cancellation become an error [`ToolOutput`] with a message
/// the model can act on.
pub async fn execute(
    call: &ToolCall,
    ctx: &ToolContext,
    approver: &dyn Approver,
    cancel: &CancellationToken,
) -> ToolOutput {
    if cancel.is_cancelled() {
        return ToolOutput::interrupted();
    }
    let a = &call.arguments;
    let result = match ToolName::parse(&call.name) {
        Some(ToolName::ReadFile) => read_file::run(a, ctx, approver, cancel).await,
        Some(ToolName::ListDir) => list_dir::run(a, ctx, approver, cancel).await,
        Some(ToolName::Grep) => grep::run(a, ctx, approver, cancel).await,
        Some(ToolName::Shell) => shell::run(a, ctx, approver, cancel).await,
        Some(ToolName::WriteFile) => write::write_file(a, ctx, approver, cancel).await,
        Some(ToolName::EditFile) => write::edit_file(a, ctx, approver, cancel).await,
        Some(ToolName::Recall) => recall::run(a, ctx, cancel).await,
        Some(ToolName::Skill) => skill::run(a, &ctx.skills, cancel).await,
        None => Err(ToolError::Usage(format!(
            "unknown tool `{}`; available tools: {}",
            call.name,
            TOOLS.map(ToolName::as_str).join(", ")
        ))),
    };
    match result {
        Ok(out) => out,
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// Parses a call's arguments into `T`, with errors that name the tool and
/// say what was expected.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: &'static str,
    args: &Value,
) -> Result<T, ToolError> {
    let value = match args {
        Value::Null => Value::Object(Default::default()),
        Value::String(s) => {
            return Err(ToolError::BadArguments {
                tool,
                message: format!(
                    "the arguments are not a JSON object ({}); send them as a JSON object",
                    eonyx_core::text::ellipsize(s, 200)
                ),
            });
        }
        v => v.clone(),
    };
    serde_json::from_value(value).map_err(|e| ToolError::BadArguments {
        tool,
        message: e.to_string(),
    })
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

/// Resolves `raw` against the project root and, when it lies outside, asks
/// for approval on behalf of `tool`.
pub(crate) async fn resolve_approved(
    tool: &'static str,
    raw: &str,
    ctx: &ToolContext,
    approver: &dyn Approver,
    cancel: &CancellationToken,
) -> Result<Resolved, ToolError> {
    let resolved = resolve_path(&ctx.project_root, raw)?;
    if !resolved.inside {
        let kind = ApprovalKind::OutsideProject {
            tool: tool.to_owned(),
            path: resolved.path.clone(),
        };
        if approve(approver, &kind, cancel).await? == Decision::Deny {
            return Err(ToolError::Denied(format!(
                "denied: {} is outside the project root {}; paths outside the project need \
                 approval (run eonyx with --allow-shell or set tools.shell = \"allow\"); use a \
                 path inside the project instead",
                resolved.path, resolved.root
            )));
        }
    }
    Ok(resolved)
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

/// Whether the first bytes of a file look binary (a NUL byte, as git decides).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    head.contains(&0)
}

/// A path for output: relative to the project root when inside it.
pub(crate) fn display_path(root: &Utf8Path, path: &Utf8Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string(),
        Err(_) => path.to_string(),
    }
}

/// A non-negative integer that models may also send as a string (`"10"`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub(crate) enum Count {
    Number(u64),
    Text(#[serde(deserialize_with = "count_from_str")] u64),
}

impl Count {
    pub(crate) fn get(self) -> u64 {
        match self {
            Count::Number(n) | Count::Text(n) => n,
        }
    }
}

fn count_from_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let s = String::deserialize(d)?;
    s.trim().parse().map_err(serde::de::Error::custom)
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub(crate) struct Fixture {
        pub dir: tempfile::TempDir,
        pub ctx: ToolContext,
    }

    impl Fixture {
        pub fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = Utf8PathBuf::from_path_buf(dir.path().join("project")).unwrap();
            std::fs::create_dir(&root).unwrap();
            let ctx = ToolContext::new(root, Duration::from_secs(10));
            Self { dir, ctx }
        }

        pub fn root(&self) -> &Utf8Path {
            &self.ctx.project_root
        }

        /// A directory next to the project (outside it).
        pub fn outside(&self) -> Utf8PathBuf {
            Utf8PathBuf::from_path_buf(self.dir.path().to_path_buf()).unwrap()
        }

        pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
            let p = self.root().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, contents).unwrap();
        }

        pub async fn run(&self, name: &str, args: Value) -> ToolOutput {
            self.run_with(name, args, &AllowAll).await
        }

        pub async fn run_with(
            &self,
            name: &str,
            args: Value,
            approver: &dyn Approver,
        ) -> ToolOutput {
            let call = ToolCall {
                id: "call_1".into(),
                name: name.into(),
                arguments: args,
            };
            execute(&call, &self.ctx, approver, &CancellationToken::new()).await
        }
    }

    /// Records what it was asked, answers `answer`.
    pub(crate) struct Recorder {
        pub answer: Decision,
        pub asked: std::sync::Mutex<Vec<ApprovalKind>>,
    }

    impl Recorder {
        pub fn new(answer: Decision) -> Self {
            Self {
                answer,
                asked: Default::default(),
            }
        }

        pub fn asked(&self) -> Vec<ApprovalKind> {
            self.asked.lock().unwrap().clone()
        }
    }

    impl Approver for Recorder {
        fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
            self.asked.lock().unwrap().push(kind.clone());
            Box::pin(async move { self.answer })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn unknown_tool_names_the_available_ones() {
        let f = Fixture::new();
        let out = f.run("apply_patch", json!({})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "unknown tool `apply_patch`; available tools: read_file, list_dir, grep, shell, write_file, edit_file, recall, skill"
        );
    }

    #[tokio::test]
    async fn arguments_that_are_not_json_are_reported() {
        let f = Fixture::new();
        let out = f.run("read_file", json!("{path: oops")).await;
        assert!(out.is_error);
        assert!(
            out.text.starts_with(
                "invalid arguments for read_file: the arguments are not a JSON object"
            ),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn missing_and_unknown_fields_are_named() {
        let f = Fixture::new();
        let out = f.run("read_file", json!({})).await;
        assert!(out.is_error);
        assert!(out.text.contains("missing field `path`"), "{}", out.text);
        let out = f.run("read_file", json!({"path": "a", "lines": 3})).await;
        assert!(out.is_error);
        assert!(out.text.contains("unknown field `lines`"), "{}", out.text);
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
        let out = execute(&call, &f.ctx, &AllowAll, &cancel).await;
        assert!(out.is_error);
        assert!(out.text.starts_with("interrupted"));
        assert!(!f.root().join("ran").exists());
    }

    #[test]
    fn definitions_cover_every_tool_with_object_schemas() {
        let defs = definitions();
        let names: Vec<_> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, TOOLS.map(ToolName::as_str));
        for d in &defs {
            assert_eq!(d.parameters["type"], "object", "{}", d.name);
            assert!(d.description.len() > 40, "{}", d.name);
            assert_eq!(
                ToolName::parse(&d.name).map(ToolName::as_str),
                Some(d.name.as_str())
            );
            for req in d.parameters["required"].as_array().into_iter().flatten() {
                let req = req.as_str().unwrap();
                assert!(
                    d.parameters["properties"].get(req).is_some(),
                    "{}: {req}",
                    d.name
                );
            }
        }
    }

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

    #[test]
    fn approval_kinds_describe_themselves() {
        let k = ApprovalKind::OutsideProject {
            tool: "read_file".into(),
            path: "/etc/passwd".into(),
        };
        assert_eq!(k.class(), "outside_project");
        assert_eq!(k.describe(), "read_file outside the project: /etc/passwd");
        let k = ApprovalKind::Shell {
            command: "cargo test".into(),
        };
        assert_eq!(k.class(), "shell");
        assert_eq!(k.describe(), "run shell command: cargo test");
    }

    #[test]
    fn counts_accept_numbers_and_numeric_strings() {
        #[derive(Deserialize)]
        struct A {
            n: Count,
        }
        let a: A = serde_json::from_value(json!({"n": 7})).unwrap();
        assert_eq!(a.n.get(), 7);
        let a: A = serde_json::from_value(json!({"n": " 12 "})).unwrap();
        assert_eq!(a.n.get(), 12);
        assert!(serde_json::from_value::<A>(json!({"n": "many"})).is_err());
        assert!(serde_json::from_value::<A>(json!({"n": -1})).is_err());
    }
}
