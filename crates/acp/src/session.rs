//! One client session: its own agent (so sessions never wait on each
//! other), the cancels of its prompts (taken when each arrives), the mode,
//! and the commands it offers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, CurrentModeUpdate, McpServer, PromptResponse,
    SessionId as AcpSessionId, SessionModeId, SessionModeState, SessionUpdate, StopReason,
    UsageUpdate,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use camino::Utf8PathBuf;
use eonyx_agent::{Agent, AgentError, AgentEvent, AgentOptions, SessionChoice};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{Fault, FinishReason, SessionId};
use tokio::sync::oneshot;

use crate::AcpOptions;
use crate::approval::{Asker, CurrentCall, Mode, approvers};
use crate::files::ClientFs;
use crate::lock;
use crate::updates::{Shows, Updates};

/// How to open a session.
pub struct Opening {
    pub cwd: PathBuf,
    pub mcp_servers: Vec<McpServer>,
    pub choice: SessionChoice,
    /// `session/load`: stream the visible history before answering.
    pub replay: bool,
}

pub struct Session {
    id: AcpSessionId,
    /// `None` once closed.
    agent: tokio::sync::Mutex<Option<Agent>>,
    prompts: Mutex<Prompts>,
    mode: Arc<Mutex<Mode>>,
    current: CurrentCall,
    shows: Shows,
    root: Utf8PathBuf,
    commands: Vec<eonyx_agent::commands::Offered>,
    files: Option<Arc<ClientFs>>,
}

/// The cancels of a session's prompts not answered yet (the running one,
/// and any sent while it runs), by number, and the newest one's end.
#[derive(Default)]
struct Prompts {
    last: u64,
    open: HashMap<u64, CancellationToken>,
    /// Ends once the newest prompt so far is answered.
    newest: Option<oneshot::Receiver<()>>,
}

/// A prompt of a session from the moment its request arrived until it is
/// answered: [`Session::cancel`] reaches it even before its turn starts,
/// and its turn waits for the prompt before it on the wire (each prompt's
/// task is spawned, and the scheduler may run a later one first).
pub struct PromptTicket {
    number: u64,
    cancel: CancellationToken,
    /// The previous prompt's end (`None` for the first).
    after: Option<oneshot::Receiver<()>>,
    /// Dropped when this prompt is answered, which lets the next go.
    done: oneshot::Sender<()>,
}

