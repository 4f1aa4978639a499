//! Response and error bodies in the exact shapes of OpenAI Chat
//! Completions, Anthropic Messages and llama.cpp.

use bytes::Bytes;
use serde_json::{Value, json};

mod responses;

/// The Anthropic `signature` the fake gives a thinking block of `text`.
pub fn signature_of(text: &str) -> String {
    format!("sig-{}", hex(text))
}

/// The Responses `encrypted_content` the fake gives reasoning `text`.
pub fn encrypted_of(text: &str) -> String {
    format!("enc-{}", hex(text))
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// A resolved reply, ready to render in either protocol.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub id: String,
    pub model: String,
    pub text: String,
    /// (id, name, arguments as a JSON string)
    pub calls: Vec<(String, String, String)>,
    pub usage: Option<Figures>,
    pub finish: Option<String>,
    /// Add llama.cpp's `timings` (`prompt_n`, `cache_n`, `predicted_n`).
    pub timings: bool,
    /// What the model reasons first.
    pub reasoning: Option<String>,
}

/// Token figures of one reply. `prompt` is the whole prompt, cached included.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Figures {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// The pieces a text is streamed in: words with their trailing space.
fn pieces(text: &str) -> Vec<&str> {
    text.split_inclusive(' ').collect()
}

/// Two halves of a string, split at a char boundary.
fn halves(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    s.split_at(mid)
}

fn sse_data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

fn sse_event(name: &str, v: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {v}\n\n"))
}

/// One Anthropic content block at `index` as its events: the start
/// holding `block`, a `content_block_delta` for each of `deltas`, the stop.
fn anthropic_block(
    out: &mut Vec<Bytes>,
    index: usize,
    block: Value,
    deltas: impl IntoIterator<Item = Value>,
) {
    out.push(sse_event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    ));
    for delta in deltas {
        out.push(sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }
    out.push(sse_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
}

impl Outcome {
    fn openai_finish(&self) -> String {
        self.finish.clone().unwrap_or_else(|| {
            if self.calls.is_empty() {
                "stop".into()
            } else {
                "tool_calls".into()
            }
        })
    }

    fn anthropic_stop(&self) -> String {
        if self.finish.as_deref() == Some("content_filter") {
            // Anthropic's word for a blocked reply.
            return "refusal".into();
        }
        self.finish.clone().unwrap_or_else(|| {
            if self.calls.is_empty() {
                "end_turn".into()
            } else {
                "tool_use".into()
            }
        })
    }

    fn openai_usage(&self) -> Option<Value> {
        self.usage.map(|u| {
            json!({
                "prompt_tokens": u.prompt,
                "completion_tokens": u.completion,
                "total_tokens": u.prompt + u.completion,
                "prompt_tokens_details": {"cached_tokens": u.cached},
            })
        })
    }

    /// llama.cpp's `timings`: `prompt_n` counts only the uncached tokens.
    fn llama_timings(&self) -> Option<Value> {
        let u = self.usage.filter(|_| self.timings)?;
        Some(json!({
            "prompt_n": u.prompt.saturating_sub(u.cached),
            "cache_n": u.cached,
            "predicted_n": u.completion,
        }))
    }

    fn openai_chunk(&self, delta: Value, finish: Option<String>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    }

    /// SSE events of a streamed Chat Completion, `[DONE]` included.
    pub fn openai_stream(&self, include_usage: bool) -> Vec<Bytes> {
        let mut out = vec![sse_data(
            &self.openai_chunk(json!({"role": "assistant", "content": ""}), None),
        )];
        for piece in pieces(self.reasoning.as_deref().unwrap_or_default()) {
            out.push(sse_data(
                &self.openai_chunk(json!({"reasoning_content": piece}), None),
            ));
        }
        for piece in pieces(&self.text) {
            out.push(sse_data(
                &self.openai_chunk(json!({"content": piece}), None),
            ));
        }
        for (index, (id, name, args)) in self.calls.iter().enumerate() {
            out.push(sse_data(&self.openai_chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            )));
            let (a, b) = halves(args);
            for part in [a, b] {
                out.push(sse_data(&self.openai_chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                    None,
                )));
            }
        }
        let mut last = self.openai_chunk(json!({}), Some(self.openai_finish()));
        if let Some(t) = self.llama_timings() {
            last["timings"] = t;
        }
        out.push(sse_data(&last));
        if include_usage && let Some(usage) = self.openai_usage() {
            out.push(sse_data(&json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self.model,
                "choices": [],
                "usage": usage,
            })));
        }
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        out
    }

    /// A non-streamed Chat Completion.
    pub fn openai_json(&self) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": if self.text.is_empty() && !self.calls.is_empty() { Value::Null } else { json!(self.text) },
        });
        if !self.calls.is_empty() {
            message["tool_calls"] = self
                .calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
                })
                .collect();
        }
        let mut out = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.openai_finish()}],
        });
        if let Some(usage) = self.openai_usage() {
            out["usage"] = usage;
        }
        if let Some(t) = self.llama_timings() {
            out["timings"] = t;
        }
        out
    }

    /// Anthropic usage: `input_tokens` excludes cache reads, as the real API does.
    fn anthropic_usage(&self, output_tokens: u64) -> Value {
        let u = self.usage.unwrap_or(Figures {
            prompt: 0,
            completion: 0,
            cached: 0,
        });
        json!({
            "input_tokens": u.prompt.saturating_sub(u.cached),
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": u.cached,
        })
    }

    fn anthropic_blocks(&self) -> Vec<Value> {
        let mut blocks = Vec::new();
        if !self.text.is_empty() || self.calls.is_empty() {
            blocks.push(json!({"type": "text", "text": self.text}));
        }
        for (id, name, args) in &self.calls {
            let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
            blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        }
        blocks
    }

    /// SSE events of a streamed Anthropic message.
    pub fn anthropic_stream(&self) -> Vec<Bytes> {
        let mut message_start = json!({
            "type": "message_start",
            "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
            },
        });
        if self.usage.is_some() {
            message_start["message"]["usage"] = self.anthropic_usage(1);
        }
        let mut out = vec![
            sse_event("message_start", &message_start),
            sse_event("ping", &json!({"type": "ping"})),
        ];
        let mut index = 0;
        if let Some(thinking) = &self.reasoning {
            let deltas = pieces(thinking)
                .into_iter()
                .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                .chain([json!({"type": "signature_delta", "signature": signature_of(thinking)})]);
            anthropic_block(
                &mut out,
                index,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            );
            index += 1;
        }
        if !self.text.is_empty() || self.calls.is_empty() {
            let deltas = pieces(&self.text)
                .into_iter()
                .map(|piece| json!({"type": "text_delta", "text": piece}));
            anthropic_block(&mut out, index, json!({"type": "text", "text": ""}), deltas);
            index += 1;
        }
        for (id, name, args) in &self.calls {
            let (a, b) = halves(args);
            let deltas =
                [a, b].map(|part| json!({"type": "input_json_delta", "partial_json": part}));
            anthropic_block(
                &mut out,
                index,
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                deltas,
            );
            index += 1;
        }
        let mut delta = json!({
            "type": "message_delta",
            "delta": {"stop_reason": self.anthropic_stop(), "stop_sequence": null},
        });
        if let Some(u) = self.usage {
            delta["usage"] = json!({"output_tokens": u.completion});
        }
        out.push(sse_event("message_delta", &delta));
        out.push(sse_event("message_stop", &json!({"type": "message_stop"})));
        out
    }

    /// A non-streamed Anthropic message.
    pub fn anthropic_json(&self) -> Value {
        let mut out = json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": self.anthropic_blocks(),
            "stop_reason": self.anthropic_stop(), "stop_sequence": null,
        });
        if let Some(u) = self.usage {
            out["usage"] = self.anthropic_usage(u.completion);
        }
        out
    }
}

