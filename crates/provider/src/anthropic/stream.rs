//! The Messages stream decoder: events (typed in `anthropic/wire.rs`) to
//! [`StreamEvent`]s, tool calls assembled per `tool_use` block, usage
//! summed over `message_start` and `message_delta`.

use std::collections::BTreeMap;

use eonyx_core::message::{Reasoning, ReasoningApi, ToolCall, Usage};
use eonyx_core::{ChatResponse, FinishReason, ProviderError, StreamEvent};
use eventsource_stream::Event;
use serde_json::{Map, Value};

use super::wire::{self, BlockDelta, ContentBlock};
use crate::classify::classify_stream_error;
use crate::sse::{Assembled, Decoder, Emit, PartialCall, bad, parse_json, response};

#[derive(Debug)]
enum Block {
    Text,
    /// A thinking or redacted thinking block: its index in `reasoning`.
    Thinking(usize),
    Tool {
        ordinal: usize,
        call: PartialCall,
        start_input: Option<Map<String, Value>>,
    },
    Other,
}

/// Decoder for Anthropic Messages events.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    text: String,
    reasoning: Vec<Reasoning>,
    blocks: BTreeMap<u64, Block>,
    calls: Vec<ToolCall>,
    tools_started: usize,
    input_tokens: u64,
    cache_read: u64,
    cache_creation: u64,
    output_tokens: u64,
    saw_usage: bool,
    stop_reason: Option<FinishReason>,
    done: bool,
}

