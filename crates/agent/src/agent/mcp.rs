//! MCP servers in the turn loop (docs/mcp.md): started when the agent
//! opens (required ones waited for there), the others waited for before
//! the first request, their tools fixed in a [`Catalog`] until the next
//! compaction or session, calls approved and run, a crashed server
//! restarted once at the next turn. A task's child shares its parent's
//! servers (calls do not wait for each other: the lock is held only to
//! look a connection up and to record how a call ended) and gets the part
//! of the parent's catalog its profile allows, fixed for its life.
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
use eonyx_mcp::{Catalog, Connector, Interrupted, McpTool, ServerStatus, Servers, Which};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::Agent;
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::prompt::tool_definitions;
use crate::tools::{self, ApprovalKind, Decision, ToolOutput};

/// The MCP part of an agent.
pub struct McpState {
    /// `None` when no server is configured. Shared with task children.
    servers: Option<Arc<Mutex<Servers>>>,
    catalog: Catalog,
    listing: String,
    /// The first wait is over and a catalog was built.
    ready: bool,
    /// A new session was opened: rebuild the catalog before its first
    /// request if a server's tools changed.
    refresh_pending: bool,
    /// A task's child: its catalog was fixed from its parent's; it never
    /// waits for, relists or rebuilds anything.
    child: bool,
}

impl McpState {
    /// Start every enabled server of `config` (in the background).
    pub(crate) fn start(config: &Config, connector: Arc<dyn Connector>) -> Self {
        let servers = (config.mcp.enabled().next().is_some())
            .then(|| Arc::new(Mutex::new(Servers::start(&config.mcp, connector))));
        Self {
            servers,
            catalog: Catalog::default(),
            listing: String::new(),
            ready: false,
            refresh_pending: false,
            child: false,
        }
    }

    /// A task child's part: the parent's servers, and those of the
    /// parent's MCP tools the child's profile allows (docs/using-tools.md, section
    /// "Tasks"), deferred or not by the child's own limit.
    pub(crate) async fn for_child(&self, config: &Config, window: u64) -> Self {
        let mut state = Self {
            servers: self.servers.clone(),
            catalog: Catalog::default(),
            listing: String::new(),
            ready: true,
            refresh_pending: false,
            child: true,
        };
        let Some(servers) = &self.servers else {
            return state;
        };
        let parent = &self.catalog;
        let tools = servers.lock().await.tools();
        let tools = allowed(tools, config, |server, tool| {
            parent
                .entries()
                .iter()
                .any(|e| e.server == server && e.tool == tool)
        });
        state.catalog = Catalog::build(
            &tools,
            config.mcp.defer_limit(window),
            config.compaction.chars_per_token,
        );
        state.listing = state.catalog.listing();
        state
    }

