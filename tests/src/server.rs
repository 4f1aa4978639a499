//! The fake provider server: axum on 127.0.0.1, on its own tokio runtime.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::recorded::RecordedRequest;
use crate::reply::{Reply, ReplyKind};
use crate::tokens::{cached_tokens, canonical_prompt, count_prompt_tokens, count_text_tokens};
use crate::wire::{self, Figures, Outcome, OverflowFlavor};

/// A closure consulted before the reply queue for every chat request;
/// `Some(reply)` answers the request without consuming the queue.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Option<Reply> + Send + Sync>;

struct Inner {
    queue: VecDeque<Reply>,
    default_reply: Reply,
    responder: Option<Responder>,
    context_window: Option<u64>,
    flavor: OverflowFlavor,
    props_ctx: Option<u64>,
    models_ctx: Option<u64>,
    /// `/v1/models` lists `model_id` without any window.
    list_models: bool,
    ollama: Option<Ollama>,
    refuse: Refuse,
    refusals: usize,
    truncated: usize,
    model_id: String,
    api_key: Option<String>,
    requests: Vec<RecordedRequest>,
    previous_prompt: Option<String>,
    next_id: u64,
}

/// How the fake imitates Ollama (see [`FakeServer::behave_like_ollama`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ollama {
    /// `model_info.<arch>.context_length` in `/api/show`: the training length.
    pub training: u64,
    /// `num_ctx` in `/api/show` `parameters`, when the model sets it.
    pub num_ctx: Option<u64>,
    /// `context_length` of the loaded model in `/api/ps`; `None`: not listed.
    pub ps_context: Option<u64>,
    /// List the model in `/api/ps` only once a chat request has loaded it.
    pub loads_on_first_request: bool,
    /// Prompts over this many tokens are truncated silently: the oldest
    /// messages after the system prompt are dropped and `prompt_tokens`
    /// reports what was kept. No error.
    pub runs_with: u64,
}

/// Parameters the fake refuses with OpenAI's 400 bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Refuse {
    /// Any `temperature` other than 1 (`unsupported_value`).
    pub temperature: bool,
    /// `max_tokens` (`unsupported_parameter`, "Use 'max_completion_tokens'").
    pub max_tokens: bool,
}

