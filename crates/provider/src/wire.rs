//! Typed wire formats: how the servers' JSON is read.
//!
//! Each protocol's shapes are `#[derive(Deserialize)]` types next to its
//! client (`openai/wire.rs`, `anthropic/wire.rs`, `limits/wire.rs`); the
//! error bodies every server sends are here ([`ErrorBody`]).
//!
//! Servers differ (OpenAI, llama.cpp, Ollama, vLLM, LM Studio, proxies), so
//! the types are read *leniently*, with the helpers below:
//! - unknown fields are ignored, unknown event or block types read as an
//!   `Unknown`/`Other` variant;
//! - a field that is missing, `null` or of another JSON type than expected
//!   reads as absent (`None`), never as an error;
//! - a body or element that is not a JSON object reads as an empty one.
//!
//! The JSON text itself is parsed into a [`Value`] first, so a malformed
//! event or body fails exactly where and how it always did; turning a
//! [`Value`] into a wire type never fails.
//!
//! Invariant: decoding a wire type from a JSON value never fails: what the
//! type does not know is ignored, what has the wrong type reads as absent.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, IgnoredAny};
use serde_json::{Map, Value};

/// Decode `v` into `T`; a value that is not an object (or does not fit,
/// which the lenient fields make impossible) reads as `T::default()`.
pub(crate) fn decode<T: DeserializeOwned + Default>(v: &Value) -> T {
    if v.is_object() {
        T::deserialize(v).unwrap_or_default()
    } else {
        T::default()
    }
}

/// Decode an internally tagged enum (`"type": "..."`). A `type` that is
/// missing or not a string reads as `tag` when given (Anthropic names the
/// event in the SSE `event:` line too), else as `T::default()`, the
/// enum's catch-all variant.
///
/// Checked here, not by serde: serde would read a numeric `type` as a
/// variant index.
pub(crate) fn decode_tagged<T: DeserializeOwned + Default>(v: &Value, tag: Option<&str>) -> T {
    let typed = v
        .as_object()
        .and_then(|m| m.get("type"))
        .is_some_and(Value::is_string);
    if typed {
        return decode(v);
    }
    let Some(tag) = tag else {
        return T::default();
    };
    let mut m = v.as_object().cloned().unwrap_or_default();
    m.insert("type".to_owned(), Value::String(tag.to_owned()));
    decode(&Value::Object(m))
}

/// `deserialize_with` for a field read leniently: the wrong JSON type (or
/// `null`) reads as `None`. An array never fills a struct by position.
pub(crate) fn opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    if v.is_array() {
        return Ok(None);
    }
    Ok(T::deserialize(v).ok())
}

/// `deserialize_with` for a field whose *presence* matters: `Some(None)`
/// when present with the wrong type (or `null`), `None` when absent (with
/// `#[serde(default)]`).
pub(crate) fn present_opt<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    opt(d).map(Some)
}

/// `deserialize_with` for a field that only has to be there, whatever its
/// value (`true` when present, with `#[serde(default)]`).
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// `deserialize_with` for an array of objects: `None` when not an array;
/// an element that is not an object reads as `T::default()`.
pub(crate) fn list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => Some(
            items
                .into_iter()
                .map(|v| match v {
                    Value::Object(_) => T::deserialize(v).unwrap_or_default(),
                    _ => T::default(),
                })
                .collect(),
        ),
        _ => None,
    })
}

/// `deserialize_with` for a nested internally tagged enum (see
/// [`decode_tagged`]); absent, or without a string `type`, it reads as the
/// catch-all variant.
pub(crate) fn tagged<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Value::deserialize(d).map(|v| decode_tagged(&v, None))
}

/// `deserialize_with` for a JSON object kept as it is (tool arguments,
/// Ollama's per-architecture `model_info`): anything else reads as `None`.
pub(crate) fn object<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(m) => Some(m),
        _ => None,
    })
}

/// Tool-call arguments as servers send them: a JSON string (the standard),
/// or an object (a few OpenAI-compatible servers).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum Arguments {
    /// `"{\"path\":\"src\"}"`.
    Text(String),
    /// `{"path": "src"}`.
    Object(Map<String, Value>),
}

impl Arguments {
    /// The arguments as JSON text (an object written out).
    pub(crate) fn text(&self) -> String {
        match self {
            Arguments::Text(s) => s.clone(),
            Arguments::Object(m) => Value::Object(m.clone()).to_string(),
        }
    }
}

/// An error `code`: a string (`"context_length_exceeded"`), a number
/// (HTTP status, as llama.cpp and vLLM send it) or anything else.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum Code {
    Text(String),
    Number(u64),
    Other(Value),
}

impl Code {
    /// The code as text (a number or other JSON as it was written).
    pub(crate) fn text(&self) -> String {
        match self {
            Code::Text(s) => s.clone(),
            Code::Number(n) => n.to_string(),
            Code::Other(v) => v.to_string(),
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Code::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The code as an HTTP status, when it is one.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Code::Number(n) => u16::try_from(*n).ok(),
            _ => None,
        }
    }
}

