//! The built-in tools: `read_file`, `list_dir`, `grep` and `shell` (SPEC §9).
//!
//! [`execute`] runs one tool call and always returns a [`ToolOutput`]: bad
//! arguments, unknown tools, I/O errors, denials and cancellation become an
//! error result whose text tells the model what to do next; it never panics
//! and never returns early without a result, so every tool call in a session
//! gets exactly one tool message.
//!
//! Invariants:
//! - Paths are resolved against the project root, with `..` and symlinks
//!   resolved before the root check; anything outside needs approval, and so
//!   does every `shell` command. The [`Approver`] (chosen by the frontend)
//!   decides; a denial is returned to the model as the tool result.
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
mod shell;

use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::ShellPolicy;
use eonyx_core::provider::{BoxFuture, CancellationToken};
use eonyx_core::{ToolCall, ToolDef};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub use path::{Resolved, resolve_path};

/// Names of the built-in tools, in the order of [`definitions`].
pub const TOOL_NAMES: [&str; 4] = ["read_file", "list_dir", "grep", "shell"];

/// The result text of a denied `shell` call.
pub const SHELL_DENIED: &str = "denied: shell commands need approval; run eonyx with --allow-shell or set tools.shell = \"allow\"";

/// The result text of a call cancelled by the user (Ctrl-C).
pub const INTERRUPTED: &str = "interrupted";

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
}

impl ToolContext {
    /// A context with the config's shell timeout and the default read guard.
    pub fn new(project_root: impl Into<Utf8PathBuf>, shell_timeout: Duration) -> Self {
        Self {
            project_root: project_root.into(),
            shell_timeout,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
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
}

impl ApprovalKind {
    /// Stable class name; an "always" answer applies to every request of
    /// the same class for the rest of the session.
    pub fn class(&self) -> &'static str {
        match self {
            ApprovalKind::Shell { .. } => "shell",
            ApprovalKind::OutsideProject { .. } => "outside_project",
        }
    }

    /// One line for an approval prompt, e.g. `run shell command: ls -la`.
    pub fn describe(&self) -> String {
        match self {
            ApprovalKind::Shell { command } => format!("run shell command: {command}"),
            ApprovalKind::OutsideProject { tool, path } => {
                format!("{tool} outside the project: {path}")
            }
        }
    }
}

/// An approver's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

/// Decides whether a shell command or an outside path may be used.
///
/// The frontend decides: the REPL asks y/n/always (always = for the rest of
/// the session, per [`ApprovalKind::class`]); batch and `run` deny unless
/// `--allow-shell` or `tools.shell = "allow"` (see [`PolicyApprover`]).
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

/// SPEC §9 semantics: `--allow-shell` (`allow_flag`) or `tools.shell =
/// "allow"` allow; `tools.shell = "deny"` denies; `"ask"` asks `ask` (the
/// REPL's prompt) and denies when there is no one to ask (batch, `run`).
/// The flag given on the command line wins over the config file.
pub struct PolicyApprover {
    pub policy: ShellPolicy,
    pub allow_flag: bool,
    pub ask: Option<Box<dyn Approver>>,
}

impl Approver for PolicyApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            if self.allow_flag {
                return Decision::Allow;
            }
            match (self.policy, &self.ask) {
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
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
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
    ]
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
    let result = match call.name.as_str() {
        "read_file" => read_file::run(&call.arguments, ctx, approver, cancel).await,
        "list_dir" => list_dir::run(&call.arguments, ctx, approver, cancel).await,
        "grep" => grep::run(&call.arguments, ctx, approver, cancel).await,
        "shell" => shell::run(&call.arguments, ctx, approver, cancel).await,
        other => Err(ToolError::Usage(format!(
            "unknown tool `{other}`; available tools: {}",
            TOOL_NAMES.join(", ")
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
                    preview(s, 200)
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

/// At most `max` characters of `s`, with `…` when cut.
pub(crate) fn preview(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
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
        let out = f.run("write_file", json!({})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "unknown tool `write_file`; available tools: read_file, list_dir, grep, shell"
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
        assert_eq!(names, TOOL_NAMES);
        for d in &defs {
            assert_eq!(d.parameters["type"], "object", "{}", d.name);
            assert!(d.description.len() > 40, "{}", d.name);
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
        let decide = |policy, allow_flag, ask: Option<Box<dyn Approver>>| {
            let a = PolicyApprover {
                policy,
                allow_flag,
                ask,
            };
            let kind = shell.clone();
            async move { a.decide(&kind).await }
        };
        // batch/run: ask without a prompt denies; the flag or config allows.
        assert_eq!(decide(ShellPolicy::Ask, false, None).await, Decision::Deny);
        assert_eq!(decide(ShellPolicy::Ask, true, None).await, Decision::Allow);
        assert_eq!(
            decide(ShellPolicy::Allow, false, None).await,
            Decision::Allow
        );
        assert_eq!(
            decide(ShellPolicy::Deny, false, Some(Box::new(AllowAll))).await,
            Decision::Deny
        );
        // REPL: ask delegates to the prompt.
        assert_eq!(
            decide(ShellPolicy::Ask, false, Some(Box::new(AllowAll))).await,
            Decision::Allow
        );
        assert_eq!(
            decide(ShellPolicy::Ask, false, Some(Box::new(DenyAll))).await,
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
