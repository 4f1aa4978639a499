//! Our own small interface to one MCP server ([`McpClient`]) and to
//! starting one ([`Connector`]). Everything above this crate talks to MCP
//! through these two traits only, so rmcp (`sdk.rs`) stays in one file and
//! tests can stand in for a server.

use std::sync::Arc;

use eonyx_core::McpServerConfig;
use eonyx_core::provider::BoxFuture;
use serde_json::{Map, Value};

/// One tool as a server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server's own name for it.
    pub name: String,
    pub description: String,
    /// Its `inputSchema` (a JSON Schema object).
    pub input_schema: Value,
}

/// What a tool call returned, as text (docs/mcp.md#results).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutput {
    pub text: String,
    /// The server set `isError`.
    pub is_error: bool,
}

/// Why talking to a server failed. The messages name no server; the caller
/// ([`crate::Servers`]) says which one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or did not complete the handshake.
    #[error("{0}")]
    Start(String),
    /// The connection is gone: the process exited, or the HTTP session
    /// ended. `detail` says how (exit status, the last lines of stderr).
    #[error("the connection closed{detail}")]
    Closed { detail: String },
    /// The server answered the request with a JSON-RPC error.
    #[error("the server answered with an error: {0}")]
    Server(String),
    /// Anything else on the way (a malformed reply, an HTTP failure).
    #[error("{0}")]
    Transport(String),
}

/// A running connection to one MCP server.
pub trait McpClient: Send + Sync {
    /// Every tool the server offers (all pages).
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<McpTool>, McpError>>;

    /// Call `tool` with `arguments`. Dropping the future cancels the call
    /// (the server is told).
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>>;

    /// Whether the server said its tool list changed since this was last
    /// asked (asking clears it).
    fn take_tools_changed(&self) -> bool;

    /// The connection is still open (a stdio server that exited is not).
    fn is_alive(&self) -> bool;

    /// How the connection ended, when it has (e.g. `: exit status 3; last
    /// stderr: boom`), for error messages; empty when unknown.
    fn end_detail(&self) -> String;

    /// Close the connection and stop the server process, if any.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// Starts servers.
pub trait Connector: Send + Sync {
    /// Start `server` and complete the MCP handshake (no timeout here: the
    /// caller bounds it with `startup_timeout_secs`).
    fn connect<'a>(
        &'a self,
        server: &'a McpServerConfig,
    ) -> BoxFuture<'a, Result<Arc<dyn McpClient>, McpError>>;
}
