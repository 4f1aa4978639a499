//! The OpenAI Responses API request (`POST <base_url>/responses`,
//! docs/providers.md#the-responses-api): the conversation as input items,
//! `store: false`, encrypted reasoning asked back when reasoning is on, the
//! session id as `prompt_cache_key`. [`crate::OpenAiProvider`] sends it
//! when the model speaks this wire.
//!
//! Invariant: the input is a pure function of the messages, and each
//! message maps to the same items wherever it stands, so consecutive
//! requests of a session are append-only: reasoning items (which the
//! server needs back in a tool loop) go in place, before their message's
//! text and function calls, in every later request.

use eonyx_core::config::{ReasoningEffort, ReasoningSummary};
use eonyx_core::message::{Content, Message, Part, ReasoningApi, Role};
use eonyx_core::provider::RequestQuirks;
use eonyx_core::{ChatRequest, ModelConfig};
use serde_json::Value;

mod stream;
pub(crate) mod wire;

pub use stream::ResponsesDecoder;
use wire::{ContentPart, InputItem, ReasoningParam, Request, TextOut, Tool};

/// Parse a complete Responses API event stream given as byte chunks;
/// returns every event a caller would have seen.
pub fn parse_responses_sse_chunks(
    chunks: &[&[u8]],
) -> Result<Vec<eonyx_core::StreamEvent>, eonyx_core::ProviderError> {
    crate::sse::parse_chunks(chunks, ResponsesDecoder::default())
}

/// The `include` value that asks for reasoning the client can send back.
pub const INCLUDE_ENCRYPTED: &str = "reasoning.encrypted_content";

/// The effort this request asks for (OpenAI wires): for a model configured
/// with one, the request's own (the summarizer's) or else the model's;
/// `None` for a model without one or that refused the parameter.
pub(crate) fn effort(
    model: &ModelConfig,
    request: &ChatRequest,
    quirks: RequestQuirks,
) -> Option<ReasoningEffort> {
    if quirks.no_reasoning_effort {
        return None;
    }
    model
        .reasoning_effort
        .map(|m| request.reasoning_effort.unwrap_or(m))
}

/// The Responses body for `request`, shaped by `quirks`.
pub fn request_body_with(
    model: &ModelConfig,
    request: &ChatRequest,
    quirks: RequestQuirks,
) -> Value {
    let stripped = crate::refusal::without_images(request, quirks);
    let request = stripped.as_ref().unwrap_or(request);
    let name = if request.model.is_empty() {
        &model.name
    } else {
        &request.model
    };
    let system = request.system.text();
    let effort = effort(model, request, quirks);
    let reasoning_on = effort.is_some_and(|e| e != ReasoningEffort::None);
    let reasoning = effort.map(|e| ReasoningParam {
        effort: Some(e.as_str()),
        summary: (reasoning_on && model.reasoning_summary == ReasoningSummary::Auto)
            .then_some("auto"),
    });
    let body = Request {
        model: name,
        instructions: (!system.is_empty()).then_some(system),
        input: input_items(&request.messages),
        tools: request
            .tools
            .iter()
            .map(|t| Tool {
                kind: "function",
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            })
            .collect(),
        tool_choice: (request.no_tool_calls && !request.tools.is_empty()).then_some("none"),
        stream: true,
        store: false,
        include: if reasoning_on {
            vec![INCLUDE_ENCRYPTED]
        } else {
            Vec::new()
        },
        prompt_cache_key: request.cache_key.as_deref(),
        max_output_tokens: request
            .max_tokens
            .map(u64::from)
            .or(model.max_output_tokens),
        temperature: request
            .temperature
            .or(model.temperature)
            .filter(|_| !quirks.drop_temperature)
            .map(crate::http::temperature_json),
        reasoning,
    };
    let mut body = serde_json::to_value(&body).unwrap_or(Value::Null);
    crate::native::carry_responses(&mut body, request.native.as_ref());
    if let Some(format) = &request.json_schema {
        body["text"] = serde_json::json!({"format": {
            "type": "json_schema",
            "name": format.name,
            "schema": format.schema,
            "strict": true,
        }});
    }
    body
}

/// An image part's URL: a `data:` URL of its bytes (PNG when the type is
/// unknown), else its own URL; the Chat Completions client shares it.
pub(crate) fn image_url(
    media_type: Option<&str>,
    data: Option<&str>,
    url: Option<&str>,
) -> Option<String> {
    match (data, url) {
        (Some(d), _) => Some(format!(
            "data:{};base64,{d}",
            media_type.unwrap_or("image/png")
        )),
        (None, Some(u)) => Some(u.to_owned()),
        (None, None) => None,
    }
}

