//! A real MCP server for the tests (rmcp's server side; test-only): over
//! stdio as the `eonyx-test-mcp` binary (`src/bin/eonyx-test-mcp.rs`), or
//! over streamable HTTP in-process ([`McpHttpServer`]), recording the
//! request headers it was sent.
//!
//! Tools: `echo {text}`; `big {bytes}` (that many bytes of numbered
//! lines); `fail {message}` (an `isError` result); `hang` (never answers);
//! `env {name?}` (its environment, `NAME=value` lines, or one variable);
//! `crash` (the process exits mid-call, stdio only); `mixed` (a text, an
//! image and a text resource); with [`TestMcpOptions::pad`], that many
//! `pad_NNN` tools with long schemas (for deferral); with
//! [`TestMcpOptions::change_tools`], a tool `added_later` appears after
//! the first call and the server says `tools/list_changed`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, EmbeddedResource, ImageContent,
    ListToolsResult, PaginatedRequestParams, ResourceContents, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::model::{CallToolResponse, Implementation};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Map, Value, json};

/// The name of the stdio binary (a `[[bin]]` of this crate).
pub const TEST_MCP_BIN: &str = "eonyx-test-mcp";

/// The path of the `eonyx-test-mcp` binary, for tests of any workspace
/// crate. `cargo test --workspace` builds every workspace binary before
/// running tests, so it is found next to the running test's own target
/// directory (`target/<profile>/`). Run alone (`cargo test -p eonyx-cli
/// --test e2e`), the binary may be missing or stale, so it is built here,
/// once per test process, with `$CARGO build -p eonyx-tests --bin
/// eonyx-test-mcp` into that same target directory; when that fails the
/// panic says which command to run.
pub fn test_mcp_bin() -> std::path::PathBuf {
    static BIN: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    match BIN.get_or_init(build_test_mcp_bin) {
        Ok(p) => p.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn build_test_mcp_bin() -> Result<std::path::PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
    let mut dir = exe
        .parent()
        .ok_or("the test binary has no directory")?
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let bin = dir.join(format!("{TEST_MCP_BIN}{}", std::env::consts::EXE_SUFFIX));
    let profile = dir
        .file_name()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let target_dir = dir
        .parent()
        .ok_or("the test binary is not in a target directory")?;
    let how = format!("cargo build -p eonyx-tests --bin {TEST_MCP_BIN}");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "eonyx-tests",
        "--bin",
        TEST_MCP_BIN,
    ])
    .arg("--target-dir")
    .arg(target_dir)
    .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd
        .status()
        .map_err(|e| format!("could not run `{how}` to build the test MCP server: {e}"))?;
    if !status.success() || !bin.exists() {
        return Err(format!(
            "the test MCP server {} is missing and `{how}` failed ({status}); run it, or run the whole suite with `cargo test --workspace`",
            bin.display()
        ));
    }
    Ok(bin)
}

/// What the test server offers and does.
#[derive(Debug, Clone, Default)]
pub struct TestMcpOptions {
    /// Extra `pad_NNN` tools with long descriptions and schemas.
    pub pad: usize,
    /// After the first call, offer `added_later` and notify the client.
    pub change_tools: bool,
}

impl TestMcpOptions {
    /// The options as command-line arguments of the binary.
    pub fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if self.pad > 0 {
            a.push("--pad".into());
            a.push(self.pad.to_string());
        }
        if self.change_tools {
            a.push("--change-tools".into());
        }
        a
    }
}

/// The server's handler.
#[derive(Clone)]
pub struct TestMcp {
    opts: TestMcpOptions,
    called: Arc<AtomicBool>,
}

impl TestMcp {
    pub fn new(opts: TestMcpOptions) -> Self {
        Self {
            opts,
            called: Arc::default(),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        let obj = |v: Value| match v {
            Value::Object(m) => Arc::new(m),
            _ => Arc::new(Map::new()),
        };
        let mut tools = vec![
            Tool::new(
                "echo",
                "Repeat the text.",
                obj(
                    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                ),
            ),
            Tool::new(
                "big",
                "Return that many bytes of numbered lines.",
                obj(json!({"type": "object", "properties": {"bytes": {"type": "integer"}}})),
            ),
            Tool::new(
                "fail",
                "Fail with an isError result.",
                obj(json!({"type": "object", "properties": {"message": {"type": "string"}}})),
            ),
            Tool::new("hang", "Never answer.", obj(json!({"type": "object"}))),
            Tool::new(
                "env",
                "Print the server's environment.",
                obj(json!({"type": "object", "properties": {"name": {"type": "string"}}})),
            ),
            Tool::new(
                "crash",
                "Exit the server mid-call.",
                obj(json!({"type": "object"})),
            ),
            Tool::new(
                "mixed",
                "A text, an image and a resource.",
                obj(json!({"type": "object"})),
            ),
        ];
        for i in 0..self.opts.pad {
            let props: Map<String, Value> = (0..8)
                .map(|p| {
                    (
                        format!("field_{p}"),
                        json!({"type": "string", "description": format!("Field {p} of padding tool {i}: {}", "lorem ipsum ".repeat(12))}),
                    )
                })
                .collect();
            tools.push(Tool::new(
                format!("pad_{i:03}"),
                format!("Padding tool number {i}, here to make the schemas big."),
                obj(json!({"type": "object", "properties": props})),
            ));
        }
        if self.opts.change_tools && self.called.load(Ordering::SeqCst) {
            tools.push(Tool::new(
                "added_later",
                "A tool that appeared after the first call.",
                obj(json!({"type": "object"})),
            ));
        }
        tools
    }
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

fn arg<'a>(args: &'a Option<Map<String, Value>>, key: &str) -> Option<&'a Value> {
    args.as_ref().and_then(|a| a.get(key))
}

