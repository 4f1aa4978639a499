//! Anthropic Messages client (`POST {base_url}/v1/messages`, `base_url`
//! being the server root as in `ANTHROPIC_BASE_URL`; a trailing `/v1` is
//! accepted); llama-server serves the same shape at `/v1/messages`.

use eonyx_core::message::{Content, Message, Part, ReasoningApi, Role};
use std::sync::{Mutex, PoisonError};

use eonyx_core::NativeProvider;
use eonyx_core::provider::{BoxFuture, NativeError, NativeOutcome, RequestQuirks, ServerLimits};
use eonyx_core::{ChatRequest, ChatResponse, ModelConfig, Provider, ProviderError, StreamEvent};
use serde_json::{Value, json};

use crate::http::{Attempt, Http, RetryPolicy, send_learning};
use crate::sse;
pub use stream::AnthropicDecoder;

mod stream;
pub(crate) mod wire;

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` is required by the API; used when neither the request nor
/// the model config sets it.
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

/// The beta that lets Claude 4 models think between tool calls.
pub const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// Whether `name` is a Claude 4 model, which takes the interleaved-thinking
/// beta (docs/providers.md#reasoning-effort).
pub fn takes_interleaved_thinking(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["opus-4", "sonnet-4", "haiku-4", "claude-4"]
        .iter()
        .any(|m| n.contains(m))
}

/// The thinking budget of this request: the model's, unless the model
/// refused thinking. A request's own effort (the summarizer's) is not
/// applied: a changed thinking budget would drop the cached conversation.
pub(crate) fn thinking_budget(
    model: &ModelConfig,
    _request: &ChatRequest,
    quirks: RequestQuirks,
) -> Option<u64> {
    if quirks.no_reasoning_effort {
        return None;
    }
    model.thinking_budget()
}

/// Client for the Anthropic Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    model: ModelConfig,
    http: Http,
    /// Request-shape changes learned from refused parameters.
    quirks: Mutex<RequestQuirks>,
}

impl AnthropicProvider {
    /// A client for `model`; `key` goes into `x-api-key` (none: no header).
    pub fn new(model: ModelConfig, key: Option<String>) -> Result<Self, ProviderError> {
        let http = Http::new(&model, key)?;
        Ok(Self {
            model,
            http,
            quirks: Mutex::new(RequestQuirks::default()),
        })
    }

    /// Replace the retry policy (tests and benchmarks use short delays).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.http.retry = policy;
        self
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        request_body(&self.model, request)
    }

    async fn attempt_inner(
        &self,
        request: &ChatRequest,
        emit: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        let url = messages_url(&self.model.base_url);
        let quirks = self.quirks();
        let body = request_body_with(&self.model, request, quirks);
        let builder = self.builder(&url, &body, request, false)?;
        let resp = self.http.send(builder, &url).await?;
        sse::drive(self.http.events(resp), AnthropicDecoder::default(), emit).await
    }

    /// A POST of `body` to `url` with the version, beta and key headers
    /// `request` needs (`compacting`: the compaction beta even when the
    /// request carries no block yet).
    fn builder(
        &self,
        url: &str,
        body: &Value,
        request: &ChatRequest,
        compacting: bool,
    ) -> Result<reqwest::RequestBuilder, ProviderError> {
        let mut builder = self
            .http
            .client
            .post(url)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(body);
        let mut betas = Vec::new();
        if thinking_budget(&self.model, request, self.quirks()).is_some()
            && takes_interleaved_thinking(&self.model.name)
        {
            betas.push(INTERLEAVED_THINKING_BETA);
        }
        let native = compacting || crate::native::needs_anthropic_beta(request);
        if let Some(b) = crate::native::anthropic_betas(betas, native) {
            builder = builder.header("anthropic-beta", b);
        }
        if let Some(k) = &self.http.key {
            builder = builder.header("x-api-key", k.header("")?);
        }
        Ok(builder)
    }
}

impl Attempt for AnthropicProvider {
    fn http(&self) -> &Http {
        &self.http
    }

    fn attempt<'a>(
        &'a self,
        request: &'a ChatRequest,
        _stream: bool,
        emit: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.attempt_inner(request, emit))
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn send<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        // A refused parameter is dropped and the request sent once more.
        Box::pin(send_learning(self, request, on_event, 1, |quirks, err| {
            let sent = crate::refusal::Sent {
                temperature: request.temperature.or(self.model.temperature).is_some()
                    && thinking_budget(&self.model, request, quirks).is_none(),
                reasoning_effort: thinking_budget(&self.model, request, quirks).is_some(),
                ..Default::default()
            };
            crate::refusal::learn(quirks, err, sent)
        }))
    }

    fn quirks(&self) -> RequestQuirks {
        *self.quirks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_quirks(&self, quirks: RequestQuirks) {
        *self.quirks.lock().unwrap_or_else(PoisonError::into_inner) = quirks;
    }

    fn native_compaction(&self) -> Option<NativeProvider> {
        (!self.quirks().no_native_compaction).then_some(NativeProvider::Anthropic)
    }

    fn compact<'a>(
        &'a self,
        request: &'a ChatRequest,
        instructions: &'a str,
    ) -> BoxFuture<'a, Result<NativeOutcome, NativeError>> {
        Box::pin(async move {
            let url = messages_url(&self.model.base_url);
            let body = crate::native::anthropic_compact_body(
                request_body_with(&self.model, request, self.quirks()),
                instructions,
            );
            let answer = crate::native::post_json(
                &self.http,
                || self.builder(&url, &body, request, true),
                &url,
                &request.cancel,
            )
            .await?;
            crate::native::parse_anthropic(&self.model.name, &self.model.base_url, &answer)
        })
    }

    fn detect_limits<'a>(&'a self, model: &'a str) -> BoxFuture<'a, ServerLimits> {
        Box::pin(async move {
            if let Some(l) = crate::limits::anthropic_documented(model) {
                return l;
            }
            // Not a Claude model: probably llama-server's /v1/messages.
            crate::limits::detect_openai_compatible(
                &self.http,
                &self.model.base_url,
                model,
                crate::limits::OLLAMA_DEFAULT_CONTEXT,
            )
            .await
        })
    }
}

/// `<base_url>/v1/messages`: `base_url` is the server root as in
/// `ANTHROPIC_BASE_URL` and the SDKs (`https://api.anthropic.com`); a
/// trailing `/v1` is accepted.
pub fn messages_url(base_url: &str) -> String {
    format!("{}/v1/messages", crate::limits::server_root(base_url))
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The Messages body for `request`, without a temperature or images when
/// the model refused them.
pub fn request_body_with(
    model: &ModelConfig,
    request: &ChatRequest,
    quirks: RequestQuirks,
) -> Value {
    let stripped = crate::refusal::without_images(request, quirks);
    let request = stripped.as_ref().unwrap_or(request);
    let mut body = request_body(model, request);
    let budget = thinking_budget(model, request, quirks);
    if let Some(o) = body.as_object_mut() {
        if quirks.drop_temperature || budget.is_some() {
            // Thinking takes only the default temperature.
            o.remove("temperature");
        }
        if let Some(b) = budget {
            // The answer must still fit after the thinking.
            let max = o.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
            o.insert("max_tokens".into(), json!(max + b));
            o.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": b}),
            );
        }
    }
    crate::native::carry_anthropic(&mut body, request.native.as_ref());
    body
}

