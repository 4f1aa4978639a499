//! Provider-native compaction on the wire (docs/compaction.md#native-compaction):
//! OpenAI Responses `POST <base_url>/responses/compact` and Anthropic's
//! on-demand compaction (`"compaction": {"type": "summarize", …}` on
//! `/v1/messages`, beta `compact-2026-09-04`), and how a later request
//! carries what they returned.
//!
//! Invariants: the items are kept as the server returned them and sent
//! back unchanged, first in the request (Responses: the first input items;
//! Anthropic: the first content of the first message, with the beta header
//! on every request that carries the block). Every failure is classified
//! into a [`NativeError`] so the caller falls back to its own summarizer:
//! 404/405/501 and errors naming the endpoint or field as unsupported are
//! `Unsupported`; no `compaction` item, an empty or null block is `Empty`;
//! an answer that began and broke off is `Broken`; 5xx, 529 and timeouts
//! are retried like other requests, then `Failed` (breaks are retried too).

use eonyx_core::native::{ANTHROPIC_COMPACTION_BETA, NativeCompaction, NativeProvider};
use eonyx_core::provider::{NativeError, NativeOutcome};
use eonyx_core::{ChatRequest, ProviderError, Usage};
use serde_json::{Value, json};

use crate::http::{CONNECTION_BROKE, Http, next_delay};

/// The keys of a Responses request the compact call keeps: the same
/// `model`, `instructions`, tools and `prompt_cache_key`, and the input.
const COMPACT_KEYS: &[&str] = &[
    "model",
    "instructions",
    "input",
    "tools",
    "prompt_cache_key",
];

