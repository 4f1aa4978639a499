//! Anthropic Messages client (`POST {base_url}/v1/messages`, `base_url`
//! being the server root as in `ANTHROPIC_BASE_URL`; a trailing `/v1` is
//! accepted); llama-server serves the same shape at `/v1/messages`.

use eonyx_core::message::{Content, Message, Part, ReasoningApi, Role};
use std::sync::{Mutex, PoisonError};

use eonyx_core::provider::{BoxFuture, RequestQuirks, ServerLimits};
use eonyx_core::{ChatRequest, ChatResponse, ModelConfig, Provider, ProviderError, StreamEvent};
use serde_json::{Value, json};

use crate::http::{Attempt, Http, RetryPolicy, send_with_retries};
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
        let mut builder = self
            .http
            .client
            .post(&url)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body);
        if thinking_budget(&self.model, request, quirks).is_some()
            && takes_interleaved_thinking(&self.model.name)
        {
            builder = builder.header("anthropic-beta", INTERLEAVED_THINKING_BETA);
        }
        if let Some(k) = &self.http.key {
            builder = builder.header("x-api-key", k.header("")?);
        }
        let resp = self.http.send(builder, &url).await?;
        sse::drive(self.http.events(resp), AnthropicDecoder::default(), emit).await
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
        Box::pin(async move {
            let err = match send_with_retries(self, request, &mut *on_event).await {
                Err(e) => e,
                ok => return ok,
            };
            let quirks = self.quirks();
            let sent = crate::refusal::Sent {
                temperature: request.temperature.or(self.model.temperature).is_some()
                    && thinking_budget(&self.model, request, quirks).is_none(),
                reasoning_effort: thinking_budget(&self.model, request, quirks).is_some(),
                ..Default::default()
            };
            match crate::refusal::learn(quirks, &err, sent) {
                Some(q) => {
                    self.set_quirks(q);
                    send_with_retries(self, request, on_event).await
                }
                None => Err(err),
            }
        })
    }

    fn quirks(&self) -> RequestQuirks {
        *self.quirks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_quirks(&self, quirks: RequestQuirks) {
        *self.quirks.lock().unwrap_or_else(PoisonError::into_inner) = quirks;
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
mod tests {
    use super::*;
    use eonyx_core::config::ProviderKind;

    #[test]
    fn request_json_shape() {
        let mut model = ModelConfig::with_defaults("claude", ProviderKind::Anthropic);
        model.name = "claude-sonnet-4-5".into();
        let mut req = crate::openai::tests::rich_request();
        req.model = String::new();
        let body = request_body(&model, &req);
        // Keys sorted whatever serde_json's `preserve_order` says.
        let mut body = body;
        body.sort_all_objects();
        insta::assert_snapshot!(serde_json::to_string_pretty(&body).unwrap());
    }

    #[test]
    fn summarizer_breakpoint_goes_on_the_conversation_not_the_instruction() {
        let model = ModelConfig::with_defaults("m", ProviderKind::Anthropic);
        let plain = crate::openai::tests::rich_request();
        let n = plain.messages.len();
        let mut req = plain.clone();
        req.messages
            .push(Message::user("[eonyx compaction] summarize"));
        req.cache_breakpoint = Some(n);
        req.no_tool_calls = true;
        req.cache_key = Some("k".into());
        let body = request_body(&model, &req);
        let msgs = body["messages"].as_array().unwrap();
        let conv = request_body(&model, &plain)["messages"].clone();
        let conv = conv.as_array().unwrap();
        // The conversation part is exactly what the conversation's own
        // request sent (breakpoint included); the instruction follows, uncached.
        assert_eq!(&msgs[..conv.len()], &conv[..]);
        assert_eq!(msgs.len(), conv.len() + 1);
        let last = msgs.last().unwrap();
        assert!(last["content"][0].get("cache_control").is_none());
        assert_eq!(last["content"][0]["text"], "[eonyx compaction] summarize");
        // Tools stay, no tool_choice, no OpenAI-only field.
        assert_eq!(body["tools"], request_body(&model, &plain)["tools"]);
        assert!(body.get("tool_choice").is_none());
        assert!(body.get("prompt_cache_key").is_none());
    }

    #[test]
    fn base_url_is_the_server_root_and_a_trailing_v1_is_accepted() {
        for base in [
            "https://api.anthropic.com",
            "https://api.anthropic.com/",
            "https://api.anthropic.com/v1",
            "https://api.anthropic.com/v1/",
        ] {
            assert_eq!(
                messages_url(base),
                "https://api.anthropic.com/v1/messages",
                "{base}"
            );
        }
        assert_eq!(
            messages_url("http://localhost:4000"),
            "http://localhost:4000/v1/messages"
        );
    }

    #[test]
    fn failed_tool_results_carry_is_error() {
        let mut req = crate::openai::tests::rich_request();
        req.messages = vec![
            req.messages[1].clone(),
            Message::tool_error("call_1", "no such file"),
            Message::tool_result("call_2", "ok"),
        ];
        let body = request_body(
            &ModelConfig::with_defaults("c", ProviderKind::Anthropic),
            &req,
        );
        let results = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(results[0]["is_error"], true);
        assert!(results[1].get("is_error").is_none());
    }

    #[test]
    fn a_model_that_refused_images_gets_a_text_block_in_their_place() {
        let model = ModelConfig::with_defaults("c", ProviderKind::Anthropic);
        let quirks = RequestQuirks {
            no_images: true,
            ..Default::default()
        };
        let body = request_body_with(&model, &crate::openai::tests::rich_request(), quirks);
        let blocks = body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[1]["type"], "text");
        assert_eq!(blocks[1]["text"], crate::refusal::IMAGE_NOT_SENT);
        assert!(!body.to_string().contains("\"image\""), "{body}");
    }

    #[test]
    fn consecutive_tool_results_become_one_user_message() {
        let req = crate::openai::tests::rich_request();
        let body = request_body(
            &ModelConfig::with_defaults("c", ProviderKind::Anthropic),
            &req,
        );
        let msgs = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "user", "assistant", "user", "user"]
        );
        let results = msgs[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0]["tool_use_id"], "call_1");
        assert_eq!(results[1]["tool_use_id"], "call_2");
        assert_eq!(body["max_tokens"], 256);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert!(body["system"][1].get("cache_control").is_none());
    }

    #[test]
    fn thinking_is_sent_first_signed_with_the_budget_on_top_and_no_temperature() {
        use eonyx_core::config::ReasoningEffort;
        use eonyx_core::{Reasoning, ReasoningApi};
        let mut model = ModelConfig::with_defaults("c", ProviderKind::Anthropic);
        model.name = "claude-sonnet-4-5".into();
        model.reasoning_effort = Some(ReasoningEffort::Medium);
        let mut req = crate::openai::tests::rich_request();
        let mut t = Reasoning::new(ReasoningApi::Anthropic);
        t.text = "Two calls.".into();
        t.signature = Some("sig-1".into());
        let mut red = Reasoning::new(ReasoningApi::Anthropic);
        red.redacted = Some("opaque".into());
        req.messages[1].reasoning = vec![t, red, Reasoning::new(ReasoningApi::Chat)];
        let body = request_body_with(&model, &req, RequestQuirks::default());
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 10000})
        );
        assert_eq!(body["max_tokens"], 256 + 10000);
        assert!(body.get("temperature").is_none());
        let blocks = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(
            blocks[0],
            json!({"type": "thinking", "thinking": "Two calls.", "signature": "sig-1"})
        );
        assert_eq!(
            blocks[1],
            json!({"type": "redacted_thinking", "data": "opaque"})
        );
        assert_eq!(blocks[2]["type"], "text");
        assert!(takes_interleaved_thinking("claude-opus-4-1"));
        assert!(!takes_interleaved_thinking("claude-3-7-sonnet-latest"));
        // A direct budget wins; effort none is no thinking.
        model.thinking_budget_tokens = Some(2048);
        let body = request_body_with(&model, &req, RequestQuirks::default());
        assert_eq!(body["thinking"]["budget_tokens"], 2048);
        model.reasoning_effort = Some(ReasoningEffort::None);
        let body = request_body_with(&model, &req, RequestQuirks::default());
        assert!(body.get("thinking").is_none());
        assert_eq!(body["temperature"], 0.2);
    }

    #[test]
    fn streamed_thinking_and_redacted_blocks_are_kept_with_their_signature() {
        let s = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me think.\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n",
            "event: content_block_stop\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"xyz\"}}\n\n",
            "event: content_block_stop\n",
            "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"Done.\"}}\n\n",
            "event: message_delta\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let events = crate::parse_anthropic_sse_chunks(&[s.as_bytes()]).unwrap();
        assert_eq!(
            events[0],
            StreamEvent::ReasoningDelta("Let me think.".into())
        );
        assert_eq!(events[1], StreamEvent::TextDelta("Done.".into()));
        let mut decoder = AnthropicDecoder::default();
        let mut sink = |_e: StreamEvent| {};
        use crate::sse::Decoder;
        for chunk in s.split("\n\n").filter(|c| !c.is_empty()) {
            let mut ev = eventsource_stream::Event::default();
            for line in chunk.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    ev.event = n.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    ev.data = d.to_owned();
                }
            }
            decoder.on_event(&ev, &mut sink).unwrap();
        }
        let r = decoder.finish(&mut sink).unwrap();
        assert_eq!(r.message.reasoning.len(), 2);
        assert_eq!(r.message.reasoning[0].text, "Let me think.");
        assert_eq!(r.message.reasoning[0].signature.as_deref(), Some("EqQB"));
        assert_eq!(r.message.reasoning[1].redacted.as_deref(), Some("xyz"));
    }
}
