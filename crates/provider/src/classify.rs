//! Turning HTTP statuses and the error bodies real servers send into
//! [`ProviderError`] classes.
//!
//! Bodies are recognised by shape and wording, not by which provider we
//! think we talk to: llama-server answers `/v1/messages` with its own error
//! shape, OpenRouter forwards upstream messages, and so on.

use std::time::Duration;

use eonyx_core::ProviderError;
use serde_json::Value;

use crate::wire::{Code, ErrorBody, ErrorMember};

/// The longest server message kept in an error (characters).
const MAX_MESSAGE_CHARS: usize = 600;

/// Classify a failed HTTP response.
///
/// `retry_after` is the parsed `Retry-After` header, `body` the (possibly
/// truncated) response body, `env_var` the variable that holds the API key
/// (named in `Auth` errors).
pub fn classify_http(
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
    env_var: Option<&str>,
) -> ProviderError {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let message = match &json {
        Some(v) => error_message(v).unwrap_or_else(|| shorten(body.trim())),
        None => shorten(body.trim()),
    };
    let message = if message.is_empty() {
        format!("HTTP {status} with an empty body")
    } else {
        message
    };
    match status {
        401 | 403 => ProviderError::Auth {
            status,
            env_var: env_var.map(str::to_owned),
            message,
        },
        429 => {
            let code = json.as_ref().and_then(error_code).unwrap_or_default();
            if code == "insufficient_quota" {
                // Retrying does not help: the account is out of credit.
                ProviderError::Rejected { status, message }
            } else {
                ProviderError::RateLimited {
                    retry_after,
                    message,
                }
            }
        }
        _ => {
            if let Some(e) = overflow(json.as_ref(), &message) {
                return e;
            }
            if status == 413 {
                return ProviderError::ContextOverflow {
                    message,
                    prompt_tokens: None,
                    limit: None,
                };
            }
            // llama-server refuses images with a 500; retrying cannot help.
            if crate::refusal::names_images(&message) {
                return ProviderError::Rejected { status, message };
            }
            if status >= 500 || status == 408 || status == 409 {
                ProviderError::Transient {
                    message: format!("HTTP {status}: {message}"),
                }
            } else {
                ProviderError::Rejected { status, message }
            }
        }
    }
}

/// Classify an error object that arrived inside a stream (an OpenAI-style
/// `{"error":{…}}` chunk, a vLLM `{"object":"error",…}` chunk or an
/// Anthropic `error` event).
pub fn classify_stream_error(value: &Value) -> ProviderError {
    let message = error_message(value).unwrap_or_else(|| shorten(&value.to_string()));
    if let Some(e) = overflow(Some(value), &message) {
        return e;
    }
    let body = ErrorBody::read(value);
    let fields = body.fields();
    let kind = fields.and_then(|f| f.kind.as_deref()).unwrap_or_default();
    let status = fields.and_then(|f| f.code.as_ref()).and_then(Code::status);
    match kind {
        "authentication_error" | "permission_error" => ProviderError::Auth {
            status: status.unwrap_or(401),
            env_var: None,
            message,
        },
        "rate_limit_error" => ProviderError::RateLimited {
            retry_after: None,
            message,
        },
        "request_too_large" => ProviderError::ContextOverflow {
            message,
            prompt_tokens: None,
            limit: None,
        },
        "invalid_request_error" | "not_found_error" => ProviderError::Rejected {
            status: status.unwrap_or(400),
            message,
        },
        _ => match status {
            Some(s) if (400..500).contains(&s) && s != 408 && s != 429 => {
                ProviderError::Rejected { status: s, message }
            }
            _ => ProviderError::Transient {
                message: format!("the server reported an error mid-stream: {message}"),
            },
        },
    }
}

/// The context limit a [`ProviderError::ContextOverflow`] carries, if the
/// server told it.
pub fn parse_overflow_limit(err: &ProviderError) -> Option<u64> {
    match err {
        ProviderError::ContextOverflow { limit, .. } => *limit,
        _ => None,
    }
}

/// Parse a `Retry-After` header value: delay seconds (fractions allowed)
/// or an HTTP date, relative to `now`. A date in the past means "now".
pub fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    static PARSER: jiff::fmt::rfc2822::DateTimeParser = jiff::fmt::rfc2822::DateTimeParser::new();
    let at = PARSER.parse_timestamp(value).ok()?;
    let ms = at.as_millisecond() - now.as_millisecond();
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

/// The human message of an error body in any of the shapes servers use.
pub(crate) fn error_message(v: &Value) -> Option<String> {
    let body = ErrorBody::read(v);
    let m = match body.error {
        Some(ErrorMember::Text(s)) => Some(s),
        Some(ErrorMember::Other { fields, raw }) => {
            fields.message.flatten().or_else(|| Some(raw.to_string()))
        }
        // A `message` of another type hides `detail`.
        None => match body.top.message {
            Some(m) => m,
            None => body.detail,
        },
    };
    m.map(|s| shorten(&s))
}

