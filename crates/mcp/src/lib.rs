//! MCP servers for eonyx (docs/mcp.md): the client side of the Model
//! Context Protocol, so tools of stdio and streamable-HTTP servers reach
//! the model next to the built-in ones.
//!
//! - [`client`]: our own small interface, [`McpClient`] (one connection)
//!   and [`Connector`] (starting one); the agent and the tests only see
//!   these.
//! - `sdk`: the one place rmcp is used ([`RmcpConnector`]); rmcp's
//!   frequent major versions change this module and nothing else.
//! - [`servers`]: the servers of one agent, started in parallel, waited for
//!   up to their startup timeouts, called with their tool timeouts, a
//!   crashed one restarted once.
//! - [`catalog`]: the tools as the model sees them, named, sorted and,
//!   past the deferral limit, behind `mcp_describe` / `mcp_call`.
//!
//! Invariants:
//! - This crate depends on `eonyx-core` only (of ours) and never prints.
//! - A stdio server's environment never holds the variables the caller
//!   names as hidden (the provider keys).
//! - The catalog is a pure function of the servers' tools: the tools array
//!   of a session changes only when the agent builds a new one (at a
//!   compaction or a new session).

pub mod catalog;
pub mod client;
mod sdk;
pub mod servers;

pub use catalog::{Catalog, Entry, MCP_TOOLS_HEADING};
pub use client::{CallOutput, Connector, McpClient, McpError, McpTool};
pub use sdk::RmcpConnector;
pub use servers::{
    CallAnswer, Interrupted, PreparedCall, ServerState, ServerStatus, Servers, StartNote, Which,
};
