//! The Chat Completions stream decoder: chunks (typed in
//! `openai/wire.rs`) to [`StreamEvent`]s, tool calls assembled by index.

use std::collections::BTreeMap;

use eonyx_core::message::{ToolCall, Usage};
use eonyx_core::{ChatResponse, FinishReason, ProviderError, StreamEvent};
use eventsource_stream::Event;
use serde_json::Value;

use super::wire::{self, Chunk};
use crate::classify::classify_stream_error;
use crate::sse::{Assembled, Decoder, Emit, PartialCall, emit_and_respond, parse_json};
use crate::wire::{Arguments, decode};

/// Chat Completions reasoning as the message's one part (none when empty).
pub(crate) fn chat_reasoning(text: String) -> Vec<eonyx_core::Reasoning> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut r = eonyx_core::Reasoning::new(eonyx_core::ReasoningApi::Chat);
    r.text = text;
    vec![r]
}

/// Decoder for OpenAI Chat Completions chunks.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    text: String,
    /// `reasoning_content` (or `reasoning`) deltas.
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    last_index: Option<usize>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
}

impl OpenAiDecoder {
    fn on_tool_delta(&mut self, d: &wire::ToolCall, emit: &mut dyn FnMut(StreamEvent)) {
        let id = d.id.as_deref().filter(|s| !s.is_empty());
        let index = match d.index {
            Some(i) => usize::try_from(i).unwrap_or(usize::MAX),
            // Some servers omit the index: a new id starts a new call.
            None => match (self.last_index, id) {
                (Some(last), Some(id))
                    if self.calls.get(&last).and_then(|c| c.id.as_deref()) != Some(id) =>
                {
                    self.calls.len()
                }
                (Some(last), _) => last,
                (None, _) => 0,
            },
        };
        self.last_index = Some(index);
        let call = self.calls.entry(index).or_default();
        let mut new_id = None;
        if let Some(id) = id
            && call.id.is_none()
        {
            call.id = Some(id.to_owned());
            new_id = Some(id.to_owned());
        }
        let mut new_name = None;
        if let Some(name) = d.name().filter(|s| !s.is_empty())
            && call.name.is_none()
        {
            call.name = Some(name.to_owned());
            new_name = Some(name.to_owned());
        }
        // A few servers send the arguments as an object.
        let args = d.arguments().map(Arguments::text).unwrap_or_default();
        call.arguments.push_str(&args);
        if new_id.is_some() || new_name.is_some() || !args.is_empty() {
            emit(StreamEvent::ToolCallDelta {
                index,
                id: new_id,
                name: new_name,
                arguments: args,
            });
        }
    }

    /// Handle one decoded chunk; `raw` is its JSON, classified when the
    /// chunk is an error object.
    pub(crate) fn on_chunk(
        &mut self,
        chunk: &Chunk,
        raw: &Value,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        if chunk.is_error() {
            return Err(classify_stream_error(raw));
        }
        if let Some(u) = chunk.usage() {
            self.usage = Some(u);
        }
        let Some(choices) = &chunk.choices else {
            return Ok(());
        };
        for choice in choices {
            if let Some(delta) = &choice.delta {
                if let Some(r) = delta.reasoning_text() {
                    self.reasoning.push_str(r);
                    emit(StreamEvent::ReasoningDelta(r.to_owned()));
                }
                if let Some(text) = delta.content.as_deref()
                    && !text.is_empty()
                {
                    self.text.push_str(text);
                    emit(StreamEvent::TextDelta(text.to_owned()));
                }
                for d in delta.tool_calls.iter().flatten() {
                    self.on_tool_delta(d, emit);
                }
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish = Some(FinishReason::from_api(reason));
            }
        }
        Ok(())
    }
}

impl Decoder for OpenAiDecoder {
    fn on_event(&mut self, event: &Event, emit: Emit<'_>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let raw = parse_json(data)?;
        if event.event == "error" {
            return Err(classify_stream_error(&raw));
        }
        self.on_chunk(&decode(&raw), &raw, emit)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(self, emit: &mut dyn FnMut(StreamEvent)) -> Result<ChatResponse, ProviderError> {
        if !self.done && self.finish.is_none() {
            return Err(ProviderError::Transient {
                message: "the stream ended before the model finished (no finish reason, no [DONE])"
                    .to_owned(),
            });
        }
        let calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(i, c)| c.into_call(i))
            .collect();
        Ok(emit_and_respond(
            Assembled {
                text: self.text,
                calls,
                reasoning: chat_reasoning(self.reasoning),
                usage: self.usage,
                finish: self.finish,
            },
            emit,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_openai_sse_chunks;
    use serde_json::json;

    const OPENAI_TOOL_STREAM: &str = concat!(
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        ": keep-alive comment\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me \"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"look.\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"src/main.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"fn main\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":40,\"total_tokens\":1240,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n",
        "data: [DONE]\n\n",
    );

    fn expected_tool_stream() -> Vec<StreamEvent> {
        vec![
            StreamEvent::TextDelta("Let me ".into()),
            StreamEvent::TextDelta("look.".into()),
            StreamEvent::ToolCallDelta {
                index: 0,
                id: Some("call_a".into()),
                name: Some("read_file".into()),
                arguments: String::new(),
            },
            StreamEvent::ToolCallDelta {
                index: 1,
                id: Some("call_b".into()),
                name: Some("grep".into()),
                arguments: "{\"pattern\":".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "{\"path\":".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: "\"src/main.rs\"}".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 1,
                id: None,
                name: None,
                arguments: "\"fn main\"}".into(),
            },
            StreamEvent::ToolCall(ToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                arguments: json!({"path": "src/main.rs"}),
            }),
            StreamEvent::ToolCall(ToolCall {
                id: "call_b".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "fn main"}),
            }),
            StreamEvent::Usage(Usage {
                prompt_tokens: 1200,
                completion_tokens: 40,
                cached_tokens: 1024,
                ..Usage::default()
            }),
            StreamEvent::Finish(FinishReason::ToolCalls),
        ]
    }

