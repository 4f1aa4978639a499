//! The MCP servers of one agent (docs/mcp.md#startup): started in
//! parallel, waited for up to each one's `startup_timeout_secs`, their
//! tools listed once (then again only when a server says they changed, or
//! after a restart, when the caller asks), called with `tool_timeout_secs`,
//! and a crashed server restarted once when the caller asks (at the next
//! turn).
//!
//! Invariants:
//! - A server never holds up a caller longer than its own startup timeout
//!   (counted from when it was started) or a call longer than its tool
//!   timeout.
//! - A failed start, a timeout, `isError` and a crash are results that name
//!   the server and say what happened; nothing here panics or prints.

use std::sync::Arc;
use std::time::Duration;

use eonyx_core::McpServerConfig;
use eonyx_core::config::{McpConfig, McpTransport};
use eonyx_core::provider::CancellationToken;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::client::{CallOutput, Connector, McpClient, McpError, McpTool};

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// `enabled = false`: never started.
    Disabled,
    /// Started, not yet waited for.
    Starting,
    Ready,
    /// Could not start, or not within its startup timeout: why.
    Failed(String),
    /// Was ready, then its connection ended: how. Restarted once by
    /// [`Servers::restart_crashed`].
    Crashed(String),
}

impl ServerState {
    /// One word: `disabled`, `starting`, `ready`, `failed`, `crashed`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Disabled => "disabled",
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Failed(_) => "failed",
            ServerState::Crashed(_) => "crashed",
        }
    }

    /// Why it failed or crashed.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ServerState::Failed(r) | ServerState::Crashed(r) => Some(r),
            _ => None,
        }
    }
}

/// A server as `eonyx mcp` and `/status` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio`, `http`, or `none` (no `command` nor `url`).
    pub transport: &'static str,
    pub state: ServerState,
    /// Tools it offers (after `enabled_tools` / `disabled_tools`).
    pub tools: usize,
    /// Tools the server lists that the config leaves out.
    pub hidden: usize,
    pub required: bool,
    /// It was restarted after a crash.
    pub restarted: bool,
}

/// A finished start: the connection and the tools it offers.
struct Started {
    client: Arc<dyn McpClient>,
    tools: Vec<McpTool>,
    hidden: usize,
}

struct Slot {
    config: McpServerConfig,
    state: ServerState,
    client: Option<Arc<dyn McpClient>>,
    /// A start in progress and when it must be done.
    starting: Option<(Instant, JoinHandle<Result<Started, McpError>>)>,
    /// Offered tools as last listed.
    tools: Vec<McpTool>,
    hidden: usize,
    restarts: u32,
    /// Tools listed since the caller last took them (a restart).
    relisted: bool,
}

/// The servers of one agent.
pub struct Servers {
    connector: Arc<dyn Connector>,
    slots: Vec<Slot>,
    /// Lines about starts finished by a wait that was dropped before it
    /// returned them; the next wait returns them first.
    notes: Vec<StartNote>,
}

/// Which servers [`Servers::wait`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Every server still starting.
    All,
    /// Only those with `required = true` (when a session opens).
    Required,
}

/// A line about a finished start, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartNote {
    pub text: String,
    /// The server could not start (a warning); else a notice (restarted).
    pub failed: bool,
}

/// A call ready to be made (from [`Servers::prepare`]).
pub struct PreparedCall {
    server: String,
    tool: String,
    client: Arc<dyn McpClient>,
    limit: Duration,
}

/// What a server answered to a [`PreparedCall`]: `None` when it did not
/// within `tool_timeout_secs`.
pub struct CallAnswer(Option<Result<CallOutput, McpError>>);

impl PreparedCall {
    /// Make the call, for at most the server's `tool_timeout_secs`; `Err`
    /// only when `cancel` fired.
    pub async fn run(
        &self,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<CallAnswer, Interrupted> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Interrupted),
            r = tokio::time::timeout(self.limit, self.client.call_tool(&self.tool, arguments)) => {
                Ok(CallAnswer(r.ok()))
            }
        }
    }
}