    /// The tool definitions the catalog adds after the built-ins.
    pub(crate) fn definitions(&self) -> Vec<eonyx_core::ToolDef> {
        self.catalog.definitions()
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
    let Some(servers) = state.servers.as_ref() else {
        return Ok(Vec::new());
    };
    let mut servers = servers.lock().await;
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
    pub(crate) async fn mcp_ready(&mut self, cancel: &CancellationToken) -> Result<(), AgentError> {
        if self.mcp.ready {
            return Ok(());
        }
        let Some(servers) = self.mcp.servers.clone() else {
            self.mcp.ready = true;
            return Ok(());
        };
        let mut servers = servers.lock().await;
        let pending = servers.pending();
        if !pending.is_empty() {
            self.events.send(AgentEvent::Notice(format!(
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
            self.events.send(AgentEvent::Warning(n.text));
        }
        self.mcp.ready = true;
        let tools = servers.tools();
        drop(servers);
        if self.mcp_rebuild(tools) {
            // The resumed session's last usage was measured with these tools.
            self.calibrate_from_history(self.compaction.calibration_seq);
        }
        Ok(())
    }

    /// At the start of a turn: the first wait, a restart of crashed
    /// servers (once each), a changed tool list when a session was
    /// switched to.
    pub(super) async fn mcp_before_turn(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        self.mcp_ready(cancel).await?;
        let Some(servers) = self.mcp.servers.clone() else {
            return Ok(());
        };
        let notes = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(AgentError::Interrupted),
            notes = async { servers.lock().await.restart_crashed().await } => notes,
        };
        for n in notes {
            self.events.send(if n.failed {
                AgentEvent::Warning(n.text)
            } else {
                AgentEvent::Notice(n.text)
            });
        }
        if std::mem::take(&mut self.mcp.refresh_pending) {
            self.mcp_refresh().await;
        }
        Ok(())
    }

    /// After a compaction (or before a new session's first request): list
    /// again the tools of servers that said they changed, and rebuild the
    /// tools array if anything did.
    pub(super) async fn mcp_refresh(&mut self) {
        let Some(servers) = self.mcp.servers.clone() else {
            return;
        };
        if !self.mcp.ready || self.mcp.child {
            return;
        }
        let mut servers = servers.lock().await;
        if !servers.refresh().await {
            return;
        }
        let tools = servers.tools();
        drop(servers);
        let before = self.mcp.catalog.entries().len();
        self.mcp_rebuild(tools);
        self.events.send(AgentEvent::Notice(format!(
            "the MCP tools changed ({before} before, {} now); the new list applies from this request on",
            self.mcp.catalog.entries().len()
        )));
    }

    /// Build the catalog from the ready servers' `tools` (those the active
    /// profile allows) and the tools array from it; returns whether the
    /// MCP part changed.
    fn mcp_rebuild(&mut self, tools: Vec<(String, Vec<McpTool>)>) -> bool {
        if self.mcp.child {
            return false;
        }
        let limit = self.config.mcp.defer_limit(self.compaction.trigger.window);
        let tools = allowed(tools, &self.config, |_, _| true);
        let catalog = Catalog::build(&tools, limit, self.config.compaction.chars_per_token);
        if catalog == self.mcp.catalog {
            return false;
        }
        self.mcp.listing = catalog.listing();
        self.mcp.catalog = catalog;
        let mut defs = tool_definitions(&self.config, &self.prompt.skills, self.depth);
        defs.extend(self.mcp.catalog.definitions());
        self.tools.defs = defs;
        true
    }

    /// The MCP servers and the tools they add.
    pub fn mcp(&self) -> &McpState {
        &self.mcp
    }
}

impl McpState {
    /// Whether `call` is for MCP (an `mcp__…` tool, `mcp_describe`,
    /// `mcp_call`) while MCP servers are configured.
    pub(super) fn is_call(&self, call: &ToolCall) -> bool {
        self.servers.is_some()
            && (is_mcp_tool(&call.name)
                || matches!(
                    ToolName::parse(&call.name),
                    Some(ToolName::McpDescribe | ToolName::McpCall)
                ))
    }

    /// Run an MCP call (see [`McpState::is_call`]), approved by
    /// `approver` (a denial says how `config` would allow it).
    pub(super) async fn run(
        &self,
        call: &ToolCall,
        approver: &dyn tools::Approver,
        config: &Config,
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
                return match self.catalog.describe(name) {
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
        let Some(entry) = self.catalog.find(&name).cloned() else {
            return ToolOutput::error(self.catalog.unknown(&name));
        };
        let kind = ApprovalKind::Mcp {
            server: entry.server.clone(),
            tool: entry.name.clone(),
            arguments: Value::Object(arguments.clone()).to_string(),
        };
        match tools::approve(approver, &kind, cancel).await {
            Err(_) => return ToolOutput::interrupted(),
            Ok(Decision::Deny) => {
                return ToolOutput::error(
                    approver
                        .rule_denial(&kind)
                        .unwrap_or_else(|| denied(config, &entry.server)),
                );
            }
            Ok(Decision::Allow) => {}
        }
        let Some(servers) = self.servers.clone() else {
            return ToolOutput::error(self.catalog.unknown(&name));
        };
        // The lock only around the lookup and the bookkeeping: a sibling
        // task's call to a slow tool does not hold this one up.
        let prepared = servers.lock().await.prepare(&entry.server, &entry.tool);
        let out = match prepared {
            Err(out) => out,
            Ok(call) => match call.run(arguments, cancel).await {
                Ok(answer) => servers.lock().await.finish(&call, answer),
                Err(Interrupted) => return ToolOutput::interrupted(),
            },
        };
        ToolOutput {
            text: out.text,
            is_error: out.is_error,
            change: None,
            event: None,
            undo: None,
        }
    }

    /// Where each configured MCP server is, for `/status` (empty when none
    /// is configured).
    pub fn status(&self) -> Vec<ServerStatus> {
        // Between turns nothing holds the lock; while one runs (a task's
        // child calling) the states are a moment away: shown as none.
        self.servers
            .as_ref()
            .and_then(|s| s.try_lock().ok().map(|s| s.statuses()))
            .unwrap_or_default()
    }

    /// The MCP tools of this session's requests (empty before the first
    /// request, or without servers).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }
}

/// The result of a denied MCP call, saying how to allow it.
fn denied(config: &Config, server: &str) -> String {
    match config.mcp.servers.get(server).map(|s| s.approval) {
        Some(McpApproval::Deny) => format!(
            "denied: the user's config sets approval = \"deny\" for MCP server `{server}`; do not call its tools again"
        ),
        _ => format!(
            "denied: MCP tool calls need approval; run eonyx with --allow-mcp or set approval = \"allow\" under [mcp_servers.{server}]"
        ),
    }
}

/// The tools of `servers` that `config`'s active profile allows (all
/// without one) and `keep` keeps (by server and tool name).
fn allowed(
    servers: Vec<(String, Vec<McpTool>)>,
    config: &Config,
    keep: impl Fn(&str, &str) -> bool,
) -> Vec<(String, Vec<McpTool>)> {
    let profile = config.active_profile();
    servers
        .into_iter()
        .map(|(server, tools)| {
            let tools = tools
                .into_iter()
                .filter(|t| {
                    keep(&server, &t.name)
                        && profile.is_none_or(|p| {
                            p.allows_mcp(&eonyx_core::tool::mcp_tool_name(&server, &t.name))
                        })
                })
                .collect();
            (server, tools)
        })
        .collect()
}

fn bad_args(tool: &str, why: &str) -> ToolOutput {
    ToolOutput::error(format!("invalid arguments for {tool}: {why}"))
}