    #[test]
    fn openai_tool_calls_are_assembled_by_index() {
        let events = parse_openai_sse_chunks(&[OPENAI_TOOL_STREAM.as_bytes()]).unwrap();
        assert_eq!(events, expected_tool_stream());
    }

    #[test]
    fn openai_stream_split_at_every_byte_gives_the_same_events() {
        let bytes = OPENAI_TOOL_STREAM.as_bytes();
        // Splits inside lines, inside "\n\n", inside multi-byte characters.
        for at in (1..bytes.len()).step_by(7) {
            let (a, b) = bytes.split_at(at);
            let events = parse_openai_sse_chunks(&[a, b]).unwrap();
            assert_eq!(events, expected_tool_stream(), "split at {at}");
        }
        let single: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(
            parse_openai_sse_chunks(&single).unwrap(),
            expected_tool_stream()
        );
    }

    #[test]
    fn crlf_multi_line_data_and_utf8_split_across_chunks() {
        let s = "data: {\"choices\":[{\"delta\":\r\ndata: {\"content\":\"héllo ✓\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n";
        let bytes = s.as_bytes();
        let pos = s.find('✓').unwrap() + 1; // inside the 3-byte character
        let events = parse_openai_sse_chunks(&[&bytes[..pos], &bytes[pos..]]).unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("héllo ✓".into()),
                StreamEvent::Finish(FinishReason::Stop)
            ]
        );
    }

    #[test]
    fn llama_cpp_timings_give_cached_tokens() {
        let s = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":50,\"total_tokens\":51},\"timings\":{\"cache_n\":48,\"prompt_n\":2,\"predicted_n\":1}}\n\n",
            "data: [DONE]\n\n",
        );
        let events = parse_openai_sse_chunks(&[s.as_bytes()]).unwrap();
        assert!(events.contains(&StreamEvent::Usage(Usage {
            prompt_tokens: 50,
            completion_tokens: 1,
            cached_tokens: 48,
            ..Usage::default()
        })));
    }

    #[test]
    fn truncated_stream_is_an_error_not_a_short_answer() {
        let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an ans\"},\"finish_reason\":null}]}\n\n";
        let e = parse_openai_sse_chunks(&[s.as_bytes()]).unwrap_err();
        assert_eq!(e.class().name(), "transient");
        assert!(e.to_string().contains("ended before the model finished"));
        // A finish reason without [DONE] is a complete answer (some servers omit it).
        let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done\"},\"finish_reason\":\"stop\"}]}\n\n";
        assert!(parse_openai_sse_chunks(&[s.as_bytes()]).is_ok());
    }

    #[test]
    fn malformed_streams_are_bad_responses() {
        let e = parse_openai_sse_chunks(&[b"data: {not json\n\n"]).unwrap_err();
        assert_eq!(e.class().name(), "bad_response");
        let e = parse_openai_sse_chunks(&[b"data: \xff\xfe\n\n"]).unwrap_err();
        assert_eq!(e.class().name(), "bad_response");
    }

    #[test]
    fn error_chunk_mid_stream_is_classified() {
        let s = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
            "data: {\"error\":{\"message\":\"This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.\",\"code\":\"context_length_exceeded\"}}\n\n",
        );
        let e = parse_openai_sse_chunks(&[s.as_bytes()]).unwrap_err();
        assert_eq!(crate::classify::parse_overflow_limit(&e), Some(4096));
    }

    #[test]
    fn events_after_done_are_ignored() {
        let s = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\ndata: garbage\n\n";
        assert_eq!(parse_openai_sse_chunks(&[s.as_bytes()]).unwrap().len(), 2);
    }

    #[test]
    fn tool_call_deltas_without_index_split_over_chunks_and_odd_fields() {
        // Servers that omit `index` (a new id starts a new call), send the
        // arguments as an object, or put fields of unexpected types in a
        // chunk: what has the wrong type is ignored, as it always was.
        let s = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":[\"not text\"],\"tool_calls\":[{\"id\":\"call_1\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]}}],\"usage\":\"n/a\"}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"th\\\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"call_2\",\"function\":{\"name\":\"grep\",\"arguments\":{\"pattern\":\"x\"}}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"object\":\"chat.completion.chunk\",\"future_field\":{\"a\":[1]}}\n\n",
            "data: [DONE]\n\n",
        );
        let events = parse_openai_sse_chunks(&[s.as_bytes()]).unwrap();
        let calls: Vec<&ToolCall> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            [
                &ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": 1}),
                },
                &ToolCall {
                    id: "call_2".into(),
                    name: "grep".into(),
                    arguments: json!({"pattern": "x"}),
                },
            ]
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::TextDelta(_) | StreamEvent::Usage(_)))
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish(FinishReason::ToolCalls))
        );
    }
}