impl AnthropicDecoder {
    fn take_usage(&mut self, u: &wire::Usage) {
        if let Some(v) = u.input_tokens {
            self.input_tokens = v;
            self.saw_usage = true;
        }
        if let Some(v) = u.cache_read_input_tokens {
            self.cache_read = v;
        }
        if let Some(v) = u.cache_creation_input_tokens {
            self.cache_creation = v;
        }
        if let Some(v) = u.output_tokens {
            self.output_tokens = v;
            self.saw_usage = true;
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.saw_usage.then(|| Usage {
            prompt_tokens: self.input_tokens + self.cache_read + self.cache_creation,
            completion_tokens: self.output_tokens,
            cached_tokens: self.cache_read,
            reasoning_tokens: 0,
            cache_write_tokens: self.cache_creation,
        })
    }

    fn close_block(&mut self, index: u64, emit: &mut dyn FnMut(StreamEvent)) {
        if let Some(Block::Tool {
            ordinal,
            call,
            start_input,
        }) = self.blocks.remove(&index)
        {
            let mut tc = call.into_call(ordinal);
            if tc.arguments == Value::Object(Default::default())
                && let Some(input) = start_input
            {
                tc.arguments = Value::Object(input);
            }
            emit(StreamEvent::ToolCall(tc.clone()));
            self.calls.push(tc);
        }
    }

    fn on_block_start(
        &mut self,
        index: u64,
        block: ContentBlock,
        emit: &mut dyn FnMut(StreamEvent),
    ) {
        match block {
            ContentBlock::Text { text } => {
                if let Some(t) = text
                    && !t.is_empty()
                {
                    self.text.push_str(&t);
                    emit(StreamEvent::TextDelta(t));
                }
                self.blocks.insert(index, Block::Text);
            }
            ContentBlock::ToolUse { id, name, input } => {
                let ordinal = self.tools_started;
                self.tools_started += 1;
                emit(StreamEvent::ToolCallDelta {
                    index: ordinal,
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
                self.blocks.insert(
                    index,
                    Block::Tool {
                        ordinal,
                        call: PartialCall {
                            id,
                            name,
                            arguments: String::new(),
                        },
                        start_input: input,
                    },
                );
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                let mut r = Reasoning::new(ReasoningApi::Anthropic);
                if let Some(t) = thinking.filter(|t| !t.is_empty()) {
                    emit(StreamEvent::ReasoningDelta(t.clone()));
                    r.text = t;
                }
                r.signature = signature.filter(|s| !s.is_empty());
                self.reasoning.push(r);
                self.blocks
                    .insert(index, Block::Thinking(self.reasoning.len() - 1));
            }
            ContentBlock::RedactedThinking { data } => {
                let mut r = Reasoning::new(ReasoningApi::Anthropic);
                r.redacted = Some(data.unwrap_or_default());
                self.reasoning.push(r);
                self.blocks
                    .insert(index, Block::Thinking(self.reasoning.len() - 1));
            }
            ContentBlock::Other => {
                self.blocks.insert(index, Block::Other);
            }
        }
    }

    /// The reasoning part of thinking block `index`.
    fn thinking(&mut self, index: u64, what: &str) -> Result<&mut Reasoning, ProviderError> {
        match self.blocks.get(&index) {
            Some(Block::Thinking(i)) => {
                let i = *i;
                self.reasoning
                    .get_mut(i)
                    .ok_or_else(|| bad(format!("{what} for a lost thinking block {index}")))
            }
            _ => Err(bad(format!(
                "{what} for content block {index}, which is not a thinking block"
            ))),
        }
    }

    fn on_block_delta(
        &mut self,
        index: u64,
        delta: BlockDelta,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        match delta {
            BlockDelta::TextDelta { text } => {
                if let Some(t) = text
                    && !t.is_empty()
                {
                    self.text.push_str(&t);
                    emit(StreamEvent::TextDelta(t));
                }
            }
            BlockDelta::InputJsonDelta { partial_json } => {
                let part = partial_json.unwrap_or_default();
                match self.blocks.get_mut(&index) {
                    Some(Block::Tool { ordinal, call, .. }) => {
                        call.arguments.push_str(&part);
                        if !part.is_empty() {
                            emit(StreamEvent::ToolCallDelta {
                                index: *ordinal,
                                id: None,
                                name: None,
                                arguments: part,
                            });
                        }
                    }
                    _ => {
                        return Err(bad(format!(
                            "input_json_delta for content block {index}, which is not a tool_use block"
                        )));
                    }
                }
            }
            BlockDelta::ThinkingDelta { thinking } => {
                let t = thinking.unwrap_or_default();
                if !t.is_empty() {
                    self.thinking(index, "thinking_delta")?.text.push_str(&t);
                    emit(StreamEvent::ReasoningDelta(t));
                }
            }
            BlockDelta::SignatureDelta { signature } => {
                let s = signature.unwrap_or_default();
                let r = self.thinking(index, "signature_delta")?;
                r.signature.get_or_insert_with(String::new).push_str(&s);
            }
            // citations deltas carry nothing we keep
            BlockDelta::Other => {}
        }
        Ok(())
    }
}

impl Decoder for AnthropicDecoder {
    fn on_event(&mut self, event: &Event, emit: Emit<'_>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let raw = parse_json(data)?;
        match wire::Event::read(&raw, &event.event) {
            wire::Event::MessageStart { message } => {
                if let Some(u) = message.and_then(|m| m.usage) {
                    self.take_usage(&u);
                }
            }
            wire::Event::ContentBlockStart {
                index,
                content_block,
            } => self.on_block_start(index.unwrap_or(0), content_block, emit),
            wire::Event::ContentBlockDelta { index, delta } => {
                self.on_block_delta(index.unwrap_or(0), delta, emit)?;
            }
            wire::Event::ContentBlockStop { index } => self.close_block(index.unwrap_or(0), emit),
            wire::Event::MessageDelta { delta, usage } => {
                if let Some(r) = delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(FinishReason::from_api(&r));
                }
                if let Some(u) = usage {
                    self.take_usage(&u);
                }
            }
            wire::Event::MessageStop => self.done = true,
            wire::Event::Error => return Err(classify_stream_error(&raw)),
            // keep-alives and future event types
            wire::Event::Ping | wire::Event::Unknown => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(mut self, emit: &mut dyn FnMut(StreamEvent)) -> Result<ChatResponse, ProviderError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(ProviderError::Transient {
                message: "the stream ended before the model finished (no message_stop)".to_owned(),
            });
        }
        // Tool blocks the server never closed.
        let open: Vec<u64> = self.blocks.keys().copied().collect();
        for i in open {
            self.close_block(i, emit);
        }
        let usage = self.usage();
        if let Some(u) = usage {
            emit(StreamEvent::Usage(u));
        }
        if let Some(f) = &self.stop_reason {
            emit(StreamEvent::Finish(f.clone()));
        }
        Ok(response(Assembled {
            text: self.text,
            calls: self.calls,
            reasoning: self.reasoning,
            usage,
            finish: self.stop_reason,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_anthropic_sse_chunks;
    use serde_json::json;

    const ANTHROPIC_STREAM: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Checking.\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"list_dir\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"sr\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"c\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":35}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );

    /// A finished tool call.
    fn call(id: &str, name: &str, arguments: serde_json::Value) -> StreamEvent {
        StreamEvent::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        })
    }

    /// The usage event: prompt, completion and cached tokens.
    fn usage(prompt_tokens: u64, completion_tokens: u64, cached_tokens: u64) -> StreamEvent {
        StreamEvent::Usage(Usage {
            prompt_tokens,
            completion_tokens,
            cached_tokens,
            ..Usage::default()
        })
    }

    #[test]
    fn anthropic_stream_text_tool_use_and_usage() {
        let events = parse_anthropic_sse_chunks(&[ANTHROPIC_STREAM.as_bytes()]).unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Checking.".into()),
                StreamEvent::ToolCallDelta {
                    index: 0,
                    id: Some("toolu_01".into()),
                    name: Some("list_dir".into()),
                    arguments: String::new()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    id: None,
                    name: None,
                    arguments: "{\"path\": \"sr".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    id: None,
                    name: None,
                    arguments: "c\"}".into()
                },
                call("toolu_01", "list_dir", json!({"path": "src"})),
                StreamEvent::Usage(Usage {
                    prompt_tokens: 2112,
                    completion_tokens: 35,
                    cached_tokens: 2000,
                    cache_write_tokens: 100,
                    reasoning_tokens: 0,
                }),
                StreamEvent::Finish(FinishReason::ToolCalls),
            ]
        );
        let bytes = ANTHROPIC_STREAM.as_bytes();
        let pieces: Vec<&[u8]> = bytes.chunks(13).collect();
        assert_eq!(parse_anthropic_sse_chunks(&pieces).unwrap(), events);
    }

