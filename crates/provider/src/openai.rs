//! OpenAI Chat Completions compatible client (OpenAI, OpenRouter, Ollama,
//! vLLM, LM Studio, llama.cpp's llama-server).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use eonyx_core::NativeProvider;
use eonyx_core::config::OpenAiApi;
use eonyx_core::message::{Content, Message, Part, ReasoningApi, Role, ToolCall};
use eonyx_core::provider::{BoxFuture, NativeError, NativeOutcome, RequestQuirks, ServerLimits};
use eonyx_core::{
    ChatRequest, ChatResponse, FinishReason, ModelConfig, Provider, ProviderError, StreamEvent,
};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::http::{Attempt, Http, RetryPolicy, send_learning};
use crate::responses::{ResponsesDecoder, image_url};
use crate::sse;
use crate::wire::{Arguments, decode};
pub use stream::OpenAiDecoder;

mod stream;
pub(crate) mod wire;

/// Client for `POST {base_url}/chat/completions`.
#[derive(Debug)]
pub struct OpenAiProvider {
    model: ModelConfig,
    http: Http,
    /// Set once the server refused `stream: true`.
    no_stream: AtomicBool,
    /// Request-shape changes learned from refused parameters.
    quirks: Mutex<RequestQuirks>,
    /// Ollama's default window (`OLLAMA_CONTEXT_LENGTH`, else 4096).
    ollama_default: u64,
}

impl OpenAiProvider {
    /// A client for `model`; `key` is the API key (none for local servers:
    /// no `Authorization` header is sent).
    pub fn new(model: ModelConfig, key: Option<String>) -> Result<Self, ProviderError> {
        let http = Http::new(&model, key)?;
        Ok(Self {
            model,
            http,
            no_stream: AtomicBool::new(false),
            quirks: Mutex::new(RequestQuirks::default()),
            ollama_default: crate::limits::OLLAMA_DEFAULT_CONTEXT,
        })
    }

    /// Ollama's default window when a model sets no `num_ctx`
    /// (`OLLAMA_CONTEXT_LENGTH` when eonyx can see it).
    pub fn with_ollama_default(mut self, n: u64) -> Self {
        self.ollama_default = n;
        self
    }

    fn current_quirks(&self) -> RequestQuirks {
        *self
            .quirks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replace the retry policy (tests and benchmarks use short delays).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.http.retry = policy;
        self
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.model.base_url.trim_end_matches('/'))
    }

    fn authorized(
        &self,
        b: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, ProviderError> {
        Ok(match &self.http.key {
            Some(k) => b.header(AUTHORIZATION, k.header("Bearer ")?),
            None => b,
        })
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        request_body_with(&self.model, request, stream, self.current_quirks())
    }

    /// The wire this model speaks now: Responses once Chat Completions
    /// said so (remembered), else the configured or default one.
    pub fn api(&self) -> OpenAiApi {
        if self.current_quirks().responses_api {
            OpenAiApi::Responses
        } else {
            self.model.default_api()
        }
    }

    async fn attempt_inner(
        &self,
        request: &ChatRequest,
        stream: bool,
        emit: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        if self.api() == OpenAiApi::Responses {
            let url = self.url("responses");
            let body =
                crate::responses::request_body_with(&self.model, request, self.current_quirks());
            let builder = self.authorized(self.http.client.post(&url).json(&body))?;
            let resp = self.http.send(builder, &url).await?;
            return sse::drive(self.http.events(resp), ResponsesDecoder::default(), emit).await;
        }
        let url = self.url("chat/completions");
        let body = request_body_with(&self.model, request, stream, self.current_quirks());
        let builder = self.authorized(self.http.client.post(&url).json(&body))?;
        let resp = self.http.send(builder, &url).await?;
        let is_json = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !stream || is_json {
            let v = self.http.read_json(resp).await?;
            return parse_completion(&v, emit);
        }
        sse::drive(self.http.events(resp), OpenAiDecoder::default(), emit).await
    }
}

impl Attempt for OpenAiProvider {
    fn http(&self) -> &Http {
        &self.http
    }

