//! Server-sent-event decoding for both wire protocols.
//!
//! Bytes are split into events by `eventsource-stream`; a [`Decoder`] turns
//! each event into [`StreamEvent`]s and, at the end, into the assembled
//! [`ChatResponse`]. The same decoders serve the live HTTP stream and the
//! pure [`parse_openai_sse_chunks`] / [`parse_anthropic_sse_chunks`]
//! functions (used by tests and the fuzz target).
//!
//! A stream that ends before the server said it was finished is an error,
//! never a silently truncated answer.
//!
//! Over 600 lines only with its unit tests: the decoders are ~540 lines,
//! the rest is their tests (split, malformed and truncated streams).

use std::collections::BTreeMap;

use eonyx_core::message::{Content, Message, Role, ToolCall, Usage};
use eonyx_core::{ChatResponse, FinishReason, ProviderError, StreamEvent};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{FutureExt, Stream, StreamExt};
use serde_json::Value;

use crate::classify::classify_stream_error;

/// Turns the events of one response stream into [`StreamEvent`]s.
pub trait Decoder {
    /// Handle one SSE event, emitting what it carries.
    fn on_event(
        &mut self,
        event: &Event,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError>;

    /// Whether the server signalled the end of the response.
    fn is_done(&self) -> bool;

    /// The stream ended: emit the final events and return the response.
    fn finish(self, emit: &mut dyn FnMut(StreamEvent)) -> Result<ChatResponse, ProviderError>;
}

fn bad(message: impl Into<String>) -> ProviderError {
    ProviderError::BadResponse {
        message: message.into(),
    }
}

fn parse_json(data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| {
        bad(format!(
            "a stream event is not valid JSON ({e}): {}",
            crate::classify::shorten(data)
        ))
    })
}

/// Map an event-stream failure to a provider error. `T` is the transport
/// error (already a [`ProviderError`] for live streams).
pub(crate) fn stream_error<T: Into<ProviderError>>(e: EventStreamError<T>) -> ProviderError {
    match e {
        EventStreamError::Utf8(e) => bad(format!("the event stream is not valid UTF-8: {e}")),
        EventStreamError::Parser(e) => bad(format!("the event stream is malformed: {e}")),
        EventStreamError::Transport(e) => e.into(),
    }
}

