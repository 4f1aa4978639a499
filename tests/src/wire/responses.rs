//! A reply as OpenAI's Responses API streams it (`POST /v1/responses`):
//! `response.created`, one output item per reasoning / message / function
//! call (`added`, its deltas, `done` with the whole item), then
//! `response.completed` (or `response.incomplete` when cut) with usage.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{Outcome, encrypted_of, halves, pieces};

fn event(seq: &mut u64, name: &str, mut v: Value) -> Bytes {
    v["type"] = json!(name);
    v["sequence_number"] = json!(*seq);
    *seq += 1;
    Bytes::from(format!("event: {name}\ndata: {v}\n\n"))
}

impl Outcome {
    fn responses_usage(&self) -> Option<Value> {
        self.usage.map(|u| {
            let reasoning = self
                .reasoning
                .as_deref()
                .map_or(0, crate::tokens::count_text_tokens);
            json!({
                "input_tokens": u.prompt,
                "input_tokens_details": {"cached_tokens": u.cached},
                "output_tokens": u.completion + reasoning,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": u.prompt + u.completion + reasoning,
            })
        })
    }

    /// SSE events of a streamed Responses API reply. With `llama` the
    /// reasoning item is llama-server's: its text as `reasoning_text`
    /// content and no encrypted content.
    pub fn responses_stream(&self, llama: bool) -> Vec<Bytes> {
        let mut seq = 0;
        let mut out = vec![event(
            &mut seq,
            "response.created",
            json!({"response": {"id": self.id, "status": "in_progress", "model": self.model}}),
        )];
        let mut index = 0;
        if let Some(text) = &self.reasoning {
            let id = format!("rs_{}", self.id);
            out.push(event(
                &mut seq,
                "response.output_item.added",
                json!({"output_index": index, "item": {"type": "reasoning", "id": id, "summary": []}}),
            ));
            let delta_event = if llama {
                "response.reasoning_text.delta"
            } else {
                "response.reasoning_summary_text.delta"
            };
            for piece in pieces(text) {
                out.push(event(
                    &mut seq,
                    delta_event,
                    json!({"item_id": id, "output_index": index, "summary_index": 0,
                        "content_index": 0, "delta": piece}),
                ));
            }
            let item = if llama {
                json!({"type": "reasoning", "id": id, "summary": [],
                    "content": [{"type": "reasoning_text", "text": text}]})
            } else {
                json!({"type": "reasoning", "id": id,
                    "summary": [{"type": "summary_text", "text": text}],
                    "encrypted_content": encrypted_of(text)})
            };
            out.push(event(
                &mut seq,
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            ));
            index += 1;
        }
        if !self.text.is_empty() || self.calls.is_empty() {
            let id = format!("msg_{}", self.id);
            out.push(event(
                &mut seq,
                "response.output_item.added",
                json!({"output_index": index, "item": {"type": "message", "id": id,
                    "role": "assistant", "status": "in_progress", "content": []}}),
            ));
            for piece in pieces(&self.text) {
                out.push(event(
                    &mut seq,
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece}),
                ));
            }
            out.push(event(
                &mut seq,
                "response.output_item.done",
                json!({"output_index": index, "item": {"type": "message", "id": id,
                    "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": self.text, "annotations": []}]}}),
            ));
            index += 1;
        }
        for (call_id, name, args) in &self.calls {
            let id = format!("fc_{call_id}");
            out.push(event(
                &mut seq,
                "response.output_item.added",
                json!({"output_index": index, "item": {"type": "function_call", "id": id,
                    "call_id": call_id, "name": name, "arguments": ""}}),
            ));
            let (a, b) = halves(args);
            for part in [a, b] {
                out.push(event(
                    &mut seq,
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": index, "delta": part}),
                ));
            }
            out.push(event(
                &mut seq,
                "response.output_item.done",
                json!({"output_index": index, "item": {"type": "function_call", "id": id,
                    "call_id": call_id, "name": name, "arguments": args}}),
            ));
            index += 1;
        }
        // Cut by the output cap, or blocked by the content filter: both
        // end as `response.incomplete` with the reason.
        let incomplete = match self.finish.as_deref() {
            Some("length" | "max_tokens") => Some("max_output_tokens"),
            Some("content_filter") => Some("content_filter"),
            _ => None,
        };
        let cut = incomplete.is_some();
        let mut response = json!({"id": self.id, "model": self.model,
            "status": if cut { "incomplete" } else { "completed" }});
        if let Some(reason) = incomplete {
            response["incomplete_details"] = json!({"reason": reason});
        }
        if let Some(u) = self.responses_usage() {
            response["usage"] = u;
        }
        let name = if cut {
            "response.incomplete"
        } else {
            "response.completed"
        };
        out.push(event(&mut seq, name, json!({ "response": response })));
        out
    }
}
