//! The client's MCP servers (`mcpServers` of `session/new`, `load`,
//! `resume`, `fork`) as eonyx MCP server configs, started for that
//! session only (docs/acp.md#mcp-servers).

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::McpServer;
use agent_client_protocol::{Error, ErrorCode};
use eonyx_core::McpServerConfig;
use eonyx_core::config::McpTransport;

/// One client server: stdio or streamable HTTP (SSE is refused: eonyx
/// does not advertise it).
pub fn server(s: &McpServer) -> Result<McpServerConfig, Error> {
    let (name, transport) = match s {
        McpServer::Stdio(s) => (
            s.name.clone(),
            McpTransport::Stdio {
                command: s.command.to_string_lossy().into_owned(),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect::<BTreeMap<_, _>>(),
                cwd: None,
            },
        ),
        McpServer::Http(h) => (
            h.name.clone(),
            McpTransport::Http {
                url: h.url.clone(),
                headers: h
                    .headers
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                bearer_token_env_var: None,
            },
        ),
        McpServer::Sse(s) => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "MCP server {}: the SSE transport is not supported; use stdio or HTTP",
                    s.name
                ),
            ));
        }
        _ => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                "an MCP server of an unknown transport: use stdio or HTTP",
            ));
        }
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("MCP server name {name:?}: use letters, digits, `-` and `_`"),
        ));
    }
    let mut config = McpServerConfig::with_defaults(name);
    config.transport = Some(transport);
    Ok(config)
}
