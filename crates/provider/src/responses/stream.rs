//! The Responses API stream decoder: events (typed in
//! `responses/wire.rs`) to [`StreamEvent`]s. Deltas are streamed as they
//! come; the items themselves are taken from `response.output_item.done`
//! (the whole item, encrypted reasoning included), falling back to what
//! the deltas built for an item the server never closed.

use std::collections::BTreeMap;

use eonyx_core::message::{Reasoning, ReasoningApi, ToolCall, Usage};
use eonyx_core::{ChatResponse, FinishReason, ProviderError, StreamEvent};
use eventsource_stream::Event as SseEvent;
use serde_json::{Value, json};

use crate::classify::{classify_stream_error, shorten};
use crate::responses::wire::{Event, Item, ResponseBody, TextPart};
use crate::sse::{Assembled, Decoder, bad, emit_and_respond};
use crate::wire::decode_tagged;

/// An output item being streamed.
#[derive(Debug)]
enum Partial {
    Text(String),
    Call {
        ordinal: usize,
        call_id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Reasoning(Reasoning),
    /// Finished: its content is in the response already.
    Done,
    Other,
}

/// Decoder for Responses API events.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    items: BTreeMap<u64, Partial>,
    text: String,
    calls: Vec<ToolCall>,
    reasoning: Vec<Reasoning>,
    calls_started: usize,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
}

fn texts(parts: Option<Vec<TextPart>>, kind: &str) -> Vec<String> {
    parts
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.kind.as_deref().is_none_or(|k| k == kind))
        .filter_map(|p| p.text)
        .collect()
}