/// Garbage SSE for a 200 response: one valid event, then data lines that are
/// not JSON, then the end marker.
pub(crate) fn malformed_stream(anthropic: bool) -> Vec<Bytes> {
    if anthropic {
        vec![
            sse_event(
                "message_start",
                &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
                    "role": "assistant", "content": [], "model": "fake"}}),
            ),
            Bytes::from_static(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_de\n\n"),
            Bytes::from_static(b"event: content_block_delta\ndata: this is not json at all\n\n"),
            sse_event("message_stop", &json!({"type": "message_stop"})),
        ]
    } else {
        vec![
            Bytes::from_static(b"data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"),
            Bytes::from_static(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\n\n"),
            Bytes::from_static(b"data: this is not json at all\n\n"),
            Bytes::from_static(b"data: [DONE]\n\n"),
        ]
    }
}

/// Which server's context-overflow body the OpenAI endpoint sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverflowFlavor {
    /// OpenAI: `context_length_exceeded`, "maximum context length is N tokens".
    #[default]
    OpenAi,
    /// llama.cpp's llama-server: `exceed_context_size_error` with
    /// `n_prompt_tokens` and `n_ctx`; responses carry `timings`.
    LlamaCpp,
}

/// The overflow error body for a request of `prompt` tokens over `window`.
pub(crate) fn overflow_body(
    anthropic: bool,
    flavor: OverflowFlavor,
    prompt: u64,
    window: u64,
) -> Value {
    if anthropic {
        return json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {prompt} tokens > {window} maximum")}});
    }
    match flavor {
        OverflowFlavor::OpenAi => json!({"error": {
            "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {prompt} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }}),
        OverflowFlavor::LlamaCpp => json!({"error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": window,
        }}),
    }
}

/// 401 body when the API key is missing or wrong.
pub(crate) fn auth_body(anthropic: bool) -> Value {
    if anthropic {
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    } else {
        json!({"error": {"message": "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
    }
}

/// 429 body.
pub(crate) fn rate_limit_body(anthropic: bool) -> Value {
    if anthropic {
        json!({"type": "error", "error": {"type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit"}})
    } else {
        json!({"error": {"message": "Rate limit reached for requests", "type": "requests",
            "param": null, "code": "rate_limit_exceeded"}})
    }
}

/// 500 body.
pub(crate) fn server_error_body(anthropic: bool) -> Value {
    if anthropic {
        json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})
    } else {
        json!({"error": {"message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error", "param": null, "code": null}})
    }
}