fn error_code(v: &Value) -> Option<String> {
    match ErrorBody::read(v).error? {
        ErrorMember::Other { fields, .. } => fields.code.map(|c| c.text()),
        ErrorMember::Text(_) => None,
    }
}

/// Context-overflow recognition, with the figures when the body has them.
fn overflow(json: Option<&Value>, message: &str) -> Option<ProviderError> {
    let body = json.map(ErrorBody::read);
    let fields = body.as_ref().and_then(ErrorBody::fields);
    let kind = fields.and_then(|f| f.kind.as_deref()).unwrap_or_default();
    let code = fields
        .and_then(|f| f.code.as_ref())
        .and_then(Code::as_str)
        .unwrap_or_default();

    // llama.cpp: {"error":{"code":400,"type":"exceed_context_size_error","n_prompt_tokens":…,"n_ctx":…}}
    if kind == "exceed_context_size_error" {
        return Some(ProviderError::ContextOverflow {
            message: message.to_owned(),
            prompt_tokens: fields.and_then(|f| f.n_prompt_tokens),
            limit: fields.and_then(|f| f.n_ctx),
        });
    }
    let lower = message.to_lowercase();
    const MARKERS: &[&str] = &[
        "maximum context length",
        "context_length_exceeded",
        "prompt is too long",
        "exceeds the available context size",
        "exceed context limit",
        "context length exceeded",
        "exceeded max context length",
        "context length of only",
        "exceeds the maximum number of tokens allowed",
    ];
    let by_code = code == "context_length_exceeded" || kind == "request_too_large";
    if !by_code && !MARKERS.iter().any(|m| lower.contains(m)) {
        return None;
    }
    let (prompt_tokens, limit) = overflow_figures(&lower);
    Some(ProviderError::ContextOverflow {
        message: message.to_owned(),
        prompt_tokens,
        limit,
    })
}

/// `(prompt tokens, limit)` from the wording of the known overflow messages
/// (`lower` is lower-cased).
fn overflow_figures(lower: &str) -> (Option<u64>, Option<u64>) {
    // Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    if let Some(p) = number_after(lower, "prompt is too long: ") {
        let rest = &lower[lower.find("prompt is too long: ").unwrap_or(0)..];
        return (Some(p), number_after(rest, "> "));
    }
    // Anthropic: "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000"
    if let Some(p) = number_after(lower, "exceed context limit: ") {
        let rest = &lower[lower.find("exceed context limit: ").unwrap_or(0)..];
        return (Some(p), number_after(rest, "> "));
    }
    // Gemini: "the input token count (1048580) exceeds the maximum number of tokens allowed (1048576)"
    if let Some(l) = number_after(lower, "tokens allowed (") {
        return (number_after(lower, "input token count ("), Some(l));
    }
    // OpenAI, vLLM, OpenRouter: "maximum context length is 8192 tokens"
    // LM Studio: "loaded with context length of only 4096 tokens"
    let limit = number_after(lower, "maximum context length is ")
        .or_else(|| number_after(lower, "context length of only "));
    // "your messages resulted in 9000 tokens" / "(2000 in the messages" /
    // "your request has 1900 input tokens" / "you requested 2100 tokens"
    let prompt = number_after(lower, "resulted in ")
        .or_else(|| number_before(lower, " in the messages"))
        .or_else(|| number_after(lower, "your request has "))
        .or_else(|| number_after(lower, "you requested about "))
        .or_else(|| number_after(lower, "you requested "));
    (prompt, limit)
}

/// The integer right after `marker` (commas allowed as separators).
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let start = text.find(marker)? + marker.len();
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The integer right before `marker`.
fn number_before(text: &str, marker: &str) -> Option<u64> {
    let end = text.find(marker)?;
    let rev: String = text[..end]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    rev.chars().rev().collect::<String>().parse().ok()
}