fn user_content(content: &Content) -> Vec<ContentPart> {
    match content {
        Content::Text(t) => vec![ContentPart::InputText { text: t.clone() }],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(ContentPart::InputText { text: text.clone() }),
                Part::Image {
                    media_type,
                    data,
                    url,
                } => image_url(media_type.as_deref(), data.as_deref(), url.as_deref())
                    .map(|image_url| ContentPart::InputImage { image_url }),
            })
            .collect(),
    }
}

/// The items of every message, in order.
pub(crate) fn input_items(messages: &[Message]) -> Vec<InputItem> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match m.role {
            Role::User => out.push(InputItem::Message {
                role: "user",
                content: user_content(&m.content),
            }),
            Role::Tool => out.push(InputItem::FunctionCallOutput {
                call_id: m.tool_call_id.clone().unwrap_or_default(),
                output: m.content.text(),
            }),
            Role::Assistant => assistant_items(m, &mut out),
        }
    }
    out
}

/// An assistant message: its Responses reasoning items (those with
/// something to send back), its text, its function calls.
fn assistant_items(m: &Message, out: &mut Vec<InputItem>) {
    for r in m
        .reasoning
        .iter()
        .filter(|r| r.api == ReasoningApi::Responses)
        .filter(|r| r.encrypted.is_some() || !r.text.is_empty())
    {
        out.push(InputItem::Reasoning {
            summary: r
                .summary
                .iter()
                .map(|s| TextOut {
                    kind: "summary_text",
                    text: s.clone(),
                })
                .collect(),
            content: if r.text.is_empty() {
                Vec::new()
            } else {
                vec![TextOut {
                    kind: "reasoning_text",
                    text: r.text.clone(),
                }]
            },
            encrypted_content: r.encrypted.clone(),
        });
    }
    let text = m.content.text();
    if !text.is_empty() {
        out.push(InputItem::Message {
            role: "assistant",
            content: vec![ContentPart::OutputText { text }],
        });
    }
    for c in &m.tool_calls {
        out.push(InputItem::FunctionCall {
            call_id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments_json(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::config::ProviderKind;
    use eonyx_core::{Reasoning, ToolCall};
    use serde_json::json;

    fn model() -> ModelConfig {
        let mut m = ModelConfig::with_defaults("codex", ProviderKind::Openai);
        m.name = "gpt-5-codex".into();
        m.reasoning_effort = Some(ReasoningEffort::High);
        m
    }

    fn tool_loop() -> Vec<Message> {
        let mut call = Message::assistant("");
        let mut r = Reasoning::new(ReasoningApi::Responses);
        r.id = Some("rs_1".into());
        r.summary = vec!["Looking at the file.".into()];
        r.encrypted = Some("gAAAA-opaque".into());
        call.reasoning = vec![r, Reasoning::new(ReasoningApi::Chat)];
        call.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        }];
        vec![
            Message::user("read a"),
            call,
            Message::tool_result("call_1", "x"),
        ]
    }

    #[test]
    fn tool_loop_goes_as_items_with_reasoning_in_place() {
        let mut req = ChatRequest::new(
            "",
            eonyx_core::SystemPrompt {
                stable: "sys".into(),
                suffix: String::new(),
            },
            tool_loop(),
        );
        req.cache_key = Some("20260705T091500-1a2b3c4d".into());
        req.max_tokens = Some(512);
        let body = request_body_with(&model(), &req, RequestQuirks::default());
        assert_eq!(
            body,
            json!({
                "model": "gpt-5-codex",
                "instructions": "sys",
                "input": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a"}]},
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Looking at the file."}],
                     "encrypted_content": "gAAAA-opaque"},
                    {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "x"},
                ],
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "20260705T091500-1a2b3c4d",
                "max_output_tokens": 512,
                "reasoning": {"effort": "high", "summary": "auto"},
            })
        );
    }

    #[test]
    fn no_effort_asks_for_nothing_and_a_refusal_drops_it() {
        let mut m = model();
        m.reasoning_effort = None;
        let req = ChatRequest::new("", Default::default(), tool_loop());
        let body = request_body_with(&m, &req, RequestQuirks::default());
        assert!(body.get("reasoning").is_none() && body.get("include").is_none());
        // The reasoning already kept still goes back.
        assert_eq!(body["input"][1]["type"], "reasoning");
        let quirks = RequestQuirks {
            no_reasoning_effort: true,
            ..Default::default()
        };
        let body = request_body_with(&model(), &req, quirks);
        assert!(body.get("reasoning").is_none());
    }
}