/// The Messages body for `request`, without thinking (see
/// [`request_body_with`]).
pub fn request_body(model: &ModelConfig, request: &ChatRequest) -> Value {
    let name = if request.model.is_empty() {
        &model.name
    } else {
        &request.model
    };
    let max_tokens = request
        .max_tokens
        .map(u64::from)
        .or(model.max_output_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({
        "model": name,
        "max_tokens": max_tokens,
        "messages": messages_json(&request.messages, request.cache_breakpoint),
        "stream": true,
    });
    let mut system = Vec::new();
    if !request.system.stable.is_empty() {
        system.push(
            json!({"type": "text", "text": request.system.stable, "cache_control": ephemeral()}),
        );
    }
    if !request.system.suffix.is_empty() {
        system.push(json!({"type": "text", "text": request.system.suffix}));
    }
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| {
                    json!({"name": t.name, "description": t.description, "input_schema": t.parameters})
                })
                .collect(),
        );
    }
    if let Some(t) = request.temperature.or(model.temperature) {
        body["temperature"] = crate::http::temperature_json(t);
    }
    body
}

fn part_blocks(content: &Content) -> Vec<Value> {
    match content {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![json!({"type": "text", "text": t})],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } if text.is_empty() => None,
                Part::Text { text } => Some(json!({"type": "text", "text": text})),
                Part::Image {
                    media_type,
                    data: Some(d),
                    ..
                } => Some(json!({"type": "image", "source": {
                    "type": "base64",
                    "media_type": media_type.as_deref().unwrap_or("image/png"),
                    "data": d,
                }})),
                Part::Image { url: Some(u), .. } => {
                    Some(json!({"type": "image", "source": {"type": "url", "url": u}}))
                }
                Part::Image { .. } => None,
            })
            .collect(),
    }
}