impl ResponsesDecoder {
    fn added(&mut self, index: u64, item: Item, emit: &mut dyn FnMut(StreamEvent)) {
        let partial = match item {
            Item::Message { .. } => Partial::Text(String::new()),
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let ordinal = self.calls_started;
                self.calls_started += 1;
                emit(StreamEvent::ToolCallDelta {
                    index: ordinal,
                    id: call_id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
                Partial::Call {
                    ordinal,
                    call_id,
                    name,
                    arguments: arguments.unwrap_or_default(),
                }
            }
            Item::Reasoning { id, .. } => {
                let mut r = Reasoning::new(ReasoningApi::Responses);
                r.id = id;
                Partial::Reasoning(r)
            }
            Item::Other => Partial::Other,
        };
        self.items.insert(index, partial);
    }

    /// An item is complete: keep it whole (the server's final word).
    fn item_done(&mut self, index: u64, raw: &Value) -> Result<(), ProviderError> {
        if !raw.is_object() {
            return Err(bad(format!(
                "response.output_item.done without an `item` object: {}",
                shorten(&raw.to_string())
            )));
        }
        let streamed = self.items.insert(index, Partial::Done);
        match decode_tagged::<Item>(raw, None) {
            Item::Message { content } => {
                let full = texts(content, "output_text").concat();
                match streamed {
                    // The deltas were shown and kept already.
                    Some(Partial::Text(t)) if !t.is_empty() => {}
                    _ => self.text.push_str(&full),
                }
            }
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let (ordinal, streamed_args) = match streamed {
                    Some(Partial::Call {
                        ordinal, arguments, ..
                    }) => (ordinal, arguments),
                    _ => {
                        self.calls_started += 1;
                        (self.calls_started - 1, String::new())
                    }
                };
                let args = arguments.unwrap_or(streamed_args);
                self.calls.push(ToolCall {
                    id: call_id
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| format!("call_{ordinal}")),
                    name: name.unwrap_or_default(),
                    arguments: ToolCall::parse_arguments(&args),
                });
            }
            Item::Reasoning {
                id,
                summary,
                content,
                encrypted_content,
            } => {
                let mut r = Reasoning::new(ReasoningApi::Responses);
                r.id = id;
                r.summary = texts(summary, "summary_text");
                r.text = texts(content, "reasoning_text").concat();
                r.encrypted = encrypted_content;
                self.reasoning.push(r);
            }
            Item::Other => {}
        }
        Ok(())
    }

    fn text_delta(&mut self, index: u64, delta: String, emit: &mut dyn FnMut(StreamEvent)) {
        if delta.is_empty() {
            return;
        }
        if let Partial::Text(t) = self
            .items
            .entry(index)
            .or_insert_with(|| Partial::Text(String::new()))
        {
            t.push_str(&delta);
        }
        self.text.push_str(&delta);
        emit(StreamEvent::TextDelta(delta));
    }

    fn reasoning_delta(
        &mut self,
        index: u64,
        delta: ReasoningPiece,
        emit: &mut dyn FnMut(StreamEvent),
    ) {
        let (text, summary_index) = match &delta {
            ReasoningPiece::Text(t) => (t, None),
            ReasoningPiece::Summary(t, i) => (t, Some(*i)),
        };
        if text.is_empty() {
            return;
        }
        let entry = self
            .items
            .entry(index)
            .or_insert_with(|| Partial::Reasoning(Reasoning::new(ReasoningApi::Responses)));
        if let Partial::Reasoning(r) = entry {
            match summary_index {
                None => r.text.push_str(text),
                Some(i) => {
                    let i = usize::try_from(i)
                        .unwrap_or(usize::MAX)
                        .min(r.summary.len());
                    if i == r.summary.len() {
                        r.summary.push(String::new());
                    }
                    r.summary[i].push_str(text);
                }
            }
        }
        emit(StreamEvent::ReasoningDelta(text.clone()));
    }

    fn args_delta(&mut self, index: u64, delta: String, emit: &mut dyn FnMut(StreamEvent)) {
        if let Some(Partial::Call {
            ordinal, arguments, ..
        }) = self.items.get_mut(&index)
        {
            arguments.push_str(&delta);
            if !delta.is_empty() {
                emit(StreamEvent::ToolCallDelta {
                    index: *ordinal,
                    id: None,
                    name: None,
                    arguments: delta,
                });
            }
        }
    }

    fn end(&mut self, body: Option<ResponseBody>, incomplete: bool) {
        let body = body.unwrap_or_default();
        if let Some(u) = &body.usage {
            self.usage = Some(u.core());
        }
        self.finish = Some(if incomplete {
            match body.incomplete_details.and_then(|d| d.reason).as_deref() {
                Some(r @ "content_filter") => FinishReason::ContentFilter(r.to_owned()),
                Some("max_output_tokens") | None => FinishReason::Length,
                Some(other) => FinishReason::Other(other.to_owned()),
            }
        } else if self.calls_started > 0 {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        self.done = true;
    }
}

enum ReasoningPiece {
    Text(String),
    Summary(String, u64),
}

impl Decoder for ResponsesDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let raw: Value = serde_json::from_str(data).map_err(|e| {
            let name = if event.event.is_empty() {
                "a Responses stream event"
            } else {
                event.event.as_str()
            };
            bad(format!(
                "the `{name}` event is not valid JSON ({e}): {}",
                shorten(data)
            ))
        })?;
        let name =
            (!event.event.is_empty() && event.event != "message").then_some(event.event.as_str());
        match decode_tagged::<Event>(&raw, name) {
            Event::OutputItemAdded { output_index, item } => {
                self.added(output_index.unwrap_or(0), item, emit);
            }
            Event::OutputItemDone { output_index, item } => {
                self.item_done(output_index.unwrap_or(0), &item.unwrap_or(Value::Null))?;
            }
            Event::OutputTextDelta {
                output_index,
                delta,
            } => self.text_delta(output_index.unwrap_or(0), delta.unwrap_or_default(), emit),
            Event::FunctionCallArgumentsDelta {
                output_index,
                delta,
            } => self.args_delta(output_index.unwrap_or(0), delta.unwrap_or_default(), emit),
            Event::ReasoningSummaryTextDelta {
                output_index,
                summary_index,
                delta,
            } => self.reasoning_delta(
                output_index.unwrap_or(0),
                ReasoningPiece::Summary(delta.unwrap_or_default(), summary_index.unwrap_or(0)),
                emit,
            ),
            Event::ReasoningTextDelta {
                output_index,
                delta,
            } => self.reasoning_delta(
                output_index.unwrap_or(0),
                ReasoningPiece::Text(delta.unwrap_or_default()),
                emit,
            ),
            Event::Completed { response } => self.end(response, false),
            Event::Incomplete { response } => self.end(response, true),
            Event::Failed { response } => {
                let error = response.and_then(|r| r.error).unwrap_or_else(
                    || json!({"message": "the response failed and the server gave no reason"}),
                );
                return Err(classify_stream_error(&json!({ "error": error })));
            }
            Event::Error => return Err(classify_stream_error(&raw)),
            Event::Unknown => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(mut self, emit: &mut dyn FnMut(StreamEvent)) -> Result<ChatResponse, ProviderError> {
        if !self.done {
            return Err(ProviderError::Transient {
                message: "the stream ended before the model finished (no response.completed)"
                    .to_owned(),
            });
        }
        // Items the server never closed: what their deltas built.
        for (_, partial) in std::mem::take(&mut self.items) {
            match partial {
                Partial::Call {
                    ordinal,
                    call_id,
                    name,
                    arguments,
                } => self.calls.push(ToolCall {
                    id: call_id.unwrap_or_else(|| format!("call_{ordinal}")),
                    name: name.unwrap_or_default(),
                    arguments: ToolCall::parse_arguments(&arguments),
                }),
                Partial::Reasoning(r) if !r.is_empty() => self.reasoning.push(r),
                _ => {}
            }
        }
        Ok(emit_and_respond(
            Assembled {
                text: self.text,
                calls: self.calls,
                reasoning: self.reasoning,
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
    use crate::parse_responses_sse_chunks;

    fn ev(name: &str, v: Value) -> String {
        format!("event: {name}\ndata: {v}\n\n")
    }

    fn tool_loop_stream() -> String {
        [
            ev("response.created", json!({"type": "response.created", "response": {"id": "resp_1"}})),
            ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []}})),
            ev("response.reasoning_summary_text.delta", json!({"type": "response.reasoning_summary_text.delta",
                "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Reading "})),
            ev("response.reasoning_summary_text.delta", json!({"type": "response.reasoning_summary_text.delta",
                "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "the file."})),
            ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Reading the file."}],
                         "encrypted_content": "gAAAA-secret"}})),
            ev("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 1,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": ""}})),
            ev("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta",
                "item_id": "fc_1", "output_index": 1, "delta": "{\"path\":"})),
            ev("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta",
                "item_id": "fc_1", "output_index": 1, "delta": "\"a\"}"})),
            ev("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 1,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}"}})),
            ev("response.completed", json!({"type": "response.completed", "response": {"status": "completed",
                "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64},
                          "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 30}}}})),
        ]
        .concat()
    }

    #[test]
    fn a_tool_loop_step_keeps_its_encrypted_reasoning() {
        let stream = tool_loop_stream();
        let decoder = ResponsesDecoder::default();
        let events = parse_responses_sse_chunks(&[stream.as_bytes()]).unwrap();
        assert_eq!(
            events[..2],
            [
                StreamEvent::ReasoningDelta("Reading ".into()),
                StreamEvent::ReasoningDelta("the file.".into())
            ]
        );
        assert!(events.contains(&StreamEvent::Finish(FinishReason::ToolCalls)));
        assert!(events.contains(&StreamEvent::Usage(Usage {
            prompt_tokens: 100,
            completion_tokens: 40,
            cached_tokens: 64,
            reasoning_tokens: 30,
            ..Usage::default()
        })));
        // The assembled message holds the whole reasoning item.
        let r = crate::sse::decode_text(decoder, &stream);
        assert_eq!(r.message.reasoning.len(), 1);
        let part = &r.message.reasoning[0];
        assert_eq!(part.encrypted.as_deref(), Some("gAAAA-secret"));
        assert_eq!(part.summary, vec!["Reading the file.".to_owned()]);
        assert_eq!(r.message.tool_calls[0].arguments, json!({"path": "a"}));
    }

    #[test]
    fn cut_failed_malformed_and_unknown_events() {
        let cut = [
            ev(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1"}}),
            ),
            ev(
                "response.reasoning_text.delta",
                json!({"type": "response.reasoning_text.delta", "output_index": 0, "delta": "hmm"}),
            ),
            ev(
                "response.future_thing",
                json!({"type": "response.future_thing", "x": [1]}),
            ),
            ev(
                "response.incomplete",
                json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"}}}),
            ),
        ]
        .concat();
        let events = parse_responses_sse_chunks(&[cut.as_bytes()]).unwrap();
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish(FinishReason::Length))
        );
        let failed = ev(
            "response.failed",
            json!({"type": "response.failed", "response": {"status": "failed",
                "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}),
        );
        let err = parse_responses_sse_chunks(&[failed.as_bytes()]).unwrap_err();
        assert_eq!(err.class().name(), "context_overflow", "{err}");
        let bad_json = "event: response.output_text.delta\ndata: {\"delta\": \"x\n\n";
        let err = parse_responses_sse_chunks(&[bad_json.as_bytes()]).unwrap_err();
        assert!(
            err.to_string().contains("response.output_text.delta"),
            "{err}"
        );
        let no_item = ev(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0}),
        );
        let err = parse_responses_sse_chunks(&[no_item.as_bytes()]).unwrap_err();
        assert!(
            err.to_string().contains("response.output_item.done"),
            "{err}"
        );
        let ended = ev(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "hi"}),
        );
        let err = parse_responses_sse_chunks(&[ended.as_bytes()]).unwrap_err();
        assert_eq!(err.class().name(), "transient");
    }
}