    fn attempt<'a>(
        &'a self,
        request: &'a ChatRequest,
        stream: bool,
        emit: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.attempt_inner(request, stream, emit))
    }

    fn refuses_streaming(&self, err: &ProviderError) -> bool {
        self.api() == OpenAiApi::Chat
            && matches!(err, ProviderError::Rejected { status: 400 | 422, message }
            if message.to_lowercase().contains("stream"))
    }

    fn set_no_stream(&self) {
        self.no_stream.store(true, Ordering::Relaxed);
    }

    fn streams(&self) -> bool {
        !self.no_stream.load(Ordering::Relaxed)
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn send<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        // A refused parameter is dropped or renamed and the request sent
        // once more (at most once per parameter); a model served only by
        // the Responses API moves there, once.
        Box::pin(send_learning(self, request, on_event, 4, |quirks, err| {
            let chat = self.api() == OpenAiApi::Chat;
            if chat && crate::refusal::needs_responses_api(err) {
                return Some(RequestQuirks {
                    responses_api: true,
                    ..quirks
                });
            }
            let sent = crate::refusal::Sent {
                temperature: request.temperature.or(self.model.temperature).is_some(),
                max_tokens: chat
                    && request.max_tokens.is_some()
                    && !is_openai_api(&self.model.base_url),
                reasoning_effort: crate::responses::effort(&self.model, request, quirks).is_some(),
                reasoning_content: chat && sends_reasoning_content(request),
            };
            crate::refusal::learn(quirks, err, sent)
        }))
    }

    fn detect_limits<'a>(&'a self, model: &'a str) -> BoxFuture<'a, ServerLimits> {
        Box::pin(crate::limits::detect_openai_compatible(
            &self.http,
            &self.model.base_url,
            model,
            self.ollama_default,
        ))
    }

    fn list_models(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(crate::limits::list_models(&self.http, &self.model.base_url))
    }

    fn quirks(&self) -> RequestQuirks {
        self.current_quirks()
    }

    fn set_quirks(&self, quirks: RequestQuirks) {
        *self
            .quirks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = quirks;
    }

    /// Responses only: Chat Completions never compacts natively.
    fn native_compaction(&self) -> Option<NativeProvider> {
        (self.api() == OpenAiApi::Responses && !self.current_quirks().no_native_compaction)
            .then_some(NativeProvider::Responses)
    }

    fn compact<'a>(
        &'a self,
        request: &'a ChatRequest,
        _instructions: &'a str,
    ) -> BoxFuture<'a, Result<NativeOutcome, NativeError>> {
        Box::pin(async move {
            if self.api() != OpenAiApi::Responses {
                return Err(NativeError::Unsupported(
                    "Chat Completions has no native compaction".into(),
                ));
            }
            let url = self.url("responses/compact");
            let full =
                crate::responses::request_body_with(&self.model, request, self.current_quirks());
            let body = crate::native::responses_compact_body(&full);
            let answer = crate::native::post_json(
                &self.http,
                || self.authorized(self.http.client.post(&url).json(&body)),
                &url,
                &request.cancel,
            )
            .await?;
            crate::native::parse_responses(&self.model.name, &self.model.base_url, &answer)
        })
    }
}

/// Whether a Chat request carries `reasoning_content` on a message.
fn sends_reasoning_content(request: &ChatRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| m.reasoning.iter().any(|r| r.api == ReasoningApi::Chat))
}

/// Whether `base_url` is OpenAI's own API (not a compatible server).
fn is_openai_api(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

/// The Chat Completions body for `request`.
pub fn request_body(model: &ModelConfig, request: &ChatRequest, stream: bool) -> Value {
    request_body_with(model, request, stream, RequestQuirks::default())
}

/// The Chat Completions body for `request`, shaped by `quirks`.
pub fn request_body_with(
    model: &ModelConfig,
    request: &ChatRequest,
    stream: bool,
    quirks: RequestQuirks,
) -> Value {
    let stripped = crate::refusal::without_images(request, quirks);
    let request = stripped.as_ref().unwrap_or(request);
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let system = request.system.text();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(
        request
            .messages
            .iter()
            .map(|m| message_json(m, !quirks.no_reasoning_content)),
    );
    let name = if request.model.is_empty() {
        &model.name
    } else {
        &request.model
    };
    let mut body = json!({
        "model": name,
        "messages": messages,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }})
                })
                .collect(),
        );
        if request.no_tool_calls {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(key) = request.cache_key.as_deref()
        && is_openai_api(&model.base_url)
    {
        // Only OpenAI's own API knows this field; compatible servers may
        // reject unknown fields, so they never see it.
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(m) = request.max_tokens {
        // OpenAI's own API replaced `max_tokens` (which its newer models
        // reject); compatible servers still expect `max_tokens`.
        let key = if quirks.max_completion_tokens || is_openai_api(&model.base_url) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[key] = json!(m);
    }
    if let Some(t) = request.temperature.or(model.temperature)
        && !quirks.drop_temperature
    {
        body["temperature"] = crate::http::temperature_json(t);
    }
    if let Some(e) = crate::responses::effort(model, request, quirks) {
        body["reasoning_effort"] = json!(e.as_str());
    }
    if let Some(format) = &request.json_schema {
        // OpenAI's structured outputs; llama-server turns the same field
        // into a grammar.
        body["response_format"] = json!({"type": "json_schema", "json_schema": {
            "name": format.name,
            "schema": format.schema,
            "strict": true,
        }});
    }
    body
}

fn content_json(content: &Content) -> Value {
    match content {
        Content::Text(t) => Value::String(t.clone()),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(json!({"type": "text", "text": text})),
                    Part::Image {
                        media_type,
                        data,
                        url,
                    } => image_url(media_type.as_deref(), data.as_deref(), url.as_deref())
                        .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
                })
                .collect(),
        ),
    }
}

