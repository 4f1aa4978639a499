//! Messages API stream events as typed values. Read leniently (see
//! `crate::wire`): an event type this code does not know is
//! [`Event::Unknown`], a block or delta type it does not know is
//! `Other`, and an event without a `type` is named by its SSE `event:` line.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::wire::{decode_tagged, object, opt, tagged};

/// One event of a Messages stream.
#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    MessageStart {
        #[serde(default, deserialize_with = "opt")]
        message: Option<MessageStart>,
    },
    ContentBlockStart {
        #[serde(default, deserialize_with = "opt")]
        index: Option<u64>,
        #[serde(default, deserialize_with = "tagged")]
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        #[serde(default, deserialize_with = "opt")]
        index: Option<u64>,
        #[serde(default, deserialize_with = "tagged")]
        delta: BlockDelta,
    },
    ContentBlockStop {
        #[serde(default, deserialize_with = "opt")]
        index: Option<u64>,
    },
    MessageDelta {
        #[serde(default, deserialize_with = "opt")]
        delta: Option<MessageDelta>,
        #[serde(default, deserialize_with = "opt")]
        usage: Option<Usage>,
    },
    MessageStop,
    /// Keep-alive.
    Ping,
    /// The body is an error object, classified from the raw JSON.
    Error,
    /// Event types added after this code was written.
    #[default]
    #[serde(other)]
    Unknown,
}

impl Event {
    /// Decode an event's JSON; `name` is its SSE `event:` line, used when
    /// the JSON has no string `type`.
    pub(crate) fn read(v: &Value, name: &str) -> Self {
        decode_tagged(v, Some(name))
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageStart {
    #[serde(default, deserialize_with = "opt")]
    pub usage: Option<Usage>,
}

/// Token counts; `message_start` carries the input side, `message_delta`
/// the output (and, from some proxies, the input again).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "opt")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub output_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        #[serde(default, deserialize_with = "opt")]
        text: Option<String>,
    },
    ToolUse {
        #[serde(default, deserialize_with = "opt")]
        id: Option<String>,
        #[serde(default, deserialize_with = "opt")]
        name: Option<String>,
        /// The whole input when the server sends it at once (the deltas
        /// usually carry it, and this is `{}`).
        #[serde(default, deserialize_with = "object")]
        input: Option<Map<String, Value>>,
    },
    /// Extended thinking; the text and signature usually come as deltas.
    Thinking {
        #[serde(default, deserialize_with = "opt")]
        thinking: Option<String>,
        #[serde(default, deserialize_with = "opt")]
        signature: Option<String>,
    },
    /// Thinking the safety systems encrypted: `data` goes back unchanged.
    RedactedThinking {
        #[serde(default, deserialize_with = "opt")]
        data: Option<String>,
    },
    /// `server_tool_use`, … and blocks without a type: kept track of,
    /// never shown.
    #[default]
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockDelta {
    TextDelta {
        #[serde(default, deserialize_with = "opt")]
        text: Option<String>,
    },
    InputJsonDelta {
        #[serde(default, deserialize_with = "opt")]
        partial_json: Option<String>,
    },
    ThinkingDelta {
        #[serde(default, deserialize_with = "opt")]
        thinking: Option<String>,
    },
    SignatureDelta {
        #[serde(default, deserialize_with = "opt")]
        signature: Option<String>,
    },
    /// `citations_delta`, …
    #[default]
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageDelta {
    #[serde(default, deserialize_with = "opt")]
    pub stop_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Event {
        Event::read(&v, "")
    }

    #[test]
    fn message_start_with_cache_usage() {
        let e = read(json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                      "cache_read_input_tokens": 2000, "output_tokens": 1,
                      "service_tier": "standard"}}}));
        let Event::MessageStart {
            message: Some(MessageStart { usage: Some(u) }),
        } = e
        else {
            panic!("{e:?}");
        };
        assert_eq!(
            (
                u.input_tokens,
                u.cache_creation_input_tokens,
                u.cache_read_input_tokens,
                u.output_tokens
            ),
            (Some(12), Some(100), Some(2000), Some(1))
        );
    }

    #[test]
    fn tool_use_block_and_its_deltas() {
        let e = read(
            json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_01", "name": "list_dir", "input": {}}}),
        );
        let Event::ContentBlockStart {
            index: Some(1),
            content_block: ContentBlock::ToolUse { id, name, input },
        } = e
        else {
            panic!("{e:?}");
        };
        assert_eq!(
            (id.as_deref(), name.as_deref()),
            (Some("toolu_01"), Some("list_dir"))
        );
        assert_eq!(input, Some(Map::new()));
        let e = read(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"sr"}}));
        assert!(matches!(e, Event::ContentBlockDelta { index: Some(1),
            delta: BlockDelta::InputJsonDelta { partial_json: Some(ref p) } } if p == "{\"path\": \"sr"));
        let e = read(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use",
            "stop_sequence": null}, "usage": {"output_tokens": 35}}),
        );
        assert!(
            matches!(e, Event::MessageDelta { delta: Some(MessageDelta { stop_reason: Some(ref r) }),
            usage: Some(Usage { output_tokens: Some(35), .. }) } if r == "tool_use")
        );
    }

    #[test]
    fn unknown_and_untyped_events() {
        // Unknown event, block and delta types are caught, not errors.
        assert!(matches!(read(json!({"type": "ping"})), Event::Ping));
        assert!(matches!(
            read(json!({"type": "future_event", "x": [1]})),
            Event::Unknown
        ));
        let e = read(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "server_tool_use", "id": "x"}}));
        assert!(matches!(
            e,
            Event::ContentBlockStart {
                content_block: ContentBlock::Other,
                ..
            }
        ));
        let e = read(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "abc"}}));
        assert!(matches!(
            e,
            Event::ContentBlockDelta {
                delta: BlockDelta::SignatureDelta { signature: Some(ref s) },
                ..
            } if s == "abc"
        ));
        let e = read(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "citations_delta", "citation": {}}}));
        assert!(matches!(
            e,
            Event::ContentBlockDelta {
                delta: BlockDelta::Other,
                ..
            }
        ));
        // Unit variants ignore the fields they do not use.
        assert!(matches!(
            read(json!({"type": "message_stop", "amazon-bedrock-invocationMetrics": {}})),
            Event::MessageStop
        ));
        // No string `type`: the SSE event name decides; a numeric type is
        // not a variant index.
        assert!(matches!(
            Event::read(&json!({"index": 2}), "content_block_stop"),
            Event::ContentBlockStop { index: Some(2) }
        ));
        assert!(matches!(
            Event::read(&json!(42), "message_stop"),
            Event::MessageStop
        ));
        assert!(matches!(
            Event::read(&json!({"type": 0}), "ping"),
            Event::Ping
        ));
        assert!(matches!(
            Event::read(&json!({"type": 0}), "other"),
            Event::Unknown
        ));
        let e = read(json!({"type": "content_block_start", "content_block": {"type": 1}}));
        assert!(matches!(
            e,
            Event::ContentBlockStart {
                index: None,
                content_block: ContentBlock::Other
            }
        ));
    }
}