type Shared = Arc<Mutex<Inner>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fake OpenAI / Anthropic / llama.cpp server on `127.0.0.1:<random port>`.
///
/// It runs on its own multi-thread tokio runtime, so it works from plain
/// `#[test]` functions as well as from inside async tests. Dropping it stops
/// the server and closes every connection.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Shared,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeServer {
    /// Start a server; panics (this is test support) when it cannot bind.
    pub fn start() -> FakeServer {
        match Self::try_start() {
            Ok(server) => server,
            Err(e) => panic!("the fake provider server could not start on 127.0.0.1: {e}"),
        }
    }

    /// Start a server, reporting bind or runtime failures.
    pub fn try_start() -> std::io::Result<FakeServer> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("eonyx-fake-server")
            .enable_all()
            .build()?;
        let shared: Shared = Arc::new(Mutex::new(Inner {
            queue: VecDeque::new(),
            default_reply: Reply::default(),
            responder: None,
            context_window: None,
            flavor: OverflowFlavor::default(),
            props_ctx: None,
            models_ctx: None,
            list_models: false,
            ollama: None,
            refuse: Refuse::default(),
            refusals: 0,
            truncated: 0,
            model_id: "fake-model".into(),
            api_key: None,
            requests: Vec::new(),
            previous_prompt: None,
            next_id: 1,
        }));
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("eonyx-fake-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stop => {}
                    }
                });
                // Dropping the runtime here (outside any async context)
                // cancels every connection task and closes the sockets.
                drop(runtime);
            })?;
        Ok(FakeServer {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT` (where `/props` lives).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.shared)
    }

    /// Queue a reply; chat requests take replies in the order pushed.
    pub fn push(&self, reply: Reply) -> &Self {
        self.inner().queue.push_back(reply);
        self
    }

    /// Queue several replies.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.inner().queue.extend(replies);
        self
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        self.inner().queue.len()
    }

    /// The reply used when the queue is empty (initially `Reply::text("ok")`).
    pub fn set_default_reply(&self, reply: Reply) -> &Self {
        self.inner().default_reply = reply;
        self
    }

    /// Consult `f` before the queue for every chat request (after the auth
    /// and context-window checks); `Some(reply)` answers without consuming
    /// the queue.
    pub fn set_responder(
        &self,
        f: impl Fn(&RecordedRequest) -> Option<Reply> + Send + Sync + 'static,
    ) -> &Self {
        self.inner().responder = Some(Arc::new(f));
        self
    }

    /// Answer compaction requests ([`RecordedRequest::is_summarizer`]) with
    /// `f`, leaving the queue for the agent's own requests.
    pub fn set_summarizer(
        &self,
        f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> &Self {
        self.set_responder(move |r| r.is_summarizer().then(|| f(r)))
    }

    /// Reject prompts over `window` tokens (the fake's count) with the
    /// provider's real overflow error. `None` (the default) accepts anything.
    /// A rejected request does not consume a queued reply.
    pub fn set_context_window(&self, window: Option<u64>) -> &Self {
        self.inner().context_window = window;
        self
    }

    /// Which server `/v1/chat/completions` imitates: the overflow body it
    /// sends, and with [`OverflowFlavor::LlamaCpp`] also llama.cpp's
    /// `timings` (`prompt_n`, `cache_n`, `predicted_n`) in the last chunk or
    /// the JSON body. Anthropic's endpoint always answers like Anthropic.
    pub fn set_overflow_flavor(&self, flavor: OverflowFlavor) -> &Self {
        self.inner().flavor = flavor;
        self
    }

    /// Serve llama.cpp's `GET /props` with this `n_ctx` (`None`: 404, the default).
    pub fn advertise_props(&self, n_ctx: Option<u64>) -> &Self {
        self.inner().props_ctx = n_ctx;
        self
    }

    /// Serve `GET /v1/models` with this `context_length`/`max_model_len`
    /// (`None`: 404, the default).
    pub fn advertise_models(&self, window: Option<u64>) -> &Self {
        self.inner().models_ctx = window;
        self
    }

    /// List `model_id` at `/v1/models` without a window (as llama-server
    /// and vLLM list their one model); `advertise_models` wins when set.
    pub fn list_one_model(&self, on: bool) -> &Self {
        self.inner().list_models = on;
        self
    }

    /// Behave like Ollama: `/api/show` with the training length (and
    /// `num_ctx` when given), `/api/ps` with the loaded model's window, and
    /// silent truncation of prompts over `runs_with` tokens.
    pub fn behave_like_ollama(&self, ollama: Option<Ollama>) -> &Self {
        self.inner().ollama = ollama;
        self
    }

    /// Refuse parameters the way OpenAI's reasoning models and Azure do.
    pub fn refuse_parameters(&self, refuse: Refuse) -> &Self {
        self.inner().refuse = refuse;
        self
    }

    /// Chat requests refused for a parameter so far.
    pub fn refusals(&self) -> usize {
        self.inner().refusals
    }

    /// Chat requests truncated silently so far (Ollama mode).
    pub fn truncated(&self) -> usize {
        self.inner().truncated
    }

    /// The model id listed by `/v1/models` (default `fake-model`).
    pub fn set_model_id(&self, id: impl Into<String>) -> &Self {
        self.inner().model_id = id.into();
        self
    }

    /// Require this key: `Authorization: Bearer KEY` on the OpenAI endpoints,
    /// `x-api-key: KEY` on Anthropic's; otherwise 401 with the provider's body.
    pub fn require_api_key(&self, key: Option<&str>) -> &Self {
        self.inner().api_key = key.map(str::to_owned);
        self
    }

    /// Forget the previous prompt, so the next request has no cache hit.
    pub fn clear_prompt_cache(&self) -> &Self {
        self.inner().previous_prompt = None;
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner().requests.clone()
    }

    /// Only the chat requests (`/v1/chat/completions`, `/v1/messages`).
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.inner()
            .requests
            .iter()
            .filter(|r| r.is_chat())
            .cloned()
            .collect()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.inner().requests.last().cloned()
    }

    /// Forget the recorded requests.
    pub fn clear_requests(&self) -> &Self {
        self.inner().requests.clear();
        self
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // When `drop` returns the port is closed (works from async tests too:
        // this only joins a plain thread).
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// What to do with a chat request, decided under the lock.
enum Decision {
    Immediate(Response),
    Consult(Option<Responder>),
}

async fn handle(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut recorded_headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        recorded_headers
            .entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let mut record = RecordedRequest {
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        headers: recorded_headers,
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        body: parsed,
        prompt_tokens: 0,
    };
    let chat = record.is_chat();
    if chat {
        record.prompt_tokens = count_prompt_tokens(&record.body);
    }
    let anthropic = record.is_anthropic();

    let decision = {
        let mut inner = lock(&shared);
        inner.requests.push(record.clone());
        let refused = chat.then(|| refusal(&inner, &record)).flatten();
        match refused {
            Some(body) => {
                inner.refusals += 1;
                Decision::Immediate(json_response(StatusCode::BAD_REQUEST, &body))
            }
            None => {
                let d = decide(&inner, &record, chat, anthropic);
                if chat
                    && let Some(o) = inner.ollama
                    && record.prompt_tokens > o.runs_with
                {
                    inner.truncated += 1;
                    record.prompt_tokens = kept_tokens(&record.body, o.runs_with);
                }
                d
            }
        }
    };
    let responder = match decision {
        Decision::Immediate(response) => return response,
        Decision::Consult(responder) => responder,
    };
    let scripted = responder.and_then(|f| f(&record));
    let (reply, id, figures, model, flavor) = {
        let mut inner = lock(&shared);
        let reply = match scripted {
            Some(reply) => reply,
            None => match inner.queue.pop_front() {
                Some(reply) => reply,
                None => inner.default_reply.clone(),
            },
        };
        let id = inner.next_id;
        inner.next_id += 1;
        let canonical = canonical_prompt(&record.body);
        let cached = cached_tokens(
            inner.previous_prompt.as_deref(),
            &canonical,
            record.prompt_tokens,
        );
        inner.previous_prompt = Some(canonical);
        let figures = Figures {
            prompt: record.prompt_tokens,
            completion: 0,
            cached,
        };
        let model = record
            .model()
            .map_or_else(|| inner.model_id.clone(), str::to_owned);
        (reply, id, figures, model, inner.flavor)
    };
    render(reply, &record, anthropic, id, figures, model, flavor).await
}

fn decide(inner: &Inner, record: &RecordedRequest, chat: bool, anthropic: bool) -> Decision {
    let needs_key = chat || record.path == "/v1/models";
    if needs_key && let Some(key) = &inner.api_key {
        let ok = if anthropic {
            record.header("x-api-key") == Some(key.as_str())
        } else {
            record.header("authorization") == Some(format!("Bearer {key}").as_str())
        };
        if !ok {
            return Decision::Immediate(json_response(
                StatusCode::UNAUTHORIZED,
                &wire::auth_body(anthropic),
            ));
        }
    }
    let loaded = inner.requests.iter().any(RecordedRequest::is_chat);
    if let Some(o) = inner.ollama
        && let Some(r) = ollama_endpoint(&o, record, &inner.model_id, loaded)
    {
        return Decision::Immediate(r);
    }
    if record.method == "GET" {
        let response = match (record.path.as_str(), inner.props_ctx, inner.models_ctx) {
            ("/props", Some(n_ctx), _) => json_response(
                StatusCode::OK,
                &json!({
                    "default_generation_settings": {"n_ctx": n_ctx},
                    "total_slots": 1,
                    "model_path": "fake-model.gguf",
                }),
            ),
            ("/v1/models", _, Some(window)) => json_response(
                StatusCode::OK,
                &json!({"object": "list", "data": [{
                    "id": inner.model_id, "object": "model", "created": 0, "owned_by": "eonyx-fake",
                    "context_length": window, "max_model_len": window,
                }]}),
            ),
            ("/v1/models", _, None) if inner.list_models => json_response(
                StatusCode::OK,
                &json!({"object": "list", "data": [{
                    "id": inner.model_id, "object": "model", "created": 0, "owned_by": "llamacpp",
                    "meta": {"n_ctx_train": 131072},
                }]}),
            ),
            _ => not_found(),
        };
        return Decision::Immediate(response);
    }
    if !chat {
        return Decision::Immediate(not_found());
    }
    if let Some(window) = inner.context_window
        && record.prompt_tokens > window
    {
        return Decision::Immediate(json_response(
            StatusCode::BAD_REQUEST,
            &wire::overflow_body(anthropic, inner.flavor, record.prompt_tokens, window),
        ));
    }
    Decision::Consult(inner.responder.clone())
}

/// Ollama's `/api/show` and `/api/ps`.
fn ollama_endpoint(
    o: &Ollama,
    record: &RecordedRequest,
    model_id: &str,
    loaded: bool,
) -> Option<Response> {
    match (record.method.as_str(), record.path.as_str()) {
        ("POST", "/api/show") => {
            let mut parameters = "stop                           \"<end_of_turn>\"".to_owned();
            if let Some(n) = o.num_ctx {
                parameters.push_str(&format!("\nnum_ctx                        {n}"));
            }
            Some(json_response(
                StatusCode::OK,
                &json!({
                    "modelfile": "# Modelfile generated by \"ollama show\"",
                    "parameters": parameters,
                    "template": "{{ .Prompt }}",
                    "details": {"format": "gguf", "family": "gemma3"},
                    "model_info": {
                        "general.architecture": "gemma3",
                        "gemma3.context_length": o.training,
                        "gemma3.embedding_length": 2560,
                    },
                }),
            ))
        }
        ("GET", "/api/ps") => {
            let models: Vec<Value> = o
                .ps_context
                .filter(|_| loaded || !o.loads_on_first_request)
                .map(|n| {
                    json!({"name": format!("{model_id}:latest"), "model": format!("{model_id}:latest"),
                           "size": 1, "size_vram": 1, "context_length": n})
                })
                .into_iter()
                .collect();
            Some(json_response(StatusCode::OK, &json!({"models": models})))
        }
        _ => None,
    }
}

/// Tokens Ollama keeps of a prompt over `window`: it drops the oldest
/// messages after the system prompt until the rest fits.
fn kept_tokens(body: &Value, window: u64) -> u64 {
    let mut body = body.clone();
    loop {
        let n = count_prompt_tokens(&body);
        let Some(msgs) = body.get_mut("messages").and_then(Value::as_array_mut) else {
            return n.min(window);
        };
        let first = usize::from(msgs.first().is_some_and(|m| m["role"] == "system"));
        if n <= window || msgs.len() <= first + 1 {
            return n.min(window);
        }
        msgs.remove(first);
    }
}

/// OpenAI's 400 body when the request carries a refused parameter.
fn refusal(inner: &Inner, record: &RecordedRequest) -> Option<Value> {
    let b = &record.body;
    if inner.refuse.temperature
        && let Some(t) = b.get("temperature").and_then(Value::as_f64)
        && (t - 1.0).abs() > f64::EPSILON
    {
        return Some(json!({"error": {
            "message": format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."),
            "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}));
    }
    if inner.refuse.max_tokens && b.get("max_tokens").is_some() {
        return Some(json!({"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}));
    }
    None
}

fn not_found() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}),
    )
}

fn with_headers(mut response: Response, extra: &[(String, String)]) -> Response {
    for (name, value) in extra {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// A body that sends `chunks` (with `delay` before each one after the
/// first) and, when `reset` is set, then fails so the connection is dropped
/// without a proper end.
fn chunked_body(chunks: Vec<Bytes>, delay: Duration, reset: bool) -> Body {
    let mut items: Vec<Result<Bytes, std::io::Error>> = chunks.into_iter().map(Ok).collect();
    if reset {
        items.push(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "fake server: connection reset mid-stream",
        )));
    }
    let stream = futures_util::stream::iter(items.into_iter().enumerate()).then(
        move |(i, item)| async move {
            if item.is_err() {
                // Let the chunks before it reach the client first.
                tokio::time::sleep(Duration::from_millis(20)).await;
            } else if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            item
        },
    );
    Body::from_stream(stream)
}

async fn render(
    reply: Reply,
    record: &RecordedRequest,
    anthropic: bool,
    id: u64,
    mut figures: Figures,
    model: String,
    flavor: OverflowFlavor,
) -> Response {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let stream = record.stream();
    let (text, calls) = match &reply.kind {
        ReplyKind::Error { status, body } => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let response = (
                status,
                [(header::CONTENT_TYPE, "application/json")],
                body.clone(),
            )
                .into_response();
            return with_headers(response, &reply.headers);
        }
        ReplyKind::RateLimited { retry_after_secs } => {
            let mut response = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &wire::rate_limit_body(anthropic),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            return with_headers(response, &reply.headers);
        }
        ReplyKind::ServerError => {
            let response = json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &wire::server_error_body(anthropic),
            );
            return with_headers(response, &reply.headers);
        }
        ReplyKind::Malformed => {
            let response = if stream {
                sse_response(
                    wire::malformed_stream(anthropic),
                    reply.chunk_delay,
                    reply.reset_after,
                )
            } else {
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"id\":\"chatcmpl-fake\",\"choices\":[{\"message\":{\"content\":\"trunc",
                )
                    .into_response()
            };
            return with_headers(response, &reply.headers);
        }
        ReplyKind::Text(text) => (text.clone(), Vec::new()),
        ReplyKind::Echo => (
            record.last_user_text().unwrap_or_else(|| "ok".to_owned()),
            Vec::new(),
        ),
        ReplyKind::ToolCalls { text, calls } => (text.clone().unwrap_or_default(), calls.clone()),
    };

    let prefix = if anthropic { "toolu_fake" } else { "call_fake" };
    let calls: Vec<(String, String, String)> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                format!("{prefix}_{id}_{i}"),
                c.name.clone(),
                match &c.arguments {
                    // Raw (possibly cut) argument text.
                    Value::String(raw) => raw.clone(),
                    v => v.to_string(),
                },
            )
        })
        .collect();
    let mut generated = text.clone();
    for (_, name, args) in &calls {
        generated.push_str(name);
        generated.push_str(args);
    }
    figures.completion = count_text_tokens(&generated);
    if let Some(p) = reply.usage.prompt_tokens {
        figures.prompt = p;
    }
    if let Some(c) = reply.usage.completion_tokens {
        figures.completion = c;
    }
    if let Some(c) = reply.usage.cached_tokens {
        figures.cached = c;
    }
    let outcome = Outcome {
        id: if anthropic {
            format!("msg_fake_{id}")
        } else {
            format!("chatcmpl-fake-{id}")
        },
        model,
        text,
        calls,
        usage: (!reply.omit_usage).then_some(figures),
        finish: reply.finish_reason.clone(),
        timings: !anthropic && flavor == OverflowFlavor::LlamaCpp,
    };

    let response = if stream {
        let events = if anthropic {
            outcome.anthropic_stream()
        } else {
            let include_usage = record
                .body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            outcome.openai_stream(include_usage)
        };
        sse_response(events, reply.chunk_delay, reply.reset_after)
    } else {
        let body = if anthropic {
            outcome.anthropic_json()
        } else {
            outcome.openai_json()
        };
        match reply.reset_after {
            None => json_response(StatusCode::OK, &body),
            Some(_) => {
                let text = body.to_string();
                let half = Bytes::from(text.as_bytes()[..text.len() / 2].to_vec());
                let mut response = (
                    StatusCode::OK,
                    chunked_body(vec![half], Duration::ZERO, true),
                )
                    .into_response();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
        }
    };
    with_headers(response, &reply.headers)
}

fn sse_response(events: Vec<Bytes>, delay: Duration, reset_after: Option<usize>) -> Response {
    let (events, reset) = match reset_after {
        Some(n) => (events.into_iter().take(n).collect(), true),
        None => (events, false),
    };
    let mut response = (StatusCode::OK, chunked_body(events, delay, reset)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
