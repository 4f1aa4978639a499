//! The connection: the handler of every request and notification eonyx
//! answers, the sessions open in this process, and shutdown when stdin
//! closes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, ForkSessionRequest,
    ForkSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities,
    SessionForkCapabilities, SessionId as AcpSessionId, SessionInfo, SessionListCapabilities,
    SessionResumeCapabilities, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent as AgentRole, Client, Error, JsonRpcResponse, Stdio};
use eonyx_agent::SessionChoice;
use eonyx_core::SessionId;

use crate::session::{Opening, Session};
use crate::{AcpOptions, lock};

/// What the connection shares between its handlers.
pub(crate) struct Server {
    pub opts: AcpOptions,
    /// What the client announced in `initialize`.
    pub client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The tasks opening sessions and running turns, awaited at shutdown.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The background mining pass, started with the first session
    /// (docs/memory.md#mining); its warnings go to stderr as sessions open.
    mining: Mutex<Option<eonyx_agent::mining::MiningHandle>>,
    mining_started: std::sync::atomic::AtomicBool,
}

/// Serve the Agent Client Protocol on stdin/stdout until stdin closes.
pub fn serve(opts: AcpOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    let server = Arc::new(Server {
        opts,
        client: Mutex::new(ClientCapabilities::default()),
        sessions: Mutex::new(HashMap::new()),
        tasks: Mutex::new(Vec::new()),
        mining: Mutex::new(None),
        mining_started: std::sync::atomic::AtomicBool::new(false),
    });
    runtime.block_on(run(server.clone()))?;
    runtime.block_on(server.shutdown());
    Ok(())
}