/// A JSON-RPC error with eonyx's message.
pub fn error(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

/// An agent error as the client sees it: what the user must fix (the
/// request or the config) is invalid params, the rest internal.
pub fn agent_error(e: &AgentError) -> Error {
    let code = match e.class().fault() {
        Fault::User | Fault::Config => ErrorCode::INVALID_PARAMS,
        Fault::Cancelled | Fault::Failure => ErrorCode::INTERNAL_ERROR,
    };
    error(code, e.to_string())
}

impl Session {
    /// The configuration the session runs with (`None` once closed).
    pub async fn config(&self) -> Option<eonyx_config::Config> {
        self.agent.lock().await.as_ref().map(|a| a.config().clone())
    }

    pub async fn open(
        opts: &AcpOptions,
        client: &ClientCapabilities,
        opening: Opening,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, Error> {
        let cwd = Utf8PathBuf::from_path_buf(opening.cwd.clone())
            .ok()
            .filter(|c| c.is_absolute() && c.is_dir())
            .ok_or_else(|| {
                error(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "cwd {} is not an absolute path to a directory",
                        opening.cwd.display()
                    ),
                )
            })?;
        let mcp_servers = opening
            .mcp_servers
            .iter()
            .map(crate::mcp::server)
            .collect::<Result<Vec<_>, _>>()?;
        let flags = opts.permissions;
        let mode = Arc::new(Mutex::new(Mode::Ask));
        let current: CurrentCall = Arc::new(Mutex::new(None));
        let asker = Arc::new(Asker::new(cx.clone(), mode.clone(), current.clone()));
        let agent_opts = AgentOptions {
            cwd: cwd.clone(),
            env: eonyx_core::paths::Env::from_process(),
            model: opts.model.clone(),
            profile: opts.profile.clone(),
            permissions: flags,
            approver: Some(asker.clone()),
            provider: None,
            mcp: None,
            mcp_servers,
            sandbox_helper: opts.sandbox_helper.clone(),
        };
        let mut agent = Agent::open(agent_opts, opening.choice.clone())
            .await
            .map_err(|e| agent_error(&e))?;
        for n in agent.take_startup_notices() {
            crate::diag(&n);
        }
        agent.set_approver(approvers(agent.config(), flags, asker.clone()));
        let id = AcpSessionId::new(agent.session_id().as_str());
        *lock(&asker.session) = Some(id.clone());
        *lock(&asker.confinement) = Some(agent.confinement());
        let files = ClientFs::offered(client, cx, &id).map(Arc::new);
        if let Some(f) = &files {
            agent.set_client_files(f.clone());
        }
        let root = eonyx_config::paths::find_project(&cwd).root;
        let shows = Shows::of(client);
        if opening.replay {
            let mut updates =
                Updates::new(cx.clone(), id.clone(), shows, root.clone(), current.clone());
            crate::replay::replay(&agent, &mut updates).map_err(|e| agent_error(&e))?;
        }
        // As the REPL does on opening one: `startup` or `resume`, its
        // context waiting for the first prompt. The client has no session
        // to show updates in yet, so what the hooks say goes to stderr.
        let events = agent.events();
        events
            .deliver(eonyx_agent::commands::start_session(&mut agent), on_stderr)
            .await;
        let commands = crate::commands::offered(&agent);
        Ok(Arc::new(Session {
            id,
            agent: tokio::sync::Mutex::new(Some(agent)),
            prompts: Mutex::new(Prompts::default()),
            mode,
            current,
            shows,
            root,
            commands,
            files,
        }))
    }

    pub fn acp_id(&self) -> AcpSessionId {
        self.id.clone()
    }

    pub fn modes(&self) -> SessionModeState {
        lock(&self.mode).state()
    }

    fn updates(&self, cx: &ConnectionTo<Client>) -> Updates {
        Updates::new(
            cx.clone(),
            self.id.clone(),
            self.shows,
            self.root.clone(),
            self.current.clone(),
        )
        .with_files(self.files.clone())
    }

    /// `available_commands_update`: the slash commands and skills.
    pub fn announce_commands(&self, cx: &ConnectionTo<Client>) {
        self.updates(cx)
            .send(crate::commands::update(&self.commands));
    }

    pub fn set_mode(&self, id: &SessionModeId, cx: &ConnectionTo<Client>) -> Result<(), Error> {
        let mode = Mode::parse(&id.0).ok_or_else(|| {
            error(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "unknown mode {}: use ask, accept-edits, auto or read-only",
                    id.0
                ),
            )
        })?;
        *lock(&self.mode) = mode;
        self.updates(cx)
            .send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                id.clone(),
            )));
        Ok(())
    }

    /// A `session/prompt` arrived: its ticket, taken in the dispatch loop
    /// (before its turn can start), so a `session/cancel` that follows it
    /// on the wire always reaches it.
    pub fn begin_prompt(&self) -> PromptTicket {
        let mut prompts = lock(&self.prompts);
        prompts.last += 1;
        let (done, end) = oneshot::channel();
        let ticket = PromptTicket {
            number: prompts.last,
            cancel: CancellationToken::new(),
            after: prompts.newest.replace(end),
            done,
        };
        prompts.open.insert(ticket.number, ticket.cancel.clone());
        ticket
    }

    /// `session/cancel`: stop the running turn like Ctrl-C; a prompt
    /// waiting for it, or whose turn has not started, ends `cancelled` too.
    pub fn cancel(&self) {
        for t in lock(&self.prompts).open.values() {
            t.cancel();
        }
    }

    /// Cancel the turn, wait for it, and let the agent go (its session
    /// file complete, its lock released, its MCP servers stopped).
    pub async fn close(&self) {
        self.cancel();
        let agent = self.agent.lock().await.take();
        // The session ends as a batch's does (`SessionEnd`, reason
        // `other`), and its background jobs with it; stderr says what the
        // hooks reported and which jobs were stopped (the client has no
        // session to show them in any more).
        if let Some(mut agent) = agent {
            let events = agent.events();
            let closing = eonyx_agent::commands::close_session(&mut agent, "other");
            let stopped = events.deliver(closing, on_stderr).await;
            for j in stopped {
                crate::diag::diag(&format!(
                    "stopped background job {} of session {}: {}",
                    j.id,
                    agent.session_id(),
                    j.command
                ));
            }
        }
    }

    /// `session/prompt`: one user turn, or a slash command, once every
    /// prompt that came before it is answered.
    pub async fn prompt(
        &self,
        ticket: PromptTicket,
        blocks: Vec<ContentBlock>,
        cx: &ConnectionTo<Client>,
    ) -> Result<PromptResponse, Error> {
        if let Some(after) = ticket.after {
            // An error is the same news: that prompt's task is gone.
            let _ = after.await;
        }
        let result = self.answer(&ticket.cancel, &blocks, cx).await;
        lock(&self.prompts).open.remove(&ticket.number);
        drop(ticket.done);
        result
    }

    async fn answer(
        &self,
        cancel: &CancellationToken,
        blocks: &[ContentBlock],
        cx: &ConnectionTo<Client>,
    ) -> Result<PromptResponse, Error> {
        let mut guard = self.agent.lock().await;
        let agent = guard.as_mut().ok_or_else(|| {
            error(
                ErrorCode::INVALID_PARAMS,
                format!("session {} was closed", self.id.0),
            )
        })?;
        let mut updates = self.updates(cx);
        let result = match crate::commands::prepare(agent, &self.commands, blocks) {
            Ok(prepared) => crate::commands::run(agent, prepared, &mut updates, cancel).await,
            Err(e) => Err(e),
        };
        updates.flush();
        let stop = match result {
            Ok(outcome) => match outcome {
                None => StopReason::EndTurn,
                Some(o) if o.max_steps_reached => StopReason::MaxTurnRequests,
                Some(o) => match o.finish_reason {
                    Some(FinishReason::Length) => StopReason::MaxTokens,
                    Some(FinishReason::ContentFilter(_)) => StopReason::Refusal,
                    _ => StopReason::EndTurn,
                },
            },
            Err(e) if e.is_interrupted() => StopReason::Cancelled,
            Err(e) => return Err(agent_error(&e)),
        };
        let ctx = agent.context_status();
        updates.send(SessionUpdate::UsageUpdate(UsageUpdate::new(
            ctx.estimate,
            ctx.window,
        )));
        let mut meta = serde_json::Map::new();
        meta.insert(
            "eonyx".to_owned(),
            serde_json::json!({
                "ctx": format!("{{ctx {:.0}%}}", ctx.percent),
                "contextTokens": ctx.estimate,
                "contextWindow": ctx.window,
                "session": agent.session_id().as_str(),
            }),
        );
        Ok(PromptResponse::new(stop).meta(meta))
    }
}

