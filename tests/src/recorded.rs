//! What the fake server saw: one [`RecordedRequest`] per HTTP request.

use std::collections::BTreeMap;

use eonyx_core::provider::{SUMMARIZER_INSTRUCTION_PREFIX, SUMMARIZER_SYSTEM_PREFIX};
use serde_json::Value;

/// One request as received, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path without the query string, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lowercased; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The parsed JSON body; `Value::Null` when the body is empty or not JSON.
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
    /// The fake's token count of the prompt (0 for non-chat requests).
    pub prompt_tokens: u64,
}

impl RecordedRequest {
    /// A header value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// `true` for `POST /v1/messages`.
    pub fn is_anthropic(&self) -> bool {
        self.path.ends_with("/messages")
    }

    /// `true` for a chat request (OpenAI Chat Completions or Responses, or
    /// Anthropic).
    pub fn is_chat(&self) -> bool {
        self.method == "POST"
            && !self.is_native_compaction()
            && (self.path.ends_with("/chat/completions")
                || self.path.ends_with("/messages")
                || self.is_responses())
    }

    /// `true` for a provider-native compaction call: OpenAI's `POST
    /// /responses/compact`, or an Anthropic Messages request with a
    /// top-level `compaction` (not a chat request).
    pub fn is_native_compaction(&self) -> bool {
        self.method == "POST"
            && (self.path.ends_with("/responses/compact")
                || (self.path.ends_with("/messages") && self.body.get("compaction").is_some()))
    }

    /// `true` for `POST /v1/responses` (OpenAI's Responses API).
    pub fn is_responses(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/responses")
    }