/// A call was cancelled by the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl Servers {
    /// Start every enabled server of `config` in parallel (in the
    /// background: nothing is waited for here). Must run inside a tokio
    /// runtime.
    pub fn start(config: &McpConfig, connector: Arc<dyn Connector>) -> Self {
        let slots = config
            .servers
            .values()
            .map(|c| {
                let mut slot = Slot {
                    config: c.clone(),
                    state: ServerState::Disabled,
                    client: None,
                    starting: None,
                    tools: Vec::new(),
                    hidden: 0,
                    restarts: 0,
                    relisted: false,
                };
                if c.enabled {
                    slot.starting = Some(spawn_start(&connector, c));
                    slot.state = ServerState::Starting;
                }
                slot
            })
            .collect();
        Self {
            connector,
            slots,
            notes: Vec::new(),
        }
    }

    /// Whether any server is configured (enabled or not).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Wait for the servers still starting (`which`: all, or only the
    /// `required` ones), each until its own deadline. Returns a warning for
    /// each server that could not start (and a line for each restarted
    /// one). Cancellation-safe: dropped early, the starts not yet waited
    /// for stay pending and the lines of those finished are kept, both for
    /// the next call.
    pub async fn wait(&mut self, which: Which) -> Vec<StartNote> {
        for slot in &mut self.slots {
            if which == Which::Required && !slot.config.required {
                continue;
            }
            let Some((deadline, handle)) = slot.starting.as_mut() else {
                continue;
            };
            let outcome = match tokio::time::timeout_at(*deadline, &mut *handle).await {
                Ok(Ok(result)) => result,
                Ok(Err(join)) => Err(McpError::Start(format!("its start failed: {join}"))),
                Err(_) => {
                    handle.abort();
                    Err(McpError::Start(format!(
                        "it did not start within {}s (startup_timeout_secs)",
                        slot.config.startup_timeout_secs
                    )))
                }
            };
            slot.starting = None;
            self.notes.extend(finish(slot, outcome));
        }
        std::mem::take(&mut self.notes)
    }

    /// The servers still starting that are not done yet, by name.
    pub fn pending(&self) -> Vec<&str> {
        self.slots
            .iter()
            .filter(|s| s.starting.as_ref().is_some_and(|(_, h)| !h.is_finished()))
            .map(|s| s.config.name.as_str())
            .collect()
    }

    /// Required servers that could not start: name and why.
    pub fn required_failures(&self) -> Vec<(String, String)> {
        self.slots
            .iter()
            .filter(|s| s.config.required)
            .filter_map(|s| match &s.state {
                ServerState::Failed(why) => Some((s.config.name.clone(), why.clone())),
                _ => None,
            })
            .collect()
    }

    /// The tools of every ready server, by server name (sorted).
    pub fn tools(&self) -> Vec<(String, Vec<McpTool>)> {
        self.slots
            .iter()
            .filter(|s| s.state == ServerState::Ready)
            .map(|s| (s.config.name.clone(), s.tools.clone()))
            .collect()
    }

    /// List again the tools of the servers that said they changed (or were
    /// restarted); returns whether any server's tools now differ from what
    /// [`Servers::tools`] gave before. The caller rebuilds its tool list
    /// then, at a compaction or a new session, never between two requests.
    pub async fn refresh(&mut self) -> bool {
        let mut changed = false;
        for slot in &mut self.slots {
            changed |= std::mem::take(&mut slot.relisted);
            let Some(client) = slot.client.clone() else {
                continue;
            };
            if slot.state != ServerState::Ready || !client.take_tools_changed() {
                continue;
            }
            let limit = Duration::from_secs(slot.config.startup_timeout_secs.max(1));
            if let Ok(Ok(listed)) = tokio::time::timeout(limit, client.list_tools()).await {
                let (tools, hidden) = offered(&slot.config, listed);
                changed |= tools != slot.tools;
                slot.tools = tools;
                slot.hidden = hidden;
            }
        }
        changed
    }

    /// Start again, once each, the servers that crashed, and wait for them
    /// (up to their startup timeouts). Returns a line for each: restarted,
    /// or why not. Cancellation-safe like [`Servers::wait`].
    pub async fn restart_crashed(&mut self) -> Vec<StartNote> {
        for slot in &mut self.slots {
            if matches!(slot.state, ServerState::Crashed(_)) && slot.restarts == 0 {
                slot.restarts += 1;
                slot.starting = Some(spawn_start(&self.connector, &slot.config));
                slot.state = ServerState::Starting;
            }
        }
        self.wait(Which::All).await
    }

    /// Call `tool` of `server`. Every failure is an error result naming
    /// the server and saying what happened; `Err` only when `cancel` fired.
    pub async fn call(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, Interrupted> {
        let call = match self.prepare(server, tool) {
            Ok(c) => c,
            Err(out) => return Ok(out),
        };
        let answer = call.run(arguments, cancel).await?;
        Ok(self.finish(&call, answer))
    }

    /// The first half of [`Servers::call`]: the connection to call `tool`
    /// of `server` through, or the error result saying why there is none.
    /// The call itself ([`PreparedCall::run`]) needs no access to `self`,
    /// so several agents sharing these servers can call at once.
    pub fn prepare(&self, server: &str, tool: &str) -> Result<PreparedCall, CallOutput> {
        let Some(slot) = self.slots.iter().find(|s| s.config.name == server) else {
            return Err(failed(format!(
                "error: there is no MCP server `{server}`, so `{tool}` was not called"
            )));
        };
        match (&slot.state, &slot.client) {
            (ServerState::Ready, Some(c)) => Ok(PreparedCall {
                server: server.to_owned(),
                tool: tool.to_owned(),
                client: c.clone(),
                limit: Duration::from_secs(slot.config.tool_timeout_secs.max(1)),
            }),
            (ServerState::Crashed(why), _) => Err(failed(format!(
                "error: MCP server `{server}` crashed earlier ({why}) and is restarted at the next turn, so `{tool}` was not called"
            ))),
            (state, _) => {
                let why = state.reason().unwrap_or(state.label());
                Err(failed(format!(
                    "error: MCP server `{server}` is not running ({why}), so `{tool}` was not called"
                )))
            }
        }
    }

    /// The second half of [`Servers::call`]: the result to give the model
    /// for `answer`; a closed connection marks the server crashed (unless
    /// it was restarted meanwhile).
    pub fn finish(&mut self, call: &PreparedCall, answer: CallAnswer) -> CallOutput {
        let (server, tool) = (&call.server, &call.tool);
        let slot = self.slots.iter_mut().find(|s| &s.config.name == server);
        // Still the connection the call went through (not a restarted one).
        let current = slot.filter(|s| {
            s.client
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &call.client))
        });
        match answer.0 {
            None => failed(format!(
                "error: MCP tool `{tool}` of server `{server}` did not answer within {}s (tool_timeout_secs), so the call was cancelled",
                call.limit.as_secs()
            )),
            Some(Ok(out)) if out.is_error => failed(format!(
                "error: MCP tool `{tool}` of server `{server}` reported an error (isError):\n{}",
                out.text
            )),
            Some(Ok(out)) => out,
            Some(Err(e)) => {
                let detail = match e {
                    McpError::Closed { detail } => Some(detail),
                    _ if !call.client.is_alive() => Some(call.client.end_detail()),
                    e => {
                        return failed(format!(
                            "error: MCP tool `{tool}` of server `{server}` failed: {e}"
                        ));
                    }
                };
                match (current, detail) {
                    (Some(slot), Some(d)) => crashed(slot, tool, &d),
                    (_, d) => failed(format!(
                        "error: MCP server `{server}` crashed during the call to `{tool}`{}",
                        d.unwrap_or_default()
                    )),
                }
            }
        }
    }

    /// Where every server is.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.slots
            .iter()
            .map(|s| ServerStatus {
                name: s.config.name.clone(),
                transport: match &s.config.transport {
                    Some(McpTransport::Stdio { .. }) => "stdio",
                    Some(McpTransport::Http { .. }) => "http",
                    None => "none",
                },
                state: s.state.clone(),
                tools: s.tools.len(),
                hidden: s.hidden,
                required: s.config.required,
                restarted: s.restarts > 0 && s.state == ServerState::Ready,
            })
            .collect()
    }

    /// Stop every server.
    pub async fn shutdown(&mut self) {
        for slot in &mut self.slots {
            if let Some((_, handle)) = slot.starting.take() {
                handle.abort();
            }
            if let Some(c) = slot.client.take() {
                c.shutdown().await;
            }
        }
    }
}

