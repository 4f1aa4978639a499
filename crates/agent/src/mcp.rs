//! MCP for the frontends (docs/mcp.md): [`inspect`] starts the configured
//! servers the way a session does and reports them, for `eonyx mcp` and
//! `eonyx context` (which count their tools in the fixed request size
//! without asking a model); the types `/status` shows.

use std::sync::Arc;

use eonyx_config::Config;
use eonyx_config::paths::Env;
pub use eonyx_mcp::{Catalog, Entry, ServerState, ServerStatus};
use eonyx_mcp::{RmcpConnector, Servers, Which};

/// The servers and the tools they would add to a session's requests.
#[derive(Debug, Clone)]
pub struct McpReport {
    pub servers: Vec<ServerStatus>,
    /// The MCP part of every request, as a session opened now would build
    /// it for a context window of the given size.
    pub catalog: Catalog,
    /// A server that could not start: why (as a session would warn).
    pub warnings: Vec<String>,
}

/// Start every enabled server of `config` in `cwd`'s project (stdio ones
/// without the provider key variables), wait for each up to its startup
/// timeout, build the catalog a session would for a window of `window`
/// tokens, and stop them. Must run inside a tokio runtime.
pub async fn inspect(config: &Config, env: &Env, window: u64) -> McpReport {
    let connector = Arc::new(RmcpConnector::new(
        env.clone(),
        eonyx_config::secrets::key_env_vars(config),
        config.project_root.clone(),
    ));
    let mut servers = Servers::start(&config.mcp, connector);
    let warnings = servers
        .wait(Which::All)
        .await
        .into_iter()
        .map(|n| n.text)
        .collect();
    let catalog = Catalog::build(
        &servers.tools(),
        config.mcp.defer_limit(window),
        config.compaction.chars_per_token,
    );
    let statuses = servers.statuses();
    servers.shutdown().await;
    McpReport {
        servers: statuses,
        catalog,
        warnings,
    }
}