/// The `/responses/compact` body made from the `/responses` body of the
/// part to compact.
pub(crate) fn responses_compact_body(full: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in COMPACT_KEYS {
        if let Some(v) = full.get(*k) {
            out.insert((*k).to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// Put a Responses native compaction's items first in `body["input"]`.
pub(crate) fn carry_responses(body: &mut Value, native: Option<&NativeCompaction>) {
    let Some(n) = native.filter(|n| n.provider == NativeProvider::Responses) else {
        return;
    };
    if let Some(input) = body.get_mut("input").and_then(Value::as_array_mut) {
        let rest = std::mem::take(input);
        input.extend(n.items.iter().cloned());
        input.extend(rest);
    }
}

/// Put an Anthropic compaction block first in the first message's
/// content (a user message of its own when the first one is not a user's).
pub(crate) fn carry_anthropic(body: &mut Value, native: Option<&NativeCompaction>) {
    let Some(n) = native.filter(|n| n.provider == NativeProvider::Anthropic) else {
        return;
    };
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    let first_is_user = messages
        .first()
        .is_some_and(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    if !first_is_user {
        messages.insert(0, json!({"role": "user", "content": n.items.clone()}));
        return;
    }
    if let Some(first) = messages.first_mut() {
        let content = match first.get_mut("content").map(Value::take) {
            Some(Value::Array(blocks)) => blocks,
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        let mut blocks = n.items.clone();
        blocks.extend(content);
        first["content"] = Value::Array(blocks);
    }
}

/// Whether `request` needs Anthropic's compaction beta header.
pub(crate) fn needs_anthropic_beta(request: &ChatRequest) -> bool {
    request
        .native
        .as_ref()
        .is_some_and(|n| n.provider == NativeProvider::Anthropic)
}

/// The `anthropic-beta` header value: `betas` joined, the compaction one
/// added when `native`.
pub(crate) fn anthropic_betas(mut betas: Vec<&'static str>, native: bool) -> Option<String> {
    if native {
        betas.push(ANTHROPIC_COMPACTION_BETA);
    }
    (!betas.is_empty()).then(|| betas.join(","))
}

/// Whether a refusal names the endpoint or the field as unsupported
/// (remembered, never tried again for that base URL + model).
fn names_unsupported(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let about = ["compact", "endpoint", "route", "path", "not found", "beta"];
    let unsupported = [
        "unsupported",
        "not supported",
        "unknown",
        "unrecognized",
        "not found",
        "not available",
        "does not exist",
        "extra inputs are not permitted",
    ];
    about.iter().any(|a| m.contains(a)) && unsupported.iter().any(|u| m.contains(u))
}

/// Classify a failed call: unsupported, or failed (after retries).
fn classify(err: ProviderError) -> NativeError {
    match &err {
        ProviderError::Rejected { status, message } => {
            if matches!(status, 404 | 405 | 501) || names_unsupported(message) {
                NativeError::Unsupported(format!("HTTP {status}: {message}"))
            } else {
                NativeError::Failed(err)
            }
        }
        _ => NativeError::Failed(err),
    }
}

/// POST `body` to `url` with `headers`, retrying what other requests retry
/// (5xx, 529, 429, resets, timeouts within the idle timeout), and read the
/// JSON answer. 404/405/501 are never retried. An answer that began and
/// broke off on the last try is [`NativeError::Broken`].
pub(crate) async fn post_json(
    http: &Http,
    builder: impl Fn() -> Result<reqwest::RequestBuilder, ProviderError>,
    url: &str,
    cancel: &eonyx_core::provider::CancellationToken,
) -> Result<Value, NativeError> {
    let work = async {
        let mut backoff = http.retry.backoff();
        loop {
            let failure = match send_once(http, builder()?, url).await {
                Ok(v) => return Ok(v),
                Err(f) => Failure {
                    err: http.redact_error(f.err),
                    broke: f.broke,
                },
            };
            if let ProviderError::Transient { message } = &failure.err
                && message.starts_with("HTTP 501")
            {
                return Err(Failure {
                    err: ProviderError::Rejected {
                        status: 501,
                        message: message.clone(),
                    },
                    broke: false,
                });
            }
            let Some(delay) = next_delay(&failure.err, &mut backoff, &http.retry) else {
                return Err(failure);
            };
            tokio::time::sleep(delay).await;
        }
    };
    let result = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Failure::from(ProviderError::Cancelled)),
        r = work => r,
    };
    result.map_err(|f| match f.err {
        ProviderError::Cancelled => NativeError::Failed(ProviderError::Cancelled),
        e if f.broke => NativeError::Broken(e.to_string()),
        e => classify(e),
    })
}

/// A failed try, and whether it failed after the answer began: a 200
/// whose body broke off, or was cut into JSON that does not parse (a body
/// that stalls past the idle timeout is a timeout, not a break).
struct Failure {
    err: ProviderError,
    broke: bool,
}

impl From<ProviderError> for Failure {
    fn from(err: ProviderError) -> Self {
        Self { err, broke: false }
    }
}

async fn send_once(
    http: &Http,
    builder: reqwest::RequestBuilder,
    url: &str,
) -> Result<Value, Failure> {
    let resp = http.send(builder, url).await?;
    http.read_json(resp).await.map_err(|err| {
        let broke = match &err {
            ProviderError::BadResponse { .. } => true,
            ProviderError::Transient { message } => message.starts_with(CONNECTION_BROKE),
            _ => false,
        };
        Failure { err, broke }
    })
}

/// The native compaction in a `/responses/compact` answer: its `output`
/// items, which must hold a `compaction` item with `encrypted_content`.
/// `model` at `base_url` made them: both are named in the record.
pub(crate) fn parse_responses(
    model: &str,
    base_url: &str,
    body: &Value,
) -> Result<NativeOutcome, NativeError> {
    let items: Vec<Value> = body
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has_compaction = items.iter().any(|i| {
        i.get("type").and_then(Value::as_str) == Some("compaction")
            && i.get("encrypted_content")
                .and_then(Value::as_str)
                .is_some_and(|c| !c.is_empty())
    });
    if !has_compaction {
        return Err(NativeError::Empty(
            "the answer has no `compaction` item with encrypted_content".into(),
        ));
    }
    let usage = body.get("usage").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            prompt_tokens: n("input_tokens"),
            completion_tokens: n("output_tokens"),
            cached_tokens: u
                .pointer("/input_tokens_details/cached_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            reasoning_tokens: u
                .pointer("/output_tokens_details/reasoning_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    });
    Ok(NativeOutcome {
        native: NativeCompaction {
            provider: NativeProvider::Responses,
            model: model.to_owned(),
            base_url: Some(base_url.to_owned()),
            items,
        },
        usage,
    })
}

/// The Anthropic on-demand compaction body: the Messages body of the part
/// to compact (not streamed) plus `compaction` with eonyx's instructions.
pub(crate) fn anthropic_compact_body(mut full: Value, instructions: &str) -> Value {
    if let Some(o) = full.as_object_mut() {
        o.insert("stream".into(), Value::Bool(false));
        o.insert(
            "compaction".into(),
            json!({"type": "summarize", "instructions": instructions}),
        );
    }
    full
}

/// The signed `compaction` block of an Anthropic answer; its usage is
/// summed over `usage.iterations` when the server reports them.
/// `model` at `base_url` made it: both are named in the record.
pub(crate) fn parse_anthropic(
    model: &str,
    base_url: &str,
    body: &Value,
) -> Result<NativeOutcome, NativeError> {
    let block = body
        .get("content")
        .and_then(Value::as_array)
        .and_then(|c| {
            c.iter()
                .find(|b| b.get("type").and_then(Value::as_str) == Some("compaction"))
        })
        .cloned();
    let Some(block) = block else {
        return Err(NativeError::Empty(
            "the answer has no `compaction` block".into(),
        ));
    };
    let text_ok = block
        .get("content")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.trim().is_empty());
    if !text_ok {
        return Err(NativeError::Empty(
            "the `compaction` block is empty or null".into(),
        ));
    }
    let usage = body.get("usage").map(|u| {
        let one = |u: &Value| {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            Usage {
                prompt_tokens: n("input_tokens")
                    + n("cache_read_input_tokens")
                    + n("cache_creation_input_tokens"),
                completion_tokens: n("output_tokens"),
                cached_tokens: n("cache_read_input_tokens"),
                reasoning_tokens: 0,
                cache_write_tokens: n("cache_creation_input_tokens"),
            }
        };
        match u.get("iterations").and_then(Value::as_array) {
            Some(its) if !its.is_empty() => {
                its.iter().map(one).fold(Usage::default(), |a, b| Usage {
                    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
                    completion_tokens: a.completion_tokens + b.completion_tokens,
                    cached_tokens: a.cached_tokens + b.cached_tokens,
                    reasoning_tokens: 0,
                    cache_write_tokens: a.cache_write_tokens + b.cache_write_tokens,
                })
            }
            _ => one(u),
        }
    });
    Ok(NativeOutcome {
        native: NativeCompaction {
            provider: NativeProvider::Anthropic,
            model: model.to_owned(),
            base_url: Some(base_url.to_owned()),
            items: vec![block],
        },
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_is_told_apart_from_other_failures() {
        let e = classify(ProviderError::Rejected {
            status: 404,
            message: "File Not Found".into(),
        });
        assert!(matches!(e, NativeError::Unsupported(_)));
        let e = classify(ProviderError::Rejected {
            status: 400,
            message: "Unknown parameter: 'compaction'".into(),
        });
        assert!(matches!(e, NativeError::Unsupported(_)));
        let e = classify(ProviderError::Rejected {
            status: 400,
            message: "messages: roles must alternate".into(),
        });
        assert!(matches!(e, NativeError::Failed(_)));
    }

    #[test]
    fn anthropic_usage_sums_iterations_and_an_empty_block_is_empty() {
        let body = json!({
            "content": [{"type": "compaction", "content": "kept", "signature": "s1"}],
            "usage": {"input_tokens": 5, "output_tokens": 1, "iterations": [
                {"type": "compaction", "input_tokens": 100, "output_tokens": 20},
                {"type": "message", "input_tokens": 30, "output_tokens": 2},
            ]},
        });
        let out = parse_anthropic("claude", "http://h", &body).unwrap();
        let u = out.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (130, 22));
        let empty = json!({"content": [{"type": "compaction", "content": null}]});
        assert!(matches!(
            parse_anthropic("claude", "http://h", &empty),
            Err(NativeError::Empty(_))
        ));
    }

    #[test]
    fn the_block_goes_first_in_the_first_user_message() {
        let n = NativeCompaction {
            provider: NativeProvider::Anthropic,
            model: "claude".into(),
            base_url: None,
            items: vec![json!({"type": "compaction", "content": "c", "signature": "s"})],
        };
        let mut body =
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "pins"}]}]});
        carry_anthropic(&mut body, Some(&n));
        assert_eq!(body["messages"][0]["content"][0]["signature"], "s");
        assert_eq!(body["messages"][0]["content"][1]["text"], "pins");
    }
}