/// An assistant message's Anthropic thinking, unchanged and signed, as
/// the first blocks of its content.
fn thinking_blocks(m: &Message) -> Vec<Value> {
    m.reasoning
        .iter()
        .filter(|r| r.api == ReasoningApi::Anthropic)
        .map(|r| match &r.redacted {
            Some(data) => json!({"type": "redacted_thinking", "data": data}),
            None => json!({
                "type": "thinking",
                "thinking": r.text,
                "signature": r.signature.clone().unwrap_or_default(),
            }),
        })
        .collect()
}

/// Map messages: tool calls become `tool_use` blocks, consecutive tool
/// results one user message of `tool_result` blocks. The last block of the
/// last message carries a cache breakpoint, so the conversation prefix is
/// cached too; with `breakpoint = Some(n)` it goes on the message that
/// holds `messages[n - 1]` instead (what follows is not cached).
fn messages_json(messages: &[Message], breakpoint: Option<usize>) -> Value {
    if let Some(n) = breakpoint.filter(|n| *n > 0 && *n < messages.len()) {
        let mut head = match messages_json(&messages[..n], None) {
            Value::Array(v) => v,
            _ => Vec::new(),
        };
        let tail = match messages_json(&messages[n..], None) {
            Value::Array(v) => v,
            _ => Vec::new(),
        };
        for mut m in tail {
            if let Some(c) = m
                .get_mut("content")
                .and_then(Value::as_array_mut)
                .and_then(|c| c.last_mut())
                .and_then(Value::as_object_mut)
            {
                c.remove("cache_control");
            }
            head.push(m);
        }
        return Value::Array(head);
    }
    let mut out: Vec<Value> = Vec::new();
    let mut pending_results: Vec<Value> = Vec::new();
    for m in messages {
        if m.role == Role::Tool {
            let blocks = part_blocks(&m.content);
            let mut r = json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
            });
            if m.is_error {
                r["is_error"] = Value::Bool(true);
            }
            if !blocks.is_empty() {
                r["content"] = Value::Array(blocks);
            }
            pending_results.push(r);
            continue;
        }
        if !pending_results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut pending_results)}));
        }
        let mut blocks = if m.role == Role::Assistant {
            thinking_blocks(m)
        } else {
            Vec::new()
        };
        blocks.extend(part_blocks(&m.content));
        if m.role == Role::Assistant {
            for c in &m.tool_calls {
                let input = match &c.arguments {
                    Value::Object(_) => c.arguments.clone(),
                    Value::Null => json!({}),
                    // Arguments the model sent as invalid JSON: keep them visible.
                    other => json!({"arguments": other}),
                };
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
        }
        if blocks.is_empty() {
            // The API rejects empty content; an empty turn carries nothing.
            continue;
        }
        let role = if m.role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        out.push(json!({"role": role, "content": blocks}));
    }
    if !pending_results.is_empty() {
        out.push(json!({"role": "user", "content": pending_results}));
    }
    if let Some(last) = out
        .last_mut()
        .and_then(|m| m.get_mut("content"))
        .and_then(Value::as_array_mut)
        .and_then(|c| c.last_mut())
    {
        last["cache_control"] = ephemeral();
    }
    Value::Array(out)
}

/// Parse a complete Anthropic Messages event stream given as byte chunks.
pub fn parse_anthropic_sse_chunks(
    chunks: &[&[u8]],
) -> Result<Vec<eonyx_core::StreamEvent>, eonyx_core::ProviderError> {
    sse::parse_chunks(chunks, AnthropicDecoder::default())
}

#[cfg(test)]
mod tests;
