//! Provider-native compaction as OpenAI's Responses API and Anthropic's
//! Messages API serve it (see [`FakeServer::native_compaction`]): the
//! compact calls themselves, and the rules later requests must keep — the
//! items and signed blocks come back byte for byte, Anthropic's block first
//! and with its beta header.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use futures_util::StreamExt;

use super::{FakeServer, Inner, Shared, json_response, lock};
use crate::recorded::RecordedRequest;
use crate::wire::{encrypted_of, signature_of};

/// The beta header value Anthropic's on-demand compaction needs.
pub const COMPACTION_BETA: &str = "compact-2026-09-04";

/// How the fake answers provider-native compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NativeCompact {
    /// No compact call, as llama-server, vLLM and older servers:
    /// `POST /responses/compact` is 404, a Messages request with
    /// `compaction` is refused as an unknown field.
    #[default]
    Absent,
    /// Compacts: one `compaction` item (Responses, with the retained user
    /// messages before it) or one signed `compaction` block (Anthropic),
    /// checked byte for byte in every later request.
    Works,
    /// Answers 200 with no `compaction` item / a null block.
    Empty,
    /// Compacts, then refuses every request carrying the result (400
    /// naming the item invalid, as after a key rotation).
    RefusesItems,
    /// Answers every compact call with this status and the wire's error
    /// body (405 and 501 as servers without the route; 500 and 529 as
    /// an overloaded one).
    Status(u16),
    /// A 400 naming the endpoint (Responses) or the field (Anthropic) as
    /// not supported for the model, as gateways and proxies answer.
    NamesUnsupported,
    /// Starts a 200 answer and cuts it mid-way: half the JSON body, then
    /// the connection is reset.
    Breaks,
    /// Never answers the compact call (the request is read, nothing is
    /// sent back for ten minutes, or until the server stops).
    Hangs,
}

/// The longest [`NativeCompact::Hangs`] keeps a compact call waiting
/// (then 504), far beyond any client timeout a test sets.
pub const HANG_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

impl FakeServer {
    /// Serve provider-native compaction this way (default: absent).
    pub fn native_compaction(&self, mode: NativeCompact) -> &Self {
        self.inner().native = mode;
        self
    }

    /// The native compact calls received so far (Responses
    /// `/responses/compact`, Anthropic Messages with `compaction`).
    pub fn native_calls(&self) -> Vec<RecordedRequest> {
        self.inner()
            .requests
            .iter()
            .filter(|r| r.is_native_compaction())
            .cloned()
            .collect()
    }

    /// The items (Responses) and blocks (Anthropic) the fake issued, in
    /// order, exactly as sent.
    pub fn native_issued(&self) -> Vec<Value> {
        self.inner().native_issued.clone()
    }
}

fn openai_invalid(message: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": "invalid_value"}})
}

fn anthropic_invalid(message: &str) -> Value {
    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
}

/// The text the fake "compacts" a conversation into: every user text it
/// saw, so tests can tell what the later model still knows.
fn compacted_text(record: &RecordedRequest) -> String {
    let texts: Vec<String> = if record.is_anthropic() {
        record.user_texts()
    } else {
        record
            .input()
            .iter()
            .filter(|i| i["role"] == "user")
            .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect()
    }
    .iter()
    .map(|t| t.chars().take(48).collect())
    .collect();
    format!("Compacted by the provider: {}", texts.join(" | "))
}