    #[test]
    fn anthropic_error_event_and_truncation() {
        let s = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
            "event: error\n",
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        let e = parse_anthropic_sse_chunks(&[s.as_bytes()]).unwrap_err();
        assert_eq!(e.class().name(), "transient");
        assert!(e.to_string().contains("Overloaded"));
        let cut = &ANTHROPIC_STREAM[..ANTHROPIC_STREAM.find("event: message_delta").unwrap()];
        let e = parse_anthropic_sse_chunks(&[cut.as_bytes()]).unwrap_err();
        assert!(e.to_string().contains("ended before the model finished"));
    }

    #[test]
    fn unknown_events_and_blocks_are_ignored_and_whole_inputs_kept() {
        let s = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"s\"}}\n\n",
            "event: content_block_stop\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: brand_new_event\n",
            "data: {\"type\":\"brand_new_event\",\"payload\":[1,2]}\n\n",
            "event: ping\n",
            "data: {\"type\":\"ping\"}\n\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"grep\",\"input\":{\"pattern\":\"fn\"}}}\n\n",
            "event: content_block_stop\n",
            "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            // No `type` in the JSON: the SSE event line names it.
            "event: message_delta\n",
            "data: {\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let events = parse_anthropic_sse_chunks(&[s.as_bytes()]).unwrap();
        assert_eq!(
            events,
            vec![
                // A thinking block is reasoning now, never answer text.
                StreamEvent::ReasoningDelta("hm".into()),
                StreamEvent::ToolCallDelta {
                    index: 0,
                    id: Some("toolu_9".into()),
                    name: Some("grep".into()),
                    arguments: String::new()
                },
                call("toolu_9", "grep", json!({"pattern": "fn"})),
                usage(10, 9, 7),
                StreamEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }
}