/// Drive `decoder` over a stream of SSE events until the server says it is
/// done or the stream ends.
pub(crate) async fn drive<S, T, D>(
    mut events: S,
    mut decoder: D,
    emit: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ChatResponse, ProviderError>
where
    S: Stream<Item = Result<Event, EventStreamError<T>>> + Unpin,
    T: Into<ProviderError>,
    D: Decoder,
{
    while !decoder.is_done() {
        match events.next().await {
            Some(Ok(ev)) => decoder.on_event(&ev, emit)?,
            Some(Err(e)) => return Err(stream_error(e)),
            None => break,
        }
    }
    decoder.finish(emit)
}

/// Decode a complete response given as raw byte chunks (split anywhere).
fn parse_chunks<D: Decoder>(
    chunks: &[&[u8]],
    decoder: D,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let owned: Vec<Result<bytes::Bytes, ProviderError>> = chunks
        .iter()
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let events = futures_util::stream::iter(owned).eventsource();
    let mut out = Vec::new();
    let mut emit = |e: StreamEvent| out.push(e);
    // The source stream is always ready, so this never waits.
    let fut = drive(events, decoder, &mut emit);
    match fut.now_or_never() {
        Some(r) => r.map(|_| ()),
        None => Err(bad("the byte stream was not ready")),
    }?;
    Ok(out)
}

/// Parse a complete OpenAI Chat Completions event stream given as byte
/// chunks; returns every event a caller would have seen.
pub fn parse_openai_sse_chunks(chunks: &[&[u8]]) -> Result<Vec<StreamEvent>, ProviderError> {
    parse_chunks(chunks, OpenAiDecoder::default())
}

/// Parse a complete Anthropic Messages event stream given as byte chunks.
pub fn parse_anthropic_sse_chunks(chunks: &[&[u8]]) -> Result<Vec<StreamEvent>, ProviderError> {
    parse_chunks(chunks, AnthropicDecoder::default())
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

impl PartialCall {
    fn into_call(self, index: usize) -> ToolCall {
        ToolCall {
            id: self.id.unwrap_or_else(|| format!("call_{index}")),
            name: self.name.unwrap_or_default(),
            arguments: ToolCall::parse_arguments(&self.arguments),
        }
    }
}

fn response(
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
) -> ChatResponse {
    let mut message = Message::new(Role::Assistant, Content::Text(text));
    message.tool_calls = calls;
    message.usage = usage;
    ChatResponse {
        message,
        usage,
        finish_reason: finish,
    }
}

/// Decoder for OpenAI Chat Completions chunks.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    last_index: Option<usize>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
}

/// Usage from an OpenAI-style object, with llama.cpp's `timings.cache_n`
/// as a fallback for cached tokens.
pub(crate) fn openai_usage(chunk: &Value) -> Option<Usage> {
    let u = chunk.get("usage").filter(|u| u.is_object())?;
    let n = |v: Option<&Value>| v.and_then(Value::as_u64);
    let cached = n(u.pointer("/prompt_tokens_details/cached_tokens"))
        .or_else(|| n(chunk.pointer("/timings/cache_n")))
        .unwrap_or(0);
    Some(Usage {
        prompt_tokens: n(u.get("prompt_tokens")).unwrap_or(0),
        completion_tokens: n(u.get("completion_tokens")).unwrap_or(0),
        cached_tokens: cached,
    })
}

impl OpenAiDecoder {
    fn on_tool_delta(&mut self, d: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        let id = d
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let index = match d.get("index").and_then(Value::as_u64) {
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
        if let Some(name) = d
            .pointer("/function/name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            && call.name.is_none()
        {
            call.name = Some(name.to_owned());
            new_name = Some(name.to_owned());
        }
        let args = match d.pointer("/function/arguments") {
            Some(Value::String(s)) => s.clone(),
            // A few servers send the arguments as an object.
            Some(v @ Value::Object(_)) => v.to_string(),
            _ => String::new(),
        };
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

    /// Handle one decoded chunk object.
    pub fn on_chunk(
        &mut self,
        chunk: &Value,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        if chunk.get("error").is_some()
            || chunk.get("object").and_then(Value::as_str) == Some("error")
        {
            return Err(classify_stream_error(chunk));
        }
        if let Some(u) = openai_usage(chunk) {
            self.usage = Some(u);
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        for choice in choices {
            if let Some(delta) = choice.get("delta") {
                if let Some(text) = delta.get("content").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    self.text.push_str(text);
                    emit(StreamEvent::TextDelta(text.to_owned()));
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for d in calls {
                        self.on_tool_delta(d, emit);
                    }
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(FinishReason::from_api(reason));
            }
        }
        Ok(())
    }
}

impl Decoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        event: &Event,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk = parse_json(data)?;
        if event.event == "error" {
            return Err(classify_stream_error(&chunk));
        }
        self.on_chunk(&chunk, emit)
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
        for c in &calls {
            emit(StreamEvent::ToolCall(c.clone()));
        }
        if let Some(u) = self.usage {
            emit(StreamEvent::Usage(u));
        }
        if let Some(f) = &self.finish {
            emit(StreamEvent::Finish(f.clone()));
        }
        Ok(response(self.text, calls, self.usage, self.finish))
    }
}

#[derive(Debug)]
enum Block {
    Text,
    Tool {
        ordinal: usize,
        call: PartialCall,
        start_input: Option<Value>,
    },
    Other,
}

/// Decoder for Anthropic Messages events.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    text: String,
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
    fn take_usage(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(v) = n("input_tokens") {
            self.input_tokens = v;
            self.saw_usage = true;
        }
        if let Some(v) = n("cache_read_input_tokens") {
            self.cache_read = v;
        }
        if let Some(v) = n("cache_creation_input_tokens") {
            self.cache_creation = v;
        }
        if let Some(v) = n("output_tokens") {
            self.output_tokens = v;
            self.saw_usage = true;
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.saw_usage.then(|| Usage {
            prompt_tokens: self.input_tokens + self.cache_read + self.cache_creation,
            completion_tokens: self.output_tokens,
            cached_tokens: self.cache_read,
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
                && let Some(input) = start_input.filter(|v| v.is_object())
            {
                tc.arguments = input;
            }
            emit(StreamEvent::ToolCall(tc.clone()));
            self.calls.push(tc);
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: &Event,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let v = parse_json(data)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.take_usage(u);
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str)
                            && !t.is_empty()
                        {
                            self.text.push_str(t);
                            emit(StreamEvent::TextDelta(t.to_owned()));
                        }
                        self.blocks.insert(index, Block::Text);
                    }
                    Some("tool_use") => {
                        let ordinal = self.tools_started;
                        self.tools_started += 1;
                        let id = block.get("id").and_then(Value::as_str).map(str::to_owned);
                        let name = block.get("name").and_then(Value::as_str).map(str::to_owned);
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
                                start_input: block.get("input").cloned(),
                            },
                        );
                    }
                    _ => {
                        self.blocks.insert(index, Block::Other);
                    }
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = delta.get("text").and_then(Value::as_str)
                            && !t.is_empty()
                        {
                            self.text.push_str(t);
                            emit(StreamEvent::TextDelta(t.to_owned()));
                        }
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        match self.blocks.get_mut(&index) {
                            Some(Block::Tool { ordinal, call, .. }) => {
                                call.arguments.push_str(part);
                                if !part.is_empty() {
                                    emit(StreamEvent::ToolCallDelta {
                                        index: *ordinal,
                                        id: None,
                                        name: None,
                                        arguments: part.to_owned(),
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
                    // thinking, signature and citations deltas carry nothing we keep
                    _ => {}
                }
            }
            "content_block_stop" => self.close_block(index, emit),
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(FinishReason::from_api(r));
                }
                if let Some(u) = v.get("usage") {
                    self.take_usage(u);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(classify_stream_error(&v)),
            // ping and future event types
            _ => {}
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
        Ok(response(self.text, self.calls, usage, self.stop_reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            cached_tokens: 48
        })));
    }

    #[test]
    fn truncated_stream_is_an_error_not_a_short_answer() {
        let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an ans\"},\"finish_reason\":null}]}\n\n";
        let e = parse_openai_sse_chunks(&[s.as_bytes()]).unwrap_err();
        assert_eq!(e.class(), "transient");
        assert!(e.to_string().contains("ended before the model finished"));
        // A finish reason without [DONE] is a complete answer (some servers omit it).
        let s = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done\"},\"finish_reason\":\"stop\"}]}\n\n";
        assert!(parse_openai_sse_chunks(&[s.as_bytes()]).is_ok());
    }

    #[test]
    fn malformed_streams_are_bad_responses() {
        let e = parse_openai_sse_chunks(&[b"data: {not json\n\n"]).unwrap_err();
        assert_eq!(e.class(), "bad_response");
        let e = parse_openai_sse_chunks(&[b"data: \xff\xfe\n\n"]).unwrap_err();
        assert_eq!(e.class(), "bad_response");
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
                StreamEvent::ToolCall(ToolCall {
                    id: "toolu_01".into(),
                    name: "list_dir".into(),
                    arguments: json!({"path": "src"})
                }),
                StreamEvent::Usage(Usage {
                    prompt_tokens: 2112,
                    completion_tokens: 35,
                    cached_tokens: 2000
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
        assert_eq!(e.class(), "transient");
        assert!(e.to_string().contains("Overloaded"));
        let cut = &ANTHROPIC_STREAM[..ANTHROPIC_STREAM.find("event: message_delta").unwrap()];
        let e = parse_anthropic_sse_chunks(&[cut.as_bytes()]).unwrap_err();
        assert!(e.to_string().contains("ended before the model finished"));
    }
}