async fn run(server: Arc<Server>) -> anyhow::Result<()> {
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    AgentRole
        .v1()
        .name("eonyx")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                *lock(&s1.client) = req.client_capabilities.clone();
                responder.respond(initialize_response())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx| {
                let opening = Opening {
                    cwd: req.cwd,
                    mcp_servers: req.mcp_servers,
                    choice: SessionChoice::New,
                    replay: false,
                };
                s2.open_and_respond(Ok(opening), responder, cx, |s| {
                    NewSessionResponse::new(s.acp_id()).modes(s.modes())
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| {
                // The one difference from session/resume: the history is
                // streamed before the answer.
                let opening = stored(&req.session_id, req.cwd, req.mcp_servers)
                    .map(|o| Opening { replay: true, ..o });
                s3.open_and_respond(opening, responder, cx, |s| {
                    LoadSessionResponse::new().modes(s.modes())
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, cx| {
                let opening = stored(&req.session_id, req.cwd, req.mcp_servers);
                s4.open_and_respond(opening, responder, cx, |s| {
                    ResumeSessionResponse::new().modes(s.modes())
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ForkSessionRequest, responder, cx| {
                let server = s5.clone();
                s5.spawn(async move {
                    let opened = server.fork(req, &cx).await;
                    let result = opened
                        .as_ref()
                        .map(|s| ForkSessionResponse::new(s.acp_id()).modes(s.modes()))
                        .map_err(Clone::clone);
                    respond_then(responder.respond_with_result(result), opened.ok(), &cx);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, _cx| {
                responder.respond_with_result(s6.list(&req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx| {
                let session = match s7.session(&req.session_id) {
                    Ok(s) => s,
                    Err(e) => return responder.respond_with_error(e),
                };
                // Taken here, in the dispatch loop: a cancel right behind
                // the prompt finds it.
                let ticket = session.begin_prompt();
                s7.spawn(async move {
                    let result = session.prompt(ticket, req.prompt, &cx).await;
                    let _ = responder.respond_with_result(result);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx| {
                let result = s8
                    .session(&req.session_id)
                    .and_then(|s| s.set_mode(&req.mode_id, &cx))
                    .map(|()| SetSessionModeResponse::new());
                responder.respond_with_result(result)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                if let Ok(s) = s9.session(&n.session_id) {
                    s.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(|e| anyhow::anyhow!("the ACP connection failed: {e}"))
}

/// After a session response went out: tell the client the commands of the
/// session it opened (the notification must follow the response, which
/// names the session).
fn respond_then(sent: Result<(), Error>, opened: Option<Arc<Session>>, cx: &ConnectionTo<Client>) {
    if let (Ok(()), Some(s)) = (sent, opened) {
        s.announce_commands(cx);
    }
}

fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .fork(SessionForkCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new("eonyx", env!("CARGO_PKG_VERSION")).title("eonyx"))
}

/// The eonyx session an ACP session id names, or invalid params.
pub(crate) fn parse_id(id: &AcpSessionId) -> Result<SessionId, Error> {
    SessionId::parse(&id.0).map_err(|e| {
        crate::session::error(
            agent_client_protocol::ErrorCode::INVALID_PARAMS,
            format!("unknown session {}: {e}", id.0),
        )
    })
}

/// How `session/load` and `session/resume` open the stored session an ACP
/// id names (without replaying its history).
pub(crate) fn stored(
    id: &AcpSessionId,
    cwd: PathBuf,
    mcp_servers: Vec<McpServer>,
) -> Result<Opening, Error> {
    Ok(Opening {
        cwd,
        mcp_servers,
        choice: SessionChoice::Id(parse_id(id)?),
        replay: false,
    })
}

impl Server {
    fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(work);
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    fn all(&self) -> Vec<Arc<Session>> {
        lock(&self.sessions).values().cloned().collect()
    }

    /// The open session `id`; a prompt for an unknown one is an error,
    /// never a new session.
    pub fn session(&self, id: &AcpSessionId) -> Result<Arc<Session>, Error> {
        lock(&self.sessions).get(&*id.0).cloned().ok_or_else(|| {
            crate::session::error(
                agent_client_protocol::ErrorCode::INVALID_PARAMS,
                format!(
                    "unknown session {}: open it with session/new or session/load first",
                    id.0
                ),
            )
        })
    }

    /// Open `opening` in a task of its own, answer with `reply` of the
    /// opened session (or the error), then announce the commands.
    fn open_and_respond<T: JsonRpcResponse + Send + 'static>(
        self: &Arc<Self>,
        opening: Result<Opening, Error>,
        responder: Responder<T>,
        cx: ConnectionTo<Client>,
        reply: impl FnOnce(&Session) -> T + Send + 'static,
    ) {
        let server = self.clone();
        self.spawn(async move {
            let opened = match opening {
                Ok(opening) => server.open(opening, &cx).await,
                Err(e) => Err(e),
            };
            let result = opened.as_ref().map(|s| reply(s)).map_err(Clone::clone);
            respond_then(responder.respond_with_result(result), opened.ok(), &cx);
        });
    }

    /// Open (new, load, resume) a session and keep it. An id open already
    /// in this process is closed first (its turn cancelled), so a client
    /// reloading a session gets it fresh.
    async fn open(
        self: &Arc<Self>,
        opening: Opening,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, Error> {
        if let SessionChoice::Id(id) = &opening.choice {
            crate::session::ensure_exists(id)?;
            let old = lock(&self.sessions).remove(id.as_str());
            if let Some(old) = old {
                old.close().await;
            }
        }
        let client = lock(&self.client).clone();
        let cwd = opening.cwd.clone();
        let session = Session::open(&self.opts, &client, opening, cx).await?;
        lock(&self.sessions).insert(session.acp_id().0.to_string(), session.clone());
        self.mine(&session, cwd).await;
        Ok(session)
    }

    /// Start the background mining pass with the first session opened
    /// (its project and config); later, show what it reported.
    async fn mine(&self, session: &Session, cwd: std::path::PathBuf) {
        use std::sync::atomic::Ordering;
        if !self.mining_started.swap(true, Ordering::SeqCst)
            && let Ok(cwd) = camino::Utf8PathBuf::from_path_buf(cwd)
            && let Some(config) = session.config().await
        {
            let opts = eonyx_agent::mining::MineOptions {
                cwd,
                env: eonyx_core::paths::Env::from_process(),
                model: self.opts.model.clone(),
                profile: self.opts.profile.clone(),
                provider: None,
            };
            match eonyx_agent::mining::startup_notes(&config, &opts) {
                Ok(notes) => {
                    for l in &notes.learned {
                        crate::diag(&format!(
                            "learned from session {} \"{}\": [{}] ({}) {}",
                            l.session, l.title, l.entry, l.scope, l.text
                        ));
                    }
                }
                Err(e) => crate::diag(&format!("memory mining: {e}")),
            }
            *lock(&self.mining) = eonyx_agent::mining::start_background(&config, opts);
        }
        if let Some(h) = lock(&self.mining).as_mut() {
            for e in h.drain() {
                if let eonyx_agent::mining::MiningEvent::Warning(w) = e {
                    crate::diag(&format!("memory mining: {w}"));
                }
            }
        }
    }

    /// `session/fork`: a copy of the session's history in a new session
    /// (the store's fork), opened like `session/new`.
    async fn fork(
        self: &Arc<Self>,
        req: ForkSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, Error> {
        let id = parse_id(&req.session_id)?;
        crate::session::ensure_exists(&id)?;
        let forked = crate::session::fork_in_store(&id)?;
        let opening = Opening {
            cwd: req.cwd,
            mcp_servers: req.mcp_servers,
            choice: SessionChoice::Id(forked),
            replay: false,
        };
        self.open(opening, cx).await
    }

    /// `session/list`: the store's sessions (not tasks' children), newest
    /// first, those of `cwd`'s project when given.
    fn list(&self, req: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let list = crate::session::list_store()?;
        let project = req.cwd.as_ref().and_then(|c| {
            camino::Utf8Path::from_path(c).map(|c| eonyx_config::paths::find_project(c).root)
        });
        let sessions = list
            .into_iter()
            .filter(|s| s.parent.is_none())
            .filter(|s| project.as_ref().is_none_or(|p| s.project == p.as_str()))
            .map(|s| {
                SessionInfo::new(s.id.as_str().to_owned(), s.cwd.clone())
                    .title(s.title.clone())
                    .updated_at(s.last_activity.clone())
            })
            .collect();
        Ok(ListSessionsResponse::new(sessions))
    }

    /// stdin closed: stop every turn like Ctrl-C and wait for the session
    /// files to be complete.
    async fn shutdown(&self) {
        for s in self.all() {
            s.cancel();
        }
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        for t in tasks {
            let _ = t.await;
        }
        let sessions = std::mem::take(&mut *lock(&self.sessions));
        for s in sessions.into_values() {
            s.close().await;
        }
    }
}