    /// The Responses `input` items as sent (also of a `/responses/compact`
    /// call; empty for other requests).
    pub fn input(&self) -> Vec<Value> {
        self.body
            .get("input")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// The `model` field.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// Whether the client asked for a stream.
    pub fn stream(&self) -> bool {
        self.body
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `max_tokens` (or OpenAI's `max_completion_tokens`, or the Responses
    /// API's `max_output_tokens`).
    pub fn max_tokens(&self) -> Option<u64> {
        self.body
            .get("max_tokens")
            .or_else(|| self.body.get("max_completion_tokens"))
            .or_else(|| self.body.get("max_output_tokens"))
            .and_then(Value::as_u64)
    }

    /// `temperature`.
    pub fn temperature(&self) -> Option<f64> {
        self.body.get("temperature").and_then(Value::as_f64)
    }

    /// The `messages` array as sent (for OpenAI this includes system
    /// messages); a Responses request's `instructions` and `input` as the
    /// Chat Completions messages they stand for.
    pub fn messages(&self) -> Vec<Value> {
        if self.is_responses() {
            return responses_as_messages(&self.body);
        }
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// The non-system messages' roles in order.
    pub fn roles(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter_map(|m| m.get("role").and_then(Value::as_str))
            .filter(|r| *r != "system" && *r != "developer")
            .map(str::to_owned)
            .collect()
    }

    /// Every message but the `system` ones, each as its JSON text,
    /// concatenated: to check what no message holds any more.
    pub fn non_system_json(&self) -> String {
        self.messages()
            .iter()
            .filter(|m| m["role"] != "system")
            .map(|m| m.to_string())
            .collect()
    }

    /// The system prompt as one string: Anthropic's `system` (string or the
    /// text of its blocks, concatenated), or the content of OpenAI's
    /// `system`/`developer` messages joined with blank lines.
    pub fn system_text(&self) -> String {
        if let Some(i) = self.body.get("instructions").and_then(Value::as_str) {
            return i.to_owned();
        }
        if let Some(system) = self.body.get("system") {
            return content_text(system);
        }
        self.messages()
            .iter()
            .filter(|m| {
                matches!(
                    m.get("role").and_then(Value::as_str),
                    Some("system" | "developer")
                )
            })
            .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Anthropic `system` blocks as sent (empty for a string or OpenAI).
    pub fn system_blocks(&self) -> Vec<Value> {
        self.body
            .get("system")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// The `tools` array as sent.
    pub fn tools(&self) -> Vec<Value> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// The names of the tools offered (OpenAI `function.name` or Anthropic `name`).
    pub fn tool_names(&self) -> Vec<String> {
        self.tools()
            .iter()
            .filter_map(|t| {
                t.pointer("/function/name")
                    .or_else(|| t.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    /// Text of every user message in order (tool results excluded).
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(|m| user_text(m.get("content").unwrap_or(&Value::Null)))
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Text of every tool result message, in order (a content that is not
    /// a string as its JSON text).
    pub fn tool_results(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    }

    /// Text of the last user message that has text.
    pub fn last_user_text(&self) -> Option<String> {
        self.user_texts().pop()
    }

    /// Every string in the system prompt and messages, joined with newlines
    /// (for "did the model see this fact" assertions).
    pub fn all_text(&self) -> String {
        let mut out = Vec::new();
        for key in ["system", "instructions", "messages", "input"] {
            if let Some(v) = self.body.get(key) {
                collect_strings(v, &mut out);
            }
        }
        out.join("\n")
    }

    /// Whether this looks like a compaction request: the system prompt
    /// starts with eonyx's summarizer marker (the transcript summarizer),
    /// or the last message is a user message starting with the
    /// instruction marker (the shared-prefix summarizer).
    pub fn is_summarizer(&self) -> bool {
        self.is_chat()
            && (self
                .system_text()
                .trim_start()
                .starts_with(SUMMARIZER_SYSTEM_PREFIX)
                || self.is_shared_prefix_summarizer())
    }

    /// Whether this is a memory-mining request (docs/memory.md#mining): its
    /// system prompt starts with eonyx's miner marker.
    pub fn is_miner(&self) -> bool {
        self.is_chat()
            && self
                .system_text()
                .trim_start()
                .starts_with(eonyx_core::MINER_SYSTEM_PREFIX)
    }

    /// Whether this is a shared-prefix compaction request: the
    /// conversation's own request plus one user message that starts with
    /// eonyx's instruction marker.
    pub fn is_shared_prefix_summarizer(&self) -> bool {
        self.is_chat()
            && self.messages().last().is_some_and(|m| {
                m.get("role").and_then(Value::as_str) == Some("user")
                    && user_text(m.get("content").unwrap_or(&Value::Null))
                        .starts_with(SUMMARIZER_INSTRUCTION_PREFIX)
            })
    }
}

/// A Responses body as Chat Completions messages: `instructions` as the
/// system message, `input_text` parts as `text`, assistant text, function
/// calls (each its own assistant message) and their outputs; reasoning
/// items are left out.
fn responses_as_messages(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(i) = body.get("instructions").and_then(Value::as_str) {
        out.push(serde_json::json!({"role": "system", "content": i}));
    }
    for item in body
        .get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                let content = match item.get("content") {
                    Some(Value::Array(parts)) => Value::Array(
                        parts
                            .iter()
                            .map(|p| match p.get("type").and_then(Value::as_str) {
                                Some("input_text" | "output_text") => {
                                    serde_json::json!({"type": "text", "text": p.get("text").cloned().unwrap_or_default()})
                                }
                                Some("input_image") => {
                                    serde_json::json!({"type": "image_url", "image_url": {"url": p.get("image_url").cloned().unwrap_or_default()}})
                                }
                                _ => p.clone(),
                            })
                            .collect(),
                    ),
                    Some(other) => other.clone(),
                    None => Value::Null,
                };
                out.push(serde_json::json!({"role": role, "content": content}));
            }
            "function_call" => out.push(serde_json::json!({"role": "assistant", "content": null,
                "tool_calls": [{"id": item.get("call_id").cloned().unwrap_or_default(), "type": "function",
                    "function": {"name": item.get("name").cloned().unwrap_or_default(),
                                 "arguments": item.get("arguments").cloned().unwrap_or_default()}}]})),
            "function_call_output" => out.push(serde_json::json!({"role": "tool",
                "tool_call_id": item.get("call_id").cloned().unwrap_or_default(),
                "content": item.get("output").cloned().unwrap_or_default()})),
            _ => {}
        }
    }
    out
}

/// Text of a content value: a string, or the `text` of each block joined.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Like [`content_text`] but only `text` blocks (skips Anthropic tool results).
fn user_text(content: &Value) -> String {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str).unwrap_or("text") == "text")
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        other => content_text(other),
    }
}

/// Every string value under `v` (object keys excluded), depth first.
pub(crate) fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}