/// One message; an assistant message carries its Chat reasoning back as
/// `reasoning_content` (unless the server refused the field).
fn message_json(m: &Message, reasoning_content: bool) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": content_json(&m.content)}),
        Role::Assistant => {
            let text = m.content.text();
            let mut v = json!({"role": "assistant", "content": text});
            let reasoning: String = m
                .reasoning
                .iter()
                .filter(|r| r.api == ReasoningApi::Chat)
                .map(|r| r.text.as_str())
                .collect();
            if reasoning_content && !reasoning.is_empty() {
                v["reasoning_content"] = json!(reasoning);
            }
            if !m.tool_calls.is_empty() {
                if text.is_empty() {
                    v["content"] = Value::Null;
                }
                v["tool_calls"] = Value::Array(
                    m.tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {
                                "name": c.name,
                                "arguments": c.arguments_json(),
                            }})
                        })
                        .collect(),
                );
            }
            v
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content.text(),
        }),
    }
}

/// Parse a non-streaming completion body and emit the events a stream
/// would have carried.
pub(crate) fn parse_completion(
    v: &Value,
    emit: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ChatResponse, ProviderError> {
    let body: wire::Chunk = decode(v);
    if body.error {
        return Err(crate::classify::classify_stream_error(v));
    }
    let choice = body
        .choices
        .as_deref()
        .and_then(<[_]>::first)
        .ok_or_else(|| ProviderError::BadResponse {
            message: format!(
                "the response has no choices: {}",
                crate::classify::shorten(&v.to_string())
            ),
        })?;
    let msg = choice.message.as_ref();
    if let Some(r) = msg.and_then(|m| m.reasoning_text()) {
        emit(StreamEvent::ReasoningDelta(r.to_owned()));
    }
    let text = msg.and_then(|m| m.content.clone()).unwrap_or_default();
    if !text.is_empty() {
        emit(StreamEvent::TextDelta(text.clone()));
    }
    let calls: Vec<ToolCall> = msg
        .and_then(|m| m.tool_calls.as_deref())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.clone().unwrap_or_else(|| format!("call_{i}")),
            name: c.name().unwrap_or_default().to_owned(),
            arguments: match c.arguments() {
                Some(Arguments::Text(s)) => ToolCall::parse_arguments(s),
                Some(Arguments::Object(m)) => Value::Object(m.clone()),
                None => ToolCall::parse_arguments(""),
            },
        })
        .collect();
    for c in &calls {
        emit(StreamEvent::ToolCall(c.clone()));
    }
    let usage = body.usage();
    if let Some(u) = usage {
        emit(StreamEvent::Usage(u));
    }
    let finish = choice.finish_reason.as_deref().map(FinishReason::from_api);
    if let Some(f) = &finish {
        emit(StreamEvent::Finish(f.clone()));
    }
    let mut message = Message::new(Role::Assistant, Content::Text(text));
    message.tool_calls = calls;
    message.usage = usage;
    message.reasoning = stream::chat_reasoning(
        msg.and_then(|m| m.reasoning_text())
            .unwrap_or_default()
            .to_owned(),
    );
    Ok(ChatResponse {
        message,
        usage,
        finish_reason: finish,
    })
}

/// Parse a complete OpenAI Chat Completions event stream given as byte
/// chunks; returns every event a caller would have seen.
pub fn parse_openai_sse_chunks(
    chunks: &[&[u8]],
) -> Result<Vec<eonyx_core::StreamEvent>, eonyx_core::ProviderError> {
    sse::parse_chunks(chunks, OpenAiDecoder::default())
}

#[cfg(test)]
pub(crate) mod tests;