/// Apply a finished start to `slot`; the line to show about it, if any.
fn finish(slot: &mut Slot, outcome: Result<Started, McpError>) -> Option<StartNote> {
    let name = &slot.config.name;
    let restart = slot.restarts > 0;
    match outcome {
        Ok(started) => {
            if restart {
                slot.relisted = started.tools != slot.tools;
            }
            slot.client = Some(started.client);
            slot.tools = started.tools;
            slot.hidden = started.hidden;
            slot.state = ServerState::Ready;
            restart.then(|| StartNote {
                text: format!("MCP server `{name}` was restarted after it crashed"),
                failed: false,
            })
        }
        Err(e) if restart => {
            let why = format!("it crashed and could not be restarted: {e}");
            let text = format!("MCP server `{name}`: {why}");
            slot.state = ServerState::Failed(why);
            Some(StartNote { text, failed: true })
        }
        Err(e) => {
            let why = e.to_string();
            let text =
                format!("MCP server `{name}` could not start: {why}; going on without its tools");
            slot.state = ServerState::Failed(why);
            Some(StartNote { text, failed: true })
        }
    }
}

fn failed(text: String) -> CallOutput {
    CallOutput {
        text,
        is_error: true,
    }
}

fn crashed(slot: &mut Slot, tool: &str, detail: &str) -> CallOutput {
    let name = &slot.config.name;
    let next = if slot.restarts == 0 {
        "it is restarted at the next turn"
    } else {
        "it was restarted once already, so it stays down for this session"
    };
    slot.state = ServerState::Crashed(format!("the connection closed{detail}"));
    if slot.restarts > 0 {
        slot.state = ServerState::Failed(format!("it crashed again{detail}"));
    }
    slot.client = None;
    failed(format!(
        "error: MCP server `{name}` crashed during the call to `{tool}`{detail}; {next}"
    ))
}