/// Cut a server message to a readable length.
pub(crate) fn shorten(s: &str) -> String {
    eonyx_core::text::ellipsize(s, MAX_MESSAGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(e: &ProviderError) -> (Option<u64>, Option<u64>) {
        match e {
            ProviderError::ContextOverflow {
                prompt_tokens,
                limit,
                ..
            } => (*prompt_tokens, *limit),
            other => panic!("expected ContextOverflow, got {other:?}"),
        }
    }

    #[test]
    fn openai_context_length_exceeded() {
        let body = r#"{
  "error": {
    "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9013 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
}"#;
        let e = classify_http(400, None, body, Some("OPENAI_API_KEY"));
        assert_eq!(figures(&e), (Some(9013), Some(8192)));
        assert_eq!(parse_overflow_limit(&e), Some(8192));
        assert!(!e.is_retryable());
    }

    #[test]
    fn vllm_and_openrouter_overflow_wordings() {
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2300 tokens (2044 in the messages, 256 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            figures(&classify_http(400, None, vllm, None)),
            (Some(2044), Some(2048))
        );
        let vllm_new = r#"{"object":"error","message":"'max_tokens' or 'max_completion_tokens' is too large: 256. This model's maximum context length is 2048 tokens and your request has 1900 input tokens (256 > 2048 - 1900).","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            figures(&classify_http(400, None, vllm_new, None)),
            (Some(1900), Some(2048))
        );
        let openrouter = r#"{"error":{"message":"This endpoint's maximum context length is 131,072 tokens. However, you requested about 140,213 tokens (139,213 of text input, 1,000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}"#;
        assert_eq!(
            figures(&classify_http(400, None, openrouter, None)),
            (Some(140_213), Some(131_072))
        );
    }

    #[test]
    fn llama_server_without_mmproj_refuses_images_with_a_500_that_is_not_retried() {
        let body = r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#;
        let e = classify_http(500, None, body, None);
        assert!(!e.is_retryable(), "{e:?}");
        assert!(crate::refusal::refuses_images(&e), "{e:?}");
        // Any other 500 is still transient.
        let other = classify_http(500, None, r#"{"error":{"message":"boom"}}"#, None);
        assert!(other.is_retryable());
    }

    #[test]
    fn llama_cpp_exceed_context_size_error() {
        let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":2510,"n_ctx":2048}}"#;
        let e = classify_http(400, None, body, None);
        assert_eq!(figures(&e), (Some(2510), Some(2048)));
        assert!(
            e.to_string()
                .contains("2510 tokens requested, 2048 allowed")
        );
        // Older llama-server builds: wording only, and HTTP 500.
        let old = r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"server_error"}}"#;
        assert_eq!(figures(&classify_http(500, None, old, None)), (None, None));
    }

    #[test]
    fn anthropic_prompt_too_long() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        assert_eq!(
            figures(&classify_http(400, None, body, None)),
            (Some(208_310), Some(200_000))
        );
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}"#;
        assert_eq!(
            figures(&classify_http(400, None, body, None)),
            (Some(188_240), Some(200_000))
        );
        let body = r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#;
        assert_eq!(figures(&classify_http(413, None, body, None)), (None, None));
    }

    #[test]
    fn other_servers_overflow_wordings() {
        let lmstudio = r#"{"error":"Trying to keep the first 5012 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#;
        assert_eq!(
            figures(&classify_http(400, None, lmstudio, None)),
            (None, Some(4096))
        );
        let gemini = r#"[{"error":{"code":400,"message":"The input token count (1048580) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#;
        // A JSON array is not an error object: the raw text is still read.
        assert_eq!(
            figures(&classify_http(400, None, gemini, None)),
            (Some(1_048_580), Some(1_048_576))
        );
        // Plain 413 from a proxy.
        let e = classify_http(413, None, "<html>Request Entity Too Large</html>", None);
        assert_eq!(e.class().name(), "context_overflow");
    }

    #[test]
    fn auth_errors_name_the_env_var_and_are_not_retried() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let e = classify_http(401, None, body, Some("OPENAI_API_KEY"));
        assert_eq!(e.class().name(), "auth");
        assert!(e.to_string().contains("$OPENAI_API_KEY"), "{e}");
        assert!(!e.is_retryable());
        let body = r#"{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}"#;
        assert_eq!(
            classify_http(403, None, body, Some("ANTHROPIC_API_KEY"))
                .class()
                .name(),
            "auth"
        );
    }

    #[test]
    fn rate_limits_and_server_errors() {
        let body = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        let e = classify_http(429, Some(Duration::from_secs(2)), body, None);
        assert!(matches!(
            e,
            ProviderError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(2)
        ));
        assert!(e.is_retryable());
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(
            classify_http(429, None, quota, None).class().name(),
            "rejected"
        );
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let e = classify_http(529, None, overloaded, None);
        assert_eq!(e.class().name(), "transient");
        assert!(e.to_string().contains("Overloaded"));
        assert_eq!(
            classify_http(502, None, "<html>Bad Gateway</html>", None)
                .class()
                .name(),
            "transient"
        );
        let e = classify_http(
            404,
            None,
            r#"{"error":{"message":"The model `gpt-9` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
            None,
        );
        assert_eq!(e.class().name(), "rejected");
        assert!(e.to_string().contains("gpt-9"));
        assert!(
            classify_http(500, None, "", None)
                .to_string()
                .contains("empty body")
        );
    }

    #[test]
    fn stream_errors() {
        let v: Value = serde_json::from_str(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap();
        assert_eq!(classify_stream_error(&v).class().name(), "transient");
        let v: Value = serde_json::from_str(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300 tokens > 200 maximum"}}"#,
        )
        .unwrap();
        assert_eq!(parse_overflow_limit(&classify_stream_error(&v)), Some(200));
        let v: Value = serde_json::from_str(
            r#"{"error":{"message":"Internal server error","type":"server_error","code":null}}"#,
        )
        .unwrap();
        assert_eq!(classify_stream_error(&v).class().name(), "transient");
    }

    #[test]
    fn retry_after_seconds_and_http_dates() {
        let now: jiff::Timestamp = "2015-10-21T07:27:00Z".parse().unwrap();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:20:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }
}