/// Record and answer a native compact call
/// (`record.is_native_compaction()`); the lock is not held while it hangs.
pub(super) async fn serve(shared: &Shared, record: RecordedRequest) -> Response {
    let mode = {
        let mut inner = lock(shared);
        inner.requests.push(record.clone());
        inner.native
    };
    match mode {
        NativeCompact::Hangs => {
            tokio::time::sleep(HANG_LIMIT).await;
            return json_response(StatusCode::GATEWAY_TIMEOUT, &json!({"error": "hung"}));
        }
        NativeCompact::Status(status) => return failure(&record, status),
        NativeCompact::NamesUnsupported => {
            let body = if record.is_anthropic() {
                anthropic_invalid(
                    "compaction: on-demand compaction is not supported for this model",
                )
            } else {
                openai_invalid(
                    "The /v1/responses/compact endpoint is not supported for this model.",
                )
            };
            return json_response(StatusCode::BAD_REQUEST, &body);
        }
        _ => {}
    }
    let response = {
        let mut inner = lock(shared);
        if record.is_anthropic() {
            anthropic(&mut inner, &record)
        } else {
            responses(&mut inner, &record)
        }
    };
    if mode == NativeCompact::Breaks && response.status() == StatusCode::OK {
        return cut(response).await;
    }
    response
}

/// `status` with the wire's error body.
fn failure(record: &RecordedRequest, status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (kind, reason) = match status {
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", code.canonical_reason().unwrap_or("Error")),
    };
    let body = if record.is_anthropic() {
        json!({"type": "error", "error": {"type": kind, "message": reason}})
    } else {
        json!({"error": {"message": reason, "type": "server_error", "code": status}})
    };
    json_response(code, &body)
}

/// `response` with only the first half of its body sent, then the
/// connection reset.
async fn cut(response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let half = bytes.slice(..bytes.len() / 2);
    let items: Vec<Result<axum::body::Bytes, std::io::Error>> = vec![
        Ok(half),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "fake server: compaction answer cut mid-way",
        )),
    ];
    let stream =
        futures_util::stream::iter(items.into_iter().enumerate()).then(|(i, item)| async move {
            if i > 0 {
                // Let the half reach the client first.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            item
        });
    let mut parts = parts;
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

const RESPONSES_COMPACT_KEYS: &[&str] = &[
    "model",
    "input",
    "instructions",
    "tools",
    "prompt_cache_key",
    "previous_response_id",
    "parallel_tool_calls",
    "reasoning",
    "text",
];

fn responses(inner: &mut Inner, record: &RecordedRequest) -> Response {
    if inner.native == NativeCompact::Absent {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}),
        );
    }
    if let Some(o) = record.body.as_object()
        && let Some(k) = o
            .keys()
            .find(|k| !RESPONSES_COMPACT_KEYS.contains(&k.as_str()))
    {
        return json_response(
            StatusCode::BAD_REQUEST,
            &openai_invalid(&format!("Unknown parameter: '{k}'.")),
        );
    }
    if record.model().is_none() || record.input().is_empty() {
        return json_response(
            StatusCode::BAD_REQUEST,
            &openai_invalid("Missing required parameter: 'input'."),
        );
    }
    if let Some(bad) = check_responses_items(inner, &record.input()) {
        return json_response(StatusCode::BAD_REQUEST, &openai_invalid(&bad));
    }
    inner.native_count += 1;
    let n = inner.native_count;
    // The user messages are retained; the rest goes into the item.
    let mut output: Vec<Value> = record
        .input()
        .into_iter()
        .filter(|i| i["type"] == "message" && i["role"] == "user")
        .collect();
    if inner.native != NativeCompact::Empty {
        let item = json!({
            "type": "compaction",
            "id": format!("cmp_fake_{n}"),
            "encrypted_content": encrypted_of(&compacted_text(record)),
        });
        inner.native_issued.push(item.clone());
        output.push(item);
    }
    let tokens = crate::tokens::count_prompt_tokens(&record.body);
    json_response(
        StatusCode::OK,
        &json!({
            "id": format!("cmp_resp_{n}"),
            "object": "response.compaction",
            "created_at": 0,
            "output": output,
            "usage": {"input_tokens": tokens, "output_tokens": 64, "total_tokens": tokens + 64,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
        }),
    )
}

