//! MCP: `[mcp]` and each `[mcp_servers.NAME]`, merged field by field over
//! the layers (an untrusted project's servers were already dropped by
//! trust), then each server's transport built from the merged fields
//! (docs/mcp.md#configuration).

use std::collections::BTreeMap;

use camino::Utf8PathBuf;

use super::{Layer, file_source};
use crate::{Config, ConfigError, McpServerConfig, McpServerFile, McpTransport};

/// The transport fields of one server as merged so far.
#[derive(Default)]
struct Transport {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    bearer_token_env_var: Option<String>,
    /// The file that set a field last (for errors).
    last: Utf8PathBuf,
}

pub(super) fn resolve_mcp(cfg: &mut Config, layers: &[Layer]) -> Result<(), ConfigError> {
    let mut transports: BTreeMap<String, Transport> = BTreeMap::new();
    for l in layers {
        if let Some(v) = l.file.mcp.as_ref().and_then(|m| m.defer_above_tokens) {
            cfg.mcp.defer_above_tokens = Some(v);
            cfg.sources
                .insert("mcp.defer_above_tokens".into(), l.source.clone());
        }
        for (name, f) in &l.file.mcp_servers {
            let server = cfg
                .mcp
                .servers
                .entry(name.clone())
                .or_insert_with(|| McpServerConfig::with_defaults(name.clone()));
            let t = transports.entry(name.clone()).or_default();
            let set = merge_server(server, t, f);
            t.last = file_source(&l.source);
            for field in set {
                cfg.sources
                    .insert(format!("mcp_servers.{name}.{field}"), l.source.clone());
            }
        }
    }
    for (name, t) in transports {
        let transport = build_transport(&name, t, &mut cfg.warnings)?;
        if let Some(server) = cfg.mcp.servers.get_mut(&name) {
            server.transport = transport;
        }
    }
    Ok(())
}

/// Apply one file's `[mcp_servers.NAME]`; returns the fields it set.
fn merge_server(
    s: &mut McpServerConfig,
    t: &mut Transport,
    f: &McpServerFile,
) -> Vec<&'static str> {
    let mut set = Vec::new();
    macro_rules! into {
        ($target:expr, $($field:ident),*) => {$(
            if let Some(v) = f.$field.clone() {
                $target.$field = Some(v);
                set.push(stringify!($field));
            }
        )*};
    }
    into!(
        t,
        command,
        args,
        env,
        cwd,
        url,
        headers,
        bearer_token_env_var
    );
    into!(s, enabled_tools);
    macro_rules! plain {
        ($($field:ident),*) => {$(
            if let Some(v) = f.$field.clone() {
                s.$field = v;
                set.push(stringify!($field));
            }
        )*};
    }
    plain!(
        enabled,
        disabled_tools,
        startup_timeout_secs,
        tool_timeout_secs,
        required,
        approval
    );
    set
}

/// The merged transport fields of server `name` as a transport; `None`
/// (with a warning) when neither `command` nor `url` is set.
fn build_transport(
    name: &str,
    t: Transport,
    warnings: &mut Vec<String>,
) -> Result<Option<McpTransport>, ConfigError> {
    let invalid = |field: &str, message: String| ConfigError::Invalid {
        path: t.last.clone(),
        key: format!("mcp_servers.{name}.{field}"),
        message,
    };
    let stdio_only = [
        ("args", t.args.is_some()),
        ("env", t.env.is_some()),
        ("cwd", t.cwd.is_some()),
    ];
    let http_only = [
        ("headers", t.headers.is_some()),
        ("bearer_token_env_var", t.bearer_token_env_var.is_some()),
    ];
    match (t.command.clone(), t.url.clone()) {
        (Some(_), Some(_)) => Err(invalid(
            "url",
            "the merged config sets both `command` and `url` (one in the global config, one in the project's); a server has one of them".into(),
        )),
        (Some(command), None) => {
            if let Some((field, _)) = http_only.iter().find(|(_, set)| *set) {
                return Err(invalid(
                    field,
                    format!("`{field}` is for streamable HTTP servers (`url`), not for a `command`"),
                ));
            }
            Ok(Some(McpTransport::Stdio {
                command,
                args: t.args.unwrap_or_default(),
                env: t.env.unwrap_or_default(),
                cwd: t.cwd,
            }))
        }
        (None, Some(url)) => {
            if let Some((field, _)) = stdio_only.iter().find(|(_, set)| *set) {
                return Err(invalid(
                    field,
                    format!("`{field}` is for servers eonyx starts (`command`), not for a `url`"),
                ));
            }
            Ok(Some(McpTransport::Http {
                url,
                headers: t.headers.unwrap_or_default(),
                bearer_token_env_var: t.bearer_token_env_var,
            }))
        }
        (None, None) => {
            warnings.push(format!(
                "{}: [mcp_servers.{name}] sets neither `command` (a program to start, speaking stdio) nor `url` (a streamable HTTP endpoint), so the server cannot start",
                t.last
            ));
            Ok(None)
        }
    }
}
