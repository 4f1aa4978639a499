//! MCP servers in the turn loop (docs/mcp.md): started when the agent
//! opens (required ones waited for there), the others waited for before
//! the first request, their tools fixed in a [`Catalog`] until the next
//! compaction or session, calls approved and run, a crashed server
//! restarted once at the next turn.
//!
//! Invariant: `tool_defs` and the `# MCP tools` listing change only in
//! [`Agent::mcp_ready`] (once, before the first request), after a
//! compaction and before the first request of a new session, so every
//! request between two compactions carries the same tools array.

use std::sync::Arc;

use eonyx_config::Config;
use eonyx_config::McpApproval;
use eonyx_core::provider::CancellationToken;
use eonyx_core::tool::{arg, is_mcp_tool};
use eonyx_core::{ToolCall, ToolName};
use eonyx_mcp::{Catalog, Connector, Interrupted, ServerStatus, Servers, Which};
use serde_json::{Map, Value};

use super::{Agent, tool_definitions};
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::tools::{self, ApprovalKind, Decision, ToolOutput};

/// The MCP part of an agent.
pub(crate) struct McpState {
    /// `None` when no server is configured.
    servers: Option<Servers>,
    catalog: Catalog,
    listing: String,
    /// The first wait is over and a catalog was built.
    ready: bool,
    /// A new session was opened: rebuild the catalog before its first
    /// request if a server's tools changed.
    refresh_pending: bool,
}

impl McpState {
    /// Start every enabled server of `config` (in the background).
    pub(crate) fn start(config: &Config, connector: Arc<dyn Connector>) -> Self {
        let servers =
            (config.mcp.enabled().next().is_some()).then(|| Servers::start(&config.mcp, connector));
        Self {
            servers,
            catalog: Catalog::default(),
            listing: String::new(),
            ready: false,
            refresh_pending: false,
        }
    }

    /// The `# MCP tools` listing (empty unless schemas are deferred).
    pub(crate) fn listing(&self) -> &str {
        &self.listing
    }

    /// A session was switched to: apply a changed tool list before its
    /// first request.
    pub(crate) fn session_changed(&mut self) {
        self.refresh_pending = true;
    }
}

/// Wait for the required servers: a failed one stops the run.
pub(crate) async fn wait_required(state: &mut McpState) -> Result<Vec<String>, AgentError> {
    let Some(servers) = state.servers.as_mut() else {
        return Ok(Vec::new());
    };
    let warnings = servers
        .wait(Which::Required)
        .await
        .into_iter()
        .map(|n| n.text)
        .collect();
    if let Some((name, why)) = servers.required_failures().into_iter().next() {
        servers.shutdown().await;
        return Err(AgentError::McpRequired { server: name, why });
    }
    Ok(warnings)
}