fn anthropic(inner: &mut Inner, record: &RecordedRequest) -> Response {
    let beta = record
        .header("anthropic-beta")
        .is_some_and(|b| b.split(',').any(|v| v.trim() == COMPACTION_BETA));
    if inner.native == NativeCompact::Absent || !beta {
        return json_response(
            StatusCode::BAD_REQUEST,
            &anthropic_invalid("compaction: Extra inputs are not permitted"),
        );
    }
    let c = &record.body["compaction"];
    if c["type"] != "summarize" || !c["instructions"].is_string() {
        return json_response(
            StatusCode::BAD_REQUEST,
            &anthropic_invalid("compaction.type: Input should be 'summarize'"),
        );
    }
    if record.body.get("stream").and_then(Value::as_bool) == Some(true) {
        return json_response(
            StatusCode::BAD_REQUEST,
            &anthropic_invalid("compaction: streaming is not supported for on-demand compaction"),
        );
    }
    if let Some(bad) = check_anthropic_blocks(inner, record) {
        return json_response(StatusCode::BAD_REQUEST, &anthropic_invalid(&bad));
    }
    inner.native_count += 1;
    let block = if inner.native == NativeCompact::Empty {
        json!({"type": "compaction", "content": null})
    } else {
        let text = compacted_text(record);
        let b = json!({"type": "compaction", "content": text, "signature": signature_of(&text)});
        inner.native_issued.push(b.clone());
        b
    };
    let tokens = crate::tokens::count_prompt_tokens(&record.body);
    json_response(
        StatusCode::OK,
        &json!({
            "id": format!("msg_cmp_{}", inner.native_count),
            "type": "message",
            "role": "assistant",
            "model": record.model().unwrap_or("fake-model"),
            "content": [block],
            "stop_reason": "compaction",
            "usage": {"input_tokens": 0, "output_tokens": 0, "iterations": [
                {"type": "compaction", "input_tokens": tokens, "output_tokens": 64},
            ]},
        }),
    )
}

/// Why a chat request breaks the native-compaction rules (`None`: it
/// keeps them): the 400 body to answer.
pub(super) fn refusal(inner: &Inner, record: &RecordedRequest) -> Option<Value> {
    if record.is_responses() {
        check_responses_items(inner, &record.input()).map(|m| openai_invalid(&m))
    } else if record.is_anthropic() {
        check_anthropic_blocks(inner, record).map(|m| anthropic_invalid(&m))
    } else {
        None
    }
}

/// Every `compaction` item must be one the fake issued, unaltered.
fn check_responses_items(inner: &Inner, input: &[Value]) -> Option<String> {
    for item in input.iter().filter(|i| i["type"] == "compaction") {
        let known = inner.native_issued.iter().any(|i| i == item);
        if !known || inner.native == NativeCompact::RefusesItems {
            let id = item["id"].as_str().unwrap_or("?");
            return Some(format!(
                "Invalid compaction item '{id}': the encrypted_content could not be verified."
            ));
        }
    }
    None
}

/// A `compaction` block must be one the fake signed, unaltered, the first
/// block of the first message, with the beta header.
fn check_anthropic_blocks(inner: &Inner, record: &RecordedRequest) -> Option<String> {
    let messages = record.messages();
    for (mi, m) in messages.iter().enumerate() {
        let Some(blocks) = m["content"].as_array() else {
            continue;
        };
        for (bi, b) in blocks.iter().enumerate() {
            if b["type"] != "compaction" {
                continue;
            }
            if (mi, bi) != (0, 0) {
                return Some(format!(
                    "messages.{mi}.content.{bi}: a compaction block must be the first block of the first message"
                ));
            }
            let text = b["content"].as_str().unwrap_or_default();
            let known = inner.native_issued.iter().any(|i| i == b);
            if !known
                || b["signature"].as_str() != Some(signature_of(text).as_str())
                || inner.native == NativeCompact::RefusesItems
            {
                return Some(format!(
                    "messages.{mi}.content.{bi}: Invalid `signature` in `compaction` block"
                ));
            }
            let beta = record
                .header("anthropic-beta")
                .is_some_and(|h| h.split(',').any(|v| v.trim() == COMPACTION_BETA));
            if !beta {
                return Some(format!(
                    "messages.{mi}.content.{bi}: compaction blocks require the `{COMPACTION_BETA}` beta"
                ));
            }
        }
    }
    None
}
