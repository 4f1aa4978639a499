//! The one place rmcp is used: [`RmcpConnector`] starts a server over
//! stdio (`stdio.rs`) or streamable HTTP (on our reqwest, rustls with
//! ring), and the connection it returns implements [`McpClient`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use camino::Utf8PathBuf;
use eonyx_core::McpServerConfig;
use eonyx_core::config::McpTransport;
use eonyx_core::paths::Env;
use eonyx_core::provider::BoxFuture;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};

use crate::client::{CallOutput, Connector, McpClient, McpError, McpTool};

mod content;
mod stdio;

/// How long a stopping stdio server gets to exit on its own.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Starts servers with rmcp.
#[derive(Debug, Clone)]
pub struct RmcpConnector {
    env: Env,
    hidden_env: Vec<String>,
    root: Utf8PathBuf,
}

impl RmcpConnector {
    /// `env` supplies `bearer_token_env_var`s; `hidden_env` (the provider
    /// key variables) is removed from a stdio server's environment; a
    /// server's relative `cwd` is relative to `root` (the project root),
    /// which is also the default.
    pub fn new(env: Env, hidden_env: Vec<String>, root: Utf8PathBuf) -> Self {
        Self {
            env,
            hidden_env,
            root,
        }
    }
}

impl Connector for RmcpConnector {
    fn connect<'a>(
        &'a self,
        server: &'a McpServerConfig,
    ) -> BoxFuture<'a, Result<Arc<dyn McpClient>, McpError>> {
        Box::pin(async move {
            let client: Arc<dyn McpClient> = match &server.transport {
                None => {
                    return Err(McpError::Start(
                        "neither `command` nor `url` is set in its config".into(),
                    ));
                }
                Some(McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                }) => {
                    let spawn = stdio::Spawn {
                        command,
                        args,
                        env,
                        cwd: cwd.as_deref(),
                        root: &self.root,
                        hidden_env: &self.hidden_env,
                    };
                    Arc::new(connect_stdio(&spawn).await?)
                }
                Some(McpTransport::Http {
                    url,
                    headers,
                    bearer_token_env_var,
                }) => {
                    let token = match bearer_token_env_var {
                        Some(var) => Some(self.env.get(var).ok_or_else(|| {
                            McpError::Start(format!(
                                "${var} (its bearer_token_env_var) is not set; export the token in that variable"
                            ))
                        })?),
                        None => None,
                    };
                    Arc::new(connect_http(url, headers, token).await?)
                }
            };
            Ok(client)
        })
    }
}

/// Receives the server's notifications; only `tools/list_changed` matters.
struct Handler {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("eonyx", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A connection made with rmcp.
struct RmcpClient {
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: Peer<RoleClient>,
    changed: Arc<AtomicBool>,
    /// The process of a stdio server.
    process: Option<stdio::Process>,
}

async fn connect_stdio(spawn: &stdio::Spawn<'_>) -> Result<RmcpClient, McpError> {
    let (process, stdout, stdin) = stdio::Process::spawn(spawn)?;
    let changed = Arc::new(AtomicBool::new(false));
    let handler = Handler {
        changed: Arc::clone(&changed),
    };
    match handler.serve((stdout, stdin)).await {
        Ok(service) => Ok(RmcpClient {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            changed,
            process: Some(process),
        }),
        Err(e) => {
            let detail = process.detail_after_exit().await;
            process.stop(Duration::ZERO).await;
            Err(McpError::Start(format!(
                "the MCP handshake failed: {e}{detail}"
            )))
        }
    }
}

async fn connect_http(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    token: Option<&str>,
) -> Result<RmcpClient, McpError> {
    // reqwest is built without a default crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("eonyx/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| McpError::Start(format!("could not set up the HTTP client: {e}")))?;
    let mut custom = HashMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| McpError::Start(format!("{k:?} is not an HTTP header name")))?;
        let mut value = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
            McpError::Start(format!(
                "the value of header {k} cannot be sent in an HTTP header"
            ))
        })?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(t) = token {
        config = config.auth_header(t);
    }
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let changed = Arc::new(AtomicBool::new(false));
    let handler = Handler {
        changed: Arc::clone(&changed),
    };
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| McpError::Start(format!("could not connect to {url}: {e}")))?;
    Ok(RmcpClient {
        peer: service.peer().clone(),
        service: Mutex::new(Some(service)),
        changed,
        process: None,
    })
}

impl RmcpClient {
    fn error(&self, e: ServiceError) -> McpError {
        match e {
            ServiceError::McpError(data) => McpError::Server(data.message.into_owned()),
            ServiceError::TransportClosed => McpError::Closed {
                detail: self.detail(),
            },
            ServiceError::TransportSend(_) if !self.alive() => McpError::Closed {
                detail: self.detail(),
            },
            other => McpError::Transport(other.to_string()),
        }
    }

    fn alive(&self) -> bool {
        !self.peer.is_transport_closed() && self.process.as_ref().is_none_or(|p| p.running())
    }

    fn detail(&self) -> String {
        self.process
            .as_ref()
            .map(stdio::Process::detail)
            .unwrap_or_default()
    }
}

impl McpClient for RmcpClient {
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<McpTool>, McpError>> {
        Box::pin(async move {
            let tools = self
                .peer
                .list_all_tools()
                .await
                .map_err(|e| self.error(e))?;
            Ok(tools
                .into_iter()
                .map(|t| McpTool {
                    name: t.name.into_owned(),
                    description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                    input_schema: Value::Object((*t.input_schema).clone()),
                })
                .collect())
        })
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
        Box::pin(async move {
            let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
            match self.peer.call_tool(params).await {
                Ok(result) => Ok(content::call_output(&result)),
                Err(e) => match self.error(e) {
                    McpError::Closed { .. } => Err(McpError::Closed {
                        detail: match &self.process {
                            Some(p) => p.detail_after_exit().await,
                            None => String::new(),
                        },
                    }),
                    other => Err(other),
                },
            }
        })
    }

    fn take_tools_changed(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst)
    }

    fn is_alive(&self) -> bool {
        self.alive()
    }

    fn end_detail(&self) -> String {
        self.detail()
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let service = self
                .service
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(s) = service {
                // Closing the transport closes the server's stdin.
                let _ = tokio::time::timeout(STOP_GRACE, s.cancel()).await;
            }
            if let Some(p) = &self.process {
                p.stop(STOP_GRACE).await;
            }
        })
    }
}
