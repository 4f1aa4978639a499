//! OpenAI Chat Completions compatible client (OpenAI, OpenRouter, Ollama,
//! vLLM, LM Studio, llama.cpp's llama-server).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use eonyx_core::message::{Content, Message, Part, Role, ToolCall};
use eonyx_core::provider::{BoxFuture, RequestQuirks, ServerLimits};
use eonyx_core::{
    ChatRequest, ChatResponse, FinishReason, ModelConfig, Provider, ProviderError, StreamEvent,
};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Value, json};

use crate::http::{Attempt, Http, RetryPolicy, send_with_retries};
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

    async fn attempt_inner(
        &self,
        request: &ChatRequest,
        stream: bool,
        emit: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ChatResponse, ProviderError> {
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
        matches!(err, ProviderError::Rejected { status: 400 | 422, message }
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
        Box::pin(async move {
            // A refused parameter is dropped or renamed and the request
            // sent once more (at most once per parameter).
            for _ in 0..2 {
                let err = match send_with_retries(self, request, &mut *on_event).await {
                    Err(e) => e,
                    ok => return ok,
                };
                let sent_temperature = request.temperature.or(self.model.temperature).is_some();
                let sent_max_tokens =
                    request.max_tokens.is_some() && !is_openai_api(&self.model.base_url);
                match crate::refusal::learn(
                    self.current_quirks(),
                    &err,
                    sent_temperature,
                    sent_max_tokens,
                ) {
                    Some(q) => self.set_quirks(q),
                    None => return Err(err),
                }
            }
            send_with_retries(self, request, on_event).await
        })
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
    messages.extend(request.messages.iter().map(message_json));
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
    body
}

fn image_url(media_type: Option<&str>, data: Option<&str>, url: Option<&str>) -> Option<String> {
    match (data, url) {
        (Some(d), _) => Some(format!(
            "data:{};base64,{d}",
            media_type.unwrap_or("image/png")
        )),
        (None, Some(u)) => Some(u.to_owned()),
        (None, None) => None,
    }
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

fn message_json(m: &Message) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": content_json(&m.content)}),
        Role::Assistant => {
            let text = m.content.text();
            let mut v = json!({"role": "assistant", "content": text});
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
pub(crate) mod tests {
    use super::*;
    use eonyx_core::config::ProviderKind;
    use eonyx_core::{SystemPrompt, ToolDef};

    /// A request with every kind of content: tools, tool calls and results,
    /// an image, a multi-part user message.
    pub(crate) fn rich_request() -> ChatRequest {
        let mut call = Message::assistant("I'll read it.");
        call.tool_calls = vec![
            ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "src/lib.rs"}),
            },
            ToolCall {
                id: "call_2".into(),
                name: "list_dir".into(),
                arguments: json!({"path": "."}),
            },
        ];
        let mut tool_only = Message::new(Role::Assistant, Content::Text(String::new()));
        tool_only.tool_calls = vec![ToolCall {
            id: "call_3".into(),
            name: "grep".into(),
            arguments: ToolCall::parse_arguments("{broken"),
        }];
        let mut req = ChatRequest::new(
            "gemma-3-270m",
            SystemPrompt {
                stable: "You are eonyx.\n\n# Project context: AGENTS.md\nUse tabs.".into(),
                suffix: "Current date (UTC): 2026-07-05".into(),
            },
            vec![
                Message::new(
                    Role::User,
                    Content::Parts(vec![
                        Part::Text {
                            text: "What is in this screenshot?".into(),
                        },
                        Part::Image {
                            media_type: Some("image/png".into()),
                            data: Some("iVBORw0KGgo=".into()),
                            url: None,
                        },
                        Part::Image {
                            media_type: None,
                            data: None,
                            url: Some("https://example.com/a.jpg".into()),
                        },
                    ]),
                ),
                call,
                Message::tool_result("call_1", "pub fn main() {}"),
                Message::tool_result("call_2", "src/\nCargo.toml"),
                tool_only,
                Message::tool_result("call_3", "error: invalid arguments"),
                Message::user("Thanks. Summarize."),
            ],
        );
        req.tools = vec![ToolDef {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }];
        req.max_tokens = Some(256);
        req.temperature = Some(0.2);
        req
    }

    #[test]
    fn output_cap_key_follows_the_server() {
        let mut model = ModelConfig::with_defaults("m", ProviderKind::Openai);
        let body = request_body(&model, &rich_request(), true);
        assert_eq!(body["max_completion_tokens"], 256);
        assert!(body.get("max_tokens").is_none());
        model.base_url = "http://127.0.0.1:8080/v1".into();
        let body = request_body(&model, &rich_request(), true);
        assert_eq!(body["max_tokens"], 256);
        assert!(body.get("max_completion_tokens").is_none());
        assert!(is_openai_api("https://API.openai.com/v1/"));
        assert!(!is_openai_api("https://api.openai.com.evil.example/v1"));
        assert!(!is_openai_api("https://openrouter.ai/api/v1"));
    }

    #[test]
    fn summarizer_flags_map_to_tool_choice_and_cache_key_only_where_accepted() {
        let mut req = rich_request();
        req.no_tool_calls = true;
        req.cache_key = Some("20260705T091500-1a2b3c4d".into());
        let mut model = ModelConfig::with_defaults("m", ProviderKind::Openai);
        let body = request_body(&model, &req, true);
        assert_eq!(body["tool_choice"], "none");
        assert_eq!(body["prompt_cache_key"], "20260705T091500-1a2b3c4d");
        // The tools are still sent, byte for byte as without the flag.
        let plain = request_body(&model, &rich_request(), true);
        assert_eq!(body["tools"], plain["tools"]);
        assert!(plain.get("tool_choice").is_none());
        // A compatible server never sees the key.
        model.base_url = "http://127.0.0.1:8080/v1".into();
        let body = request_body(&model, &req, true);
        assert!(body.get("prompt_cache_key").is_none());
        assert_eq!(body["tool_choice"], "none");
    }

    #[test]
    fn request_json_shape() {
        let model = ModelConfig::with_defaults("local", ProviderKind::Openai);
        let body = request_body(&model, &rich_request(), true);
        // Keys sorted whatever serde_json's `preserve_order` says.
        let mut body = body;
        body.sort_all_objects();
        insta::assert_snapshot!(serde_json::to_string_pretty(&body).unwrap());
    }

    #[test]
    fn a_model_that_refused_images_gets_a_note_in_their_place() {
        let model = ModelConfig::with_defaults("local", ProviderKind::Openai);
        let quirks = RequestQuirks {
            no_images: true,
            ..Default::default()
        };
        let body = request_body_with(&model, &rich_request(), true, quirks);
        let content = &body["messages"][1]["content"];
        assert_eq!(content[0]["text"], "What is in this screenshot?");
        for i in [1, 2] {
            assert_eq!(content[i]["type"], "text");
            assert_eq!(content[i]["text"], crate::refusal::IMAGE_NOT_SENT);
        }
        assert!(!body.to_string().contains("image_url"), "{body}");
        // Everything else is as without the quirk.
        let plain = request_body(&model, &rich_request(), true);
        assert_eq!(body["messages"][2], plain["messages"][2]);
        assert_eq!(body["tools"], plain["tools"]);
    }

    #[test]
    fn non_streaming_body_is_parsed_and_emitted() {
        let v: Value = serde_json::from_str(
            r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#,
        )
        .unwrap();
        let mut events = Vec::new();
        let r = parse_completion(&v, &mut |e| events.push(e)).unwrap();
        assert_eq!(r.message.tool_calls[0].arguments, json!({"cmd": "ls"}));
        assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(r.usage.unwrap().prompt_tokens, 10);
        assert_eq!(events.len(), 3);
    }
}
