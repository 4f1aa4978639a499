//! The Responses API as typed values: the request body (serialized) and
//! the streamed events (read leniently, see `crate::wire`).
//!
//! Request shapes keep to what both OpenAI and llama-server's
//! `/v1/responses` accept: assistant text as a `message` item of
//! `output_text` parts, and a `reasoning` item carries a `content` array
//! whenever it has text (llama-server refuses one without it).

use eonyx_core::message::Usage as CoreUsage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::{list, opt, tagged};

/// `POST /responses` body.
#[derive(Debug, Serialize)]
pub(crate) struct Request<'a> {
    pub model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub input: Vec<InputItem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    pub stream: bool,
    /// Always `false`: eonyx keeps the history, the server keeps nothing.
    pub store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningParam>,
}

/// `reasoning: {effort, summary}`.
#[derive(Debug, Serialize)]
pub(crate) struct ReasoningParam {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<&'static str>,
}

/// A function tool: `{"type": "function", "name", "description", "parameters"}`.
#[derive(Debug, Serialize)]
pub(crate) struct Tool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputItem {
    Message {
        role: &'static str,
        content: Vec<ContentPart>,
    },
    Reasoning {
        summary: Vec<TextOut>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<TextOut>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: String,
        output: String,
    },
}

/// A part of a message item.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentPart {
    InputText { text: String },
    InputImage { image_url: String },
    OutputText { text: String },
}

/// `{"type": "summary_text" | "reasoning_text", "text": …}`.
#[derive(Debug, Serialize)]
pub(crate) struct TextOut {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
}

/// One streamed event.
#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum Event {
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        #[serde(default, deserialize_with = "opt")]
        output_index: Option<u64>,
        #[serde(default, deserialize_with = "tagged")]
        item: Item,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        #[serde(default, deserialize_with = "opt")]
        output_index: Option<u64>,
        #[serde(default, deserialize_with = "opt")]
        item: Option<Value>,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        #[serde(default, deserialize_with = "opt")]
        output_index: Option<u64>,
        #[serde(default, deserialize_with = "opt")]
        delta: Option<String>,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        #[serde(default, deserialize_with = "opt")]
        output_index: Option<u64>,
        #[serde(default, deserialize_with = "opt")]
        delta: Option<String>,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        #[serde(default, deserialize_with = "opt")]
        output_index: Option<u64>,
        #[serde(default, deserialize_with = "opt")]
        summary_index: Option<u64>,
        #[serde(default, deserialize_with = "opt")]
        delta: Option<String>,
    },
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta {
        #[serde(default, deserialize_with = "opt")]
        output_index: Option<u64>,
        #[serde(default, deserialize_with = "opt")]
        delta: Option<String>,
    },
    #[serde(rename = "response.completed")]
    Completed {
        #[serde(default, deserialize_with = "opt")]
        response: Option<ResponseBody>,
    },
    #[serde(rename = "response.incomplete")]
    Incomplete {
        #[serde(default, deserialize_with = "opt")]
        response: Option<ResponseBody>,
    },
    #[serde(rename = "response.failed")]
    Failed {
        #[serde(default, deserialize_with = "opt")]
        response: Option<ResponseBody>,
    },
    /// The body is an error object, classified from the raw JSON.
    #[serde(rename = "error")]
    Error,
    /// `response.created`, `response.in_progress`, `*.done` of parts and
    /// events added later.
    #[default]
    #[serde(other)]
    Unknown,
}

/// An output item.
#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Item {
    Message {
        #[serde(default, deserialize_with = "list")]
        content: Option<Vec<TextPart>>,
    },
    FunctionCall {
        #[serde(default, deserialize_with = "opt")]
        call_id: Option<String>,
        #[serde(default, deserialize_with = "opt")]
        name: Option<String>,
        #[serde(default, deserialize_with = "opt")]
        arguments: Option<String>,
    },
    Reasoning {
        #[serde(default, deserialize_with = "opt")]
        id: Option<String>,
        #[serde(default, deserialize_with = "list")]
        summary: Option<Vec<TextPart>>,
        #[serde(default, deserialize_with = "list")]
        content: Option<Vec<TextPart>>,
        #[serde(default, deserialize_with = "opt")]
        encrypted_content: Option<String>,
    },
    /// Built-in tool calls and items added later: not eonyx's.
    #[default]
    #[serde(other)]
    Other,
}

/// `output_text`, `summary_text`, `reasoning_text`, `refusal` parts.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TextPart {
    #[serde(rename = "type", default, deserialize_with = "opt")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "opt")]
    pub text: Option<String>,
}

/// The `response` object of the final events.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseBody {
    #[serde(default, deserialize_with = "opt")]
    pub usage: Option<Usage>,
    #[serde(default, deserialize_with = "opt")]
    pub incomplete_details: Option<IncompleteDetails>,
    /// Kept raw: classified like any error body.
    #[serde(default, deserialize_with = "opt")]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default, deserialize_with = "opt")]
    pub reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "opt")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub input_tokens_details: Option<InputDetails>,
    #[serde(default, deserialize_with = "opt")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct InputDetails {
    #[serde(default, deserialize_with = "opt")]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default, deserialize_with = "opt")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    pub(crate) fn core(&self) -> CoreUsage {
        CoreUsage {
            prompt_tokens: self.input_tokens.unwrap_or(0),
            completion_tokens: self.output_tokens.unwrap_or(0),
            cached_tokens: self
                .input_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            ..CoreUsage::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode_tagged;
    use serde_json::json;

    #[test]
    fn events_and_items_of_openai_and_llama_server() {
        let e: Event = decode_tagged(
            &json!({"type": "response.output_item.added", "output_index": 1, "sequence_number": 3,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "grep", "arguments": ""}}),
            None,
        );
        assert!(matches!(e, Event::OutputItemAdded { output_index: Some(1),
            item: Item::FunctionCall { ref name, .. } } if name.as_deref() == Some("grep")));
        let e: Event = decode_tagged(
            &json!({"type": "response.completed", "response": {"status": "completed", "usage": {
                "input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024},
                "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 256}}}}),
            None,
        );
        let Event::Completed {
            response: Some(ResponseBody { usage: Some(u), .. }),
        } = e
        else {
            panic!("{e:?}");
        };
        assert_eq!(
            u.core(),
            CoreUsage {
                prompt_tokens: 1200,
                completion_tokens: 300,
                cached_tokens: 1024,
                reasoning_tokens: 256,
                ..CoreUsage::default()
            }
        );
        let e: Event = decode_tagged(
            &json!({"type": "response.web_search_call.searching", "x": 1}),
            None,
        );
        assert!(matches!(e, Event::Unknown));
        let item: Item = decode_tagged(
            &json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}],
                "encrypted_content": "gAAA"}),
            None,
        );
        assert!(
            matches!(item, Item::Reasoning { ref encrypted_content, .. } if encrypted_content.as_deref() == Some("gAAA"))
        );
    }

    #[test]
    fn request_items_serialize_in_the_wire_shape() {
        let item = InputItem::Reasoning {
            summary: Vec::new(),
            content: vec![TextOut {
                kind: "reasoning_text",
                text: "t".into(),
            }],
            encrypted_content: None,
        };
        assert_eq!(
            serde_json::to_value(&item).unwrap(),
            json!({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}]})
        );
        let part = ContentPart::InputImage {
            image_url: "data:image/png;base64,AA".into(),
        };
        assert_eq!(
            serde_json::to_value(&part).unwrap(),
            json!({"type": "input_image", "image_url": "data:image/png;base64,AA"})
        );
    }
}