impl ServerHandler for TestMcp {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder().enable_tools().build();
        if let Some(t) = caps.tools.as_mut() {
            t.list_changed = Some(self.opts.change_tools);
        }
        let mut info = ServerConfig::new(caps);
        info.server_info = Implementation::new("eonyx-test-mcp", "1");
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let first = !self.called.swap(true, Ordering::SeqCst);
        if first && self.opts.change_tools {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        let a = &request.arguments;
        let result = match request.name.as_ref() {
            "echo" => text(
                arg(a, "text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            "big" => {
                let n = arg(a, "bytes").and_then(Value::as_u64).unwrap_or(1000) as usize;
                let mut s = String::new();
                let mut i = 0;
                while s.len() < n {
                    s.push_str(&format!("line {i}\n"));
                    i += 1;
                }
                s.truncate(n);
                text(s)
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text(
                arg(a, "message")
                    .and_then(Value::as_str)
                    .unwrap_or("it failed")
                    .to_owned(),
            )]),
            "hang" => {
                std::future::pending::<()>().await;
                text("never")
            }
            "env" => match arg(a, "name").and_then(Value::as_str) {
                Some(name) => text(format!(
                    "{name}={}",
                    std::env::var(name).unwrap_or_else(|_| "(unset)".into())
                )),
                None => {
                    let mut vars: Vec<String> = std::env::vars_os()
                        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                        .collect();
                    vars.sort();
                    text(vars.join("\n"))
                }
            },
            "crash" => std::process::exit(3),
            "mixed" => CallToolResult::success(vec![
                ContentBlock::text("before"),
                ContentBlock::Image(ImageContent::new("aGVsbG8=", "image/png")),
                ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
                    "inside the resource",
                    "file:///r.txt",
                ))),
            ]),
            "added_later" => text("I am new"),
            name if name.starts_with("pad_") => text(format!("{name} ran")),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// Serve over stdin/stdout until the client goes away.
pub async fn serve_stdio(opts: TestMcpOptions) -> Result<(), String> {
    let running = TestMcp::new(opts)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// One request's headers: lower-case name and value.
pub type Headers = Vec<(String, String)>;

/// The test server over streamable HTTP on `127.0.0.1:<random port>`, on
/// its own runtime (like [`crate::FakeServer`]); it records the headers of
/// every request.
pub struct McpHttpServer {
    serving: crate::serving::Serving,
    headers: Arc<Mutex<Vec<Headers>>>,
}

impl McpHttpServer {
    /// Start it; panics (test support) when it cannot.
    pub fn start(opts: TestMcpOptions) -> Self {
        match Self::try_start(opts) {
            Ok(s) => s,
            Err(e) => panic!("the test MCP server could not start on 127.0.0.1: {e}"),
        }
    }

    fn try_start(opts: TestMcpOptions) -> std::io::Result<Self> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        let headers: Arc<Mutex<Vec<Headers>>> = Arc::default();
        let seen = Arc::clone(&headers);
        let handler = TestMcp::new(opts);
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default(),
        );
        let app =
            axum::Router::new()
                .nest_service("/mcp", service)
                .layer(axum::middleware::from_fn(
                    move |req: axum::extract::Request, next: axum::middleware::Next| {
                        let seen = Arc::clone(&seen);
                        async move {
                            let h = req
                                .headers()
                                .iter()
                                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
                                .collect();
                            seen.lock().unwrap_or_else(PoisonError::into_inner).push(h);
                            next.run(req).await
                        }
                    },
                ));
        let serving = crate::serving::Serving::start("eonyx-test-mcp-http", 1, app)?;
        Ok(Self { serving, headers })
    }

    /// `http://127.0.0.1:PORT/mcp`, the `url` to configure.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.serving.addr())
    }

    /// The headers of every request so far, lower-case names.
    pub fn request_headers(&self) -> Vec<Headers> {
        self.headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