/// The tools `config` offers of those listed (sorted by name), and how
/// many it leaves out.
fn offered(config: &McpServerConfig, listed: Vec<McpTool>) -> (Vec<McpTool>, usize) {
    let total = listed.len();
    let mut tools: Vec<McpTool> = listed
        .into_iter()
        .filter(|t| config.offers(&t.name))
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools.dedup_by(|a, b| a.name == b.name);
    let hidden = total - tools.len();
    (tools, hidden)
}

fn spawn_start(
    connector: &Arc<dyn Connector>,
    config: &McpServerConfig,
) -> (Instant, JoinHandle<Result<Started, McpError>>) {
    let deadline = Instant::now() + Duration::from_secs(config.startup_timeout_secs.max(1));
    let connector = Arc::clone(connector);
    let config = config.clone();
    let handle = tokio::spawn(async move {
        let client = connector.connect(&config).await?;
        let listed = match client.list_tools().await {
            Ok(l) => l,
            Err(e) => {
                client.shutdown().await;
                return Err(McpError::Start(format!("listing its tools failed: {e}")));
            }
        };
        let (tools, hidden) = offered(&config, listed);
        Ok(Started {
            client,
            tools,
            hidden,
        })
    });
    (deadline, handle)
}

#[cfg(test)]
mod tests;
