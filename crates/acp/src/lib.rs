//! `eonyx acp`: eonyx as an Agent Client Protocol agent (docs/acp.md), the
//! second frontend beside the REPL. Editors (Zed, JetBrains, Neovim) and
//! headless clients (`acpx`) drive it with JSON-RPC on stdin/stdout; the
//! protocol is the `agent-client-protocol` crate's, the work is
//! `eonyx-agent`'s.
//!
//! The code is split by concern:
//! - `server`: the connection, its handlers and the open sessions;
//! - `session`: one client session: its agent, its turn, cancel, modes;
//! - `updates`: agent events as `session/update` notifications (tool
//!   kinds, titles, locations, diffs, compactions);
//! - `replay`: a loaded session's visible history as updates;
//! - `prompt`: the client's content blocks as one user message;
//! - `approval`: `session/request_permission` and the modes;
//! - `commands`: slash commands and skills (`available_commands_update`);
//! - `files`: the client's file system for the file tools;
//! - `fuzzing`: incoming lines read as the server reads them, for the
//!   fuzz target `acp_incoming` (hidden).
//!
//! Invariants:
//! - stdout carries protocol messages only: diagnostics go to stderr.
//! - No handler waits on the agent inside the dispatch loop: opening a
//!   session and running a turn happen in tasks of their own, so a slow
//!   session never blocks another or the protocol.
//! - Every turn ends with its session file complete, cancelled or not,
//!   and stdin closing cancels the running turns and waits for them.

mod approval;
mod commands;
mod diag;
mod files;
#[doc(hidden)]
pub mod fuzzing;
mod mcp;
mod prompt;
mod replay;
mod server;
mod session;
mod updates;

pub use server::serve;

/// What `eonyx acp` takes from the command line: the same global flags as
/// every command.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// `--model KEY`.
    pub model: Option<String>,
    /// `--profile NAME`.
    pub profile: Option<String>,
    /// `--allow-shell`, `--allow-write`, `--allow-mcp`.
    pub permissions: eonyx_agent::tools::Permissions,
    /// The `eonyx` executable (the Landlock sandbox helper).
    pub sandbox_helper: Option<std::path::PathBuf>,
}

pub(crate) use diag::diag;

/// A std mutex's guard, also after a panic elsewhere poisoned it (the
/// data is plain state, valid at every point).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
