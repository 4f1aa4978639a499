//! A reply as the provider's wire bytes: JSON or SSE, with delays, resets,
//! extra headers and the error bodies.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;

use super::json_response;
use crate::recorded::RecordedRequest;
use crate::reply::{Reply, ReplyKind};
use crate::tokens::count_text_tokens;
use crate::wire::{self, Figures, Outcome, OverflowFlavor};

fn with_headers(mut response: Response, extra: &[(String, String)]) -> Response {
    for (name, value) in extra {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// A body that sends `chunks` (with `delay` before each one after the
/// first) and, when `reset` is set, then fails so the connection is dropped
/// without a proper end.
fn chunked_body(chunks: Vec<Bytes>, delay: Duration, reset: bool) -> Body {
    let mut items: Vec<Result<Bytes, std::io::Error>> = chunks.into_iter().map(Ok).collect();
    if reset {
        items.push(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "fake server: connection reset mid-stream",
        )));
    }
    let stream = futures_util::stream::iter(items.into_iter().enumerate()).then(
        move |(i, item)| async move {
            if item.is_err() {
                // Let the chunks before it reach the client first.
                tokio::time::sleep(Duration::from_millis(20)).await;
            } else if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            item
        },
    );
    Body::from_stream(stream)
}

pub(super) async fn render(
    reply: Reply,
    record: &RecordedRequest,
    anthropic: bool,
    id: u64,
    mut figures: Figures,
    model: String,
    flavor: OverflowFlavor,
) -> Response {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let stream = record.stream();
    let (text, calls) = match &reply.kind {
        ReplyKind::Error { status, body } => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let response = (
                status,
                [(header::CONTENT_TYPE, "application/json")],
                body.clone(),
            )
                .into_response();
            return with_headers(response, &reply.headers);
        }
        ReplyKind::RateLimited { retry_after_secs } => {
            let mut response = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &wire::rate_limit_body(anthropic),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            return with_headers(response, &reply.headers);
        }
        ReplyKind::ServerError => {
            let response = json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &wire::server_error_body(anthropic),
            );
            return with_headers(response, &reply.headers);
        }
        ReplyKind::Malformed => {
            let response = if stream {
                sse_response(
                    wire::malformed_stream(anthropic),
                    reply.chunk_delay,
                    reply.reset_after,
                )
            } else {
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"id\":\"chatcmpl-fake\",\"choices\":[{\"message\":{\"content\":\"trunc",
                )
                    .into_response()
            };
            return with_headers(response, &reply.headers);
        }
        ReplyKind::Text(text) => (text.clone(), Vec::new()),
        ReplyKind::Echo => (
            record.last_user_text().unwrap_or_else(|| "ok".to_owned()),
            Vec::new(),
        ),
        ReplyKind::ToolCalls { text, calls } => (text.clone().unwrap_or_default(), calls.clone()),
    };

    let prefix = if anthropic { "toolu_fake" } else { "call_fake" };
    let calls: Vec<(String, String, String)> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                format!("{prefix}_{id}_{i}"),
                c.name.clone(),
                match &c.arguments {
                    // Raw (possibly cut) argument text.
                    Value::String(raw) => raw.clone(),
                    v => v.to_string(),
                },
            )
        })
        .collect();
    let mut generated = text.clone();
    for (_, name, args) in &calls {
        generated.push_str(name);
        generated.push_str(args);
    }
    figures.completion = count_text_tokens(&generated);
    if let Some(p) = reply.usage.prompt_tokens {
        figures.prompt = p;
    }
    if let Some(c) = reply.usage.completion_tokens {
        figures.completion = c;
    }
    if let Some(c) = reply.usage.cached_tokens {
        figures.cached = c;
    }
    let outcome = Outcome {
        id: if anthropic {
            format!("msg_fake_{id}")
        } else {
            format!("chatcmpl-fake-{id}")
        },
        model,
        text,
        calls,
        usage: (!reply.omit_usage).then_some(figures),
        finish: reply.finish_reason.clone(),
        timings: !anthropic && flavor == OverflowFlavor::LlamaCpp,
        reasoning: reply.reasoning.clone(),
    };

    let response = if stream || record.is_responses() {
        let events = if anthropic {
            outcome.anthropic_stream()
        } else if record.is_responses() {
            outcome.responses_stream(flavor == OverflowFlavor::LlamaCpp)
        } else {
            let include_usage = record
                .body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            outcome.openai_stream(include_usage)
        };
        sse_response(events, reply.chunk_delay, reply.reset_after)
    } else {
        let body = if anthropic {
            outcome.anthropic_json()
        } else {
            outcome.openai_json()
        };
        match reply.reset_after {
            None => json_response(StatusCode::OK, &body),
            Some(_) => {
                let text = body.to_string();
                let half = Bytes::from(text.as_bytes()[..text.len() / 2].to_vec());
                let mut response = (
                    StatusCode::OK,
                    chunked_body(vec![half], Duration::ZERO, true),
                )
                    .into_response();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
        }
    };
    with_headers(response, &reply.headers)
}

fn sse_response(events: Vec<Bytes>, delay: Duration, reset_after: Option<usize>) -> Response {
    let (events, reset) = match reset_after {
        Some(n) => (events.into_iter().take(n).collect(), true),
        None => (events, false),
    };
    let mut response = (StatusCode::OK, chunked_body(events, delay, reset)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