/// `deserialize_with` for [`Code`]: present with any value, `null` too.
fn code<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Code>, D::Error> {
    Code::deserialize(d).map(Some)
}

/// The fields an error object carries, at the top level (vLLM's
/// `{"object":"error",…}`) or under `error` (OpenAI, Anthropic,
/// llama.cpp).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorFields {
    /// `Some(None)`: present but not a string.
    #[serde(default, deserialize_with = "present_opt")]
    pub message: Option<Option<String>>,
    #[serde(rename = "type", default, deserialize_with = "opt")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "code")]
    pub code: Option<Code>,
    /// llama.cpp's `exceed_context_size_error` figures.
    #[serde(default, deserialize_with = "opt")]
    pub n_prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub n_ctx: Option<u64>,
}

/// The `error` member of a body.
#[derive(Debug)]
pub(crate) enum ErrorMember {
    /// `"error": "text"` (LM Studio, some proxies).
    Text(String),
    /// Anything else; `raw` is shown when it has no `message`.
    Other { fields: ErrorFields, raw: Value },
}

#[derive(Debug, Default, Deserialize)]
struct ErrorOuter {
    #[serde(default, deserialize_with = "opt_value")]
    error: Option<Value>,
    #[serde(default, deserialize_with = "opt")]
    detail: Option<String>,
}

/// `deserialize_with` for a member kept raw, `null` too.
fn opt_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// An error body in any of the shapes servers send: OpenAI's
/// `{"error":{…}}`, Anthropic's `{"type":"error","error":{…}}`, vLLM's
/// `{"object":"error","message":…}`, `{"error":"text"}`, FastAPI's
/// `{"detail":…}`.
#[derive(Debug, Default)]
pub(crate) struct ErrorBody {
    /// The `error` member, when present (whatever its value).
    pub error: Option<ErrorMember>,
    /// The top-level fields (vLLM).
    pub top: ErrorFields,
    /// FastAPI's `detail`, when it is a string.
    pub detail: Option<String>,
}

impl ErrorBody {
    pub(crate) fn read(v: &Value) -> Self {
        let outer: ErrorOuter = decode(v);
        let error = outer.error.map(|raw| match raw {
            Value::String(s) => ErrorMember::Text(s),
            raw => ErrorMember::Other {
                fields: decode(&raw),
                raw,
            },
        });
        Self {
            error,
            top: decode(v),
            detail: outer.detail,
        }
    }

    /// The fields that say what went wrong: those under `error` when it is
    /// present (none for `"error": "text"`), else the top-level ones.
    pub(crate) fn fields(&self) -> Option<&ErrorFields> {
        match &self.error {
            None => Some(&self.top),
            Some(ErrorMember::Other { fields, .. }) => Some(fields),
            Some(ErrorMember::Text(_)) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Inner {
        #[serde(default, deserialize_with = "opt")]
        n: Option<u64>,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Sample {
        #[serde(default, deserialize_with = "opt")]
        text: Option<String>,
        #[serde(default, deserialize_with = "opt")]
        inner: Option<Inner>,
        #[serde(default, deserialize_with = "list")]
        items: Option<Vec<Inner>>,
        #[serde(default, deserialize_with = "present")]
        flag: bool,
    }

    #[test]
    fn wrong_types_read_as_absent_and_unknown_fields_are_ignored() {
        let s: Sample = decode(&json!({
            "text": 5, "inner": [7], "items": [{"n": 1}, 3, {"n": "x"}],
            "flag": null, "extra": {"deep": true}
        }));
        assert_eq!(
            s,
            Sample {
                text: None,
                inner: None,
                items: Some(vec![
                    Inner { n: Some(1) },
                    Inner::default(),
                    Inner::default()
                ]),
                flag: true,
            }
        );
        // Not an object at all: empty, never positional.
        assert_eq!(decode::<Sample>(&json!(["a", {"n": 1}])), Sample::default());
        assert_eq!(decode::<Sample>(&json!("text")), Sample::default());
        // Floats and negatives are not counts.
        let i: Inner = decode(&json!({"n": 3.0}));
        assert_eq!(i.n, None);
        let i: Inner = decode(&json!({"n": -1}));
        assert_eq!(i.n, None);
    }

    #[test]
    fn error_bodies_of_every_shape() {
        let b = ErrorBody::read(&json!({"error": "plain"}));
        assert!(matches!(b.error, Some(ErrorMember::Text(ref s)) if s == "plain"));
        assert!(b.fields().is_none());
        let b = ErrorBody::read(&json!({"error": {"code": 400, "type": "t", "n_ctx": 2048}}));
        let f = b.fields().unwrap();
        assert_eq!(f.code.as_ref().and_then(Code::status), Some(400));
        assert_eq!(
            (f.kind.as_deref(), f.n_ctx, f.message.as_ref()),
            (Some("t"), Some(2048), None)
        );
        let b = ErrorBody::read(&json!({"object": "error", "message": 5, "code": null}));
        let f = b.fields().unwrap();
        assert_eq!(f.message, Some(None));
        assert_eq!(f.code.as_ref().map(Code::text).as_deref(), Some("null"));
    }
}