impl Agent {
    /// Before the first request: wait for the servers still starting (each
    /// up to its startup timeout; a late one is left out with a warning),
    /// then fix the tools array. Does nothing after the first time. Ctrl-C
    /// stops the wait (the turn is interrupted; the next one waits again).
    pub(crate) async fn mcp_ready(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        if self.mcp.ready {
            return Ok(());
        }
        let Some(servers) = self.mcp.servers.as_mut() else {
            self.mcp.ready = true;
            return Ok(());
        };
        let pending = servers.pending();
        if !pending.is_empty() {
            sink(AgentEvent::Notice(format!(
                "waiting for MCP server{} {} to start",
                if pending.len() == 1 { "" } else { "s" },
                pending
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let notes = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(AgentError::Interrupted),
            notes = servers.wait(Which::All) => notes,
        };
        for n in notes {
            sink(AgentEvent::Warning(n.text));
        }
        self.mcp.ready = true;
        if self.mcp_rebuild() {
            // The resumed session's last usage was measured with these tools.
            self.calibrate_from_history(self.calibration_seq);
        }
        Ok(())
    }

    /// At the start of a turn: the first wait, a restart of crashed
    /// servers (once each), a changed tool list when a session was
    /// switched to.
    pub(super) async fn mcp_before_turn(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        self.mcp_ready(sink, cancel).await?;
        let Some(servers) = self.mcp.servers.as_mut() else {
            return Ok(());
        };
        let notes = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(AgentError::Interrupted),
            notes = servers.restart_crashed() => notes,
        };
        for n in notes {
            sink(if n.failed {
                AgentEvent::Warning(n.text)
            } else {
                AgentEvent::Notice(n.text)
            });
        }
        if std::mem::take(&mut self.mcp.refresh_pending) {
            self.mcp_refresh(sink).await;
        }
        Ok(())
    }

    /// After a compaction (or before a new session's first request): list
    /// again the tools of servers that said they changed, and rebuild the
    /// tools array if anything did.
    pub(super) async fn mcp_refresh(&mut self, sink: &mut (dyn FnMut(AgentEvent) + Send)) {
        let Some(servers) = self.mcp.servers.as_mut() else {
            return;
        };
        if !self.mcp.ready || !servers.refresh().await {
            return;
        }
        let before = self.mcp.catalog.entries().len();
        self.mcp_rebuild();
        sink(AgentEvent::Notice(format!(
            "the MCP tools changed ({before} before, {} now); the new list applies from this request on",
            self.mcp.catalog.entries().len()
        )));
    }

    /// Build the catalog from the ready servers' tools and the tools array
    /// from it; returns whether the MCP part changed.
    fn mcp_rebuild(&mut self) -> bool {
        let Some(servers) = self.mcp.servers.as_ref() else {
            return false;
        };
        let limit = self.config.mcp.defer_limit(self.trigger.window);
        let catalog = Catalog::build(
            &servers.tools(),
            limit,
            self.config.compaction.chars_per_token,
        );
        if catalog == self.mcp.catalog {
            return false;
        }
        self.mcp.listing = catalog.listing();
        self.mcp.catalog = catalog;
        let mut defs = tool_definitions(&self.config, &self.skills);
        defs.extend(self.mcp.catalog.definitions());
        self.tool_defs = defs;
        true
    }

    /// Whether `call` is for MCP (an `mcp__…` tool, `mcp_describe`,
    /// `mcp_call`) while MCP servers are configured.
    pub(super) fn is_mcp_call(&self, call: &ToolCall) -> bool {
        self.mcp.servers.is_some()
            && (is_mcp_tool(&call.name)
                || matches!(
                    ToolName::parse(&call.name),
                    Some(ToolName::McpDescribe | ToolName::McpCall)
                ))
    }

    /// Run an MCP call (see [`Agent::is_mcp_call`]).
    pub(super) async fn run_mcp_tool(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let (name, arguments) = match ToolName::parse(&call.name) {
            Some(ToolName::McpDescribe) => {
                let Some(name) = call.arguments.get(arg::TOOL).and_then(Value::as_str) else {
                    return bad_args(
                        &call.name,
                        "`tool` (a tool name from # MCP tools) is required",
                    );
                };
                return match self.mcp.catalog.describe(name) {
                    Ok(text) => ToolOutput::ok(text),
                    Err(e) => ToolOutput::error(e),
                };
            }
            Some(ToolName::McpCall) => {
                let Some(name) = call.arguments.get(arg::TOOL).and_then(Value::as_str) else {
                    return bad_args(
                        &call.name,
                        "`tool` (a tool name from # MCP tools) is required",
                    );
                };
                let args = call.arguments.get(arg::ARGUMENTS).unwrap_or(&Value::Null);
                (name.to_owned(), args.clone())
            }
            _ => (call.name.clone(), call.arguments.clone()),
        };
        let arguments: Map<String, Value> = match arguments {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return bad_args(
                    &name,
                    &format!("the arguments must be a JSON object, not {other}"),
                );
            }
        };
        let Some(entry) = self.mcp.catalog.find(&name).cloned() else {
            return ToolOutput::error(self.mcp.catalog.unknown(&name));
        };
        let kind = ApprovalKind::Mcp {
            server: entry.server.clone(),
            tool: entry.name.clone(),
            arguments: Value::Object(arguments.clone()).to_string(),
        };
        match tools::approve(self.approver.as_ref(), &kind, cancel).await {
            Err(_) => return ToolOutput::interrupted(),
            Ok(Decision::Deny) => return ToolOutput::error(self.mcp_denied(&entry.server)),
            Ok(Decision::Allow) => {}
        }
        let Some(servers) = self.mcp.servers.as_mut() else {
            return ToolOutput::error(self.mcp.catalog.unknown(&name));
        };
        match servers
            .call(&entry.server, &entry.tool, arguments, cancel)
            .await
        {
            Ok(out) => ToolOutput {
                text: out.text,
                is_error: out.is_error,
                change: None,
                event: None,
            },
            Err(Interrupted) => ToolOutput::interrupted(),
        }
    }

    /// The result of a denied MCP call, saying how to allow it.
    fn mcp_denied(&self, server: &str) -> String {
        match self.config.mcp.servers.get(server).map(|s| s.approval) {
            Some(McpApproval::Deny) => format!(
                "denied: the user's config sets approval = \"deny\" for MCP server `{server}`; do not call its tools again"
            ),
            _ => format!(
                "denied: MCP tool calls need approval; run eonyx with --allow-mcp or set approval = \"allow\" under [mcp_servers.{server}]"
            ),
        }
    }

    /// Where each configured MCP server is, for `/status` (empty when none
    /// is configured).
    pub fn mcp_status(&self) -> Vec<ServerStatus> {
        self.mcp
            .servers
            .as_ref()
            .map(Servers::statuses)
            .unwrap_or_default()
    }

    /// The MCP tools of this session's requests (empty before the first
    /// request, or without servers).
    pub fn mcp_catalog(&self) -> &Catalog {
        &self.mcp.catalog
    }
}

fn bad_args(tool: &str, why: &str) -> ToolOutput {
    ToolOutput::error(format!("invalid arguments for {tool}: {why}"))
}
