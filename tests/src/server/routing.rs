//! What each request gets: it is recorded, then checked (refused
//! parameter, API key, Ollama and window endpoints, context window), then
//! answered by the responder, the queue or the default reply.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::quirks::{kept_tokens, ollama_endpoint, refusal};
use super::render::render;
use super::timeline::{EndGuard, Moment};
use super::{Inner, Responder, Shared, json_response, lock};
use crate::recorded::RecordedRequest;
use crate::tokens::{cached_tokens, canonical_prompt, count_prompt_tokens};
use crate::wire::{self, Figures};

/// What to do with a chat request, decided under the lock.
enum Decision {
    Immediate(Response),
    Consult(Option<Responder>),
}

/// A mining request is answered by the extractor (or with no memories),
/// never from the queue.
fn mining_reply(extractor: Option<Responder>, record: &RecordedRequest) -> crate::reply::Reply {
    extractor
        .and_then(|f| f(record))
        .unwrap_or_else(|| crate::reply::Reply::text(super::script::NO_MEMORIES))
}

pub(super) async fn handle(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut recorded_headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        recorded_headers
            .entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let mut record = RecordedRequest {
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        headers: recorded_headers,
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        body: parsed,
        prompt_tokens: 0,
    };
    if record.is_native_compaction() {
        return super::native::serve(&shared, record).await;
    }
    let chat = record.is_chat();
    if chat {
        record.prompt_tokens = count_prompt_tokens(&record.body);
    }
    let anthropic = record.is_anthropic();

    let summarizer = chat && record.is_summarizer();
    let (decision, index) = {
        let mut inner = lock(&shared);
        inner.requests.push(record.clone());
        let index = inner.requests.len() - 1;
        if chat {
            inner.timeline.push(Moment::Started {
                request: index,
                summarizer,
            });
        }
        let refused = chat.then(|| refusal(&inner, &record)).flatten();
        let decision = match refused {
            Some((status, body)) => {
                inner.refusals += 1;
                Decision::Immediate(json_response(status, &body))
            }
            None => {
                let d = decide(&inner, &record, chat, anthropic);
                if chat
                    && let Some(o) = inner.ollama
                    && record.prompt_tokens > o.runs_with
                {
                    inner.truncated += 1;
                    record.prompt_tokens = kept_tokens(&record.body, o.runs_with);
                }
                d
            }
        };
        (decision, index)
    };
    let guard = chat.then(|| EndGuard::new(&shared, index));
    let responder = match decision {
        Decision::Immediate(response) => {
            return match guard {
                Some(g) => g.watch(response),
                None => response,
            };
        }
        Decision::Consult(responder) => responder,
    };
    let scripted = if record.is_miner() {
        let extractor = lock(&shared).extractor.clone();
        Some(mining_reply(extractor, &record))
    } else {
        responder.and_then(|f| f(&record))
    };

    let (reply, id, figures, model, flavor) = {
        let mut inner = lock(&shared);
        let mut reply = match scripted {
            Some(reply) => reply,
            None => match inner.queue.pop_front() {
                Some(reply) => reply,
                None => inner.default_reply.clone(),
            },
        };
        if summarizer {
            reply.delay += inner.summarizer_delay;
        }
        let id = inner.next_id;
        inner.next_id += 1;
        if let Some(text) = &reply.reasoning {
            // Any reasoning the fake gave may come back; a tool call's must.
            inner.issued.insert(format!("reply_{id}"), text.clone());
            if let crate::reply::ReplyKind::ToolCalls { calls, .. } = &reply.kind {
                let prefix = if anthropic { "toolu_fake" } else { "call_fake" };
                for i in 0..calls.len() {
                    inner
                        .issued
                        .insert(format!("{prefix}_{id}_{i}"), text.clone());
                }
            }
        }
        let canonical = canonical_prompt(&record.body);
        let cached = cached_tokens(
            inner.previous_prompt.as_deref(),
            &canonical,
            record.prompt_tokens,
        );
        inner.previous_prompt = Some(canonical);
        let figures = Figures {
            prompt: record.prompt_tokens,
            completion: 0,
            cached,
        };
        let model = record
            .model()
            .map_or_else(|| inner.model_id.clone(), str::to_owned);
        (reply, id, figures, model, inner.flavor)
    };
    if let Some(n) = reply.hold_until {
        let deadline = tokio::time::Instant::now() + crate::reply::HOLD_LIMIT;
        while tokio::time::Instant::now() < deadline
            && lock(&shared)
                .requests
                .iter()
                .filter(|r| r.is_chat())
                .count()
                < n
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    let response = render(reply, &record, anthropic, id, figures, model, flavor).await;
    match guard {
        Some(g) => g.watch(response),
        None => response,
    }
}

fn decide(inner: &Inner, record: &RecordedRequest, chat: bool, anthropic: bool) -> Decision {
    let needs_key = chat || record.path == "/v1/models";
    if needs_key && let Some(key) = &inner.api_key {
        let ok = if anthropic {
            record.header("x-api-key") == Some(key.as_str())
        } else {
            record.header("authorization") == Some(format!("Bearer {key}").as_str())
        };
        if !ok {
            return Decision::Immediate(json_response(
                StatusCode::UNAUTHORIZED,
                &wire::auth_body(anthropic),
            ));
        }
    }
    let loaded = inner.requests.iter().any(RecordedRequest::is_chat);
    if let Some(o) = inner.ollama
        && let Some(r) = ollama_endpoint(&o, record, &inner.model_id, loaded)
    {
        return Decision::Immediate(r);
    }
    if record.method == "GET" {
        let response = match (record.path.as_str(), inner.props_ctx, inner.models_ctx) {
            ("/props", Some(n_ctx), _) => json_response(
                StatusCode::OK,
                &json!({
                    "default_generation_settings": {"n_ctx": n_ctx},
                    "total_slots": inner.total_slots,
                    "model_path": "fake-model.gguf",
                }),
            ),
            ("/v1/models", _, Some(window)) => json_response(
                StatusCode::OK,
                &json!({"object": "list", "data": [{
                    "id": inner.model_id, "object": "model", "created": 0, "owned_by": "eonyx-fake",
                    "context_length": window, "max_model_len": window,
                }]}),
            ),
            ("/v1/models", _, None) if inner.list_models => json_response(
                StatusCode::OK,
                &json!({"object": "list", "data": [{
                    "id": inner.model_id, "object": "model", "created": 0, "owned_by": "llamacpp",
                    "meta": {"n_ctx_train": 131072},
                }]}),
            ),
            _ => not_found(),
        };
        return Decision::Immediate(response);
    }
    if !chat {
        return Decision::Immediate(not_found());
    }
    if let Some(window) = inner.context_window
        && record.prompt_tokens > window
    {
        return Decision::Immediate(json_response(
            StatusCode::BAD_REQUEST,
            &wire::overflow_body(anthropic, inner.flavor, record.prompt_tokens, window),
        ));
    }
    Decision::Consult(inner.responder.clone())
}

fn not_found() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}),
    )
}