/// What a session's start and end report while no client shows it: its
/// notices, warnings and the hooks that blocked or denied, on stderr.
fn on_stderr(event: AgentEvent) {
    match event {
        AgentEvent::Notice(line) | AgentEvent::Warning(line) => crate::diag(&line),
        AgentEvent::Hook {
            event,
            command,
            decision: Some(decision @ ("block" | "deny" | "stop")),
            reason,
            ..
        } => crate::diag(&format!(
            "{event} hook `{command}` {decision}: {}",
            reason.unwrap_or_default()
        )),
        _ => {}
    }
}

/// `session/fork`: the store's fork of `id` (its whole history).
pub fn fork_in_store(id: &SessionId) -> Result<SessionId, Error> {
    let store = open_store()?;
    store
        .fork(id, None)
        .map(|f| f.id)
        .map_err(|e| error(ErrorCode::INVALID_PARAMS, e.to_string()))
}

/// `session/load` (and resume, fork) of an id the store does not hold is
/// an error naming it, never a new session.
pub fn ensure_exists(id: &SessionId) -> Result<(), Error> {
    if list_store()?.iter().any(|s| &s.id == id) {
        Ok(())
    } else {
        Err(error(
            ErrorCode::INVALID_PARAMS,
            format!(
                "unknown session {id}: no such session in the store (`eonyx sessions` lists them)"
            ),
        ))
    }
}

/// Every session of the store, newest first.
pub fn list_store() -> Result<Vec<eonyx_store::SessionSummary>, Error> {
    open_store()?
        .list()
        .map_err(|e| error(ErrorCode::INTERNAL_ERROR, e.to_string()))
}

fn open_store() -> Result<eonyx_store::Store, Error> {
    let env = eonyx_core::paths::Env::from_process();
    let dir = eonyx_config::paths::data_dir(&env)
        .map_err(|e| error(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
    eonyx_store::Store::open(&dir).map_err(|e| error(ErrorCode::INTERNAL_ERROR, e.to_string()))
}
