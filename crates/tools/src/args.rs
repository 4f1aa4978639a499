//! Parsing a call's arguments: errors that name the tool and say what was
//! expected, and counts models send as numbers or strings.

use eonyx_core::ToolName;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ToolError;

/// Parses a call's arguments into `T`, with errors that name the tool and
/// say what was expected.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: ToolName,
    args: &Value,
) -> Result<T, ToolError> {
    let value = match args {
        Value::Null => Value::Object(Default::default()),
        Value::String(s) => {
            return Err(ToolError::BadArguments {
                tool,
                message: format!(
                    "the arguments are not a JSON object ({}); send them as a JSON object",
                    eonyx_core::text::ellipsize(s, 200)
                ),
            });
        }
        v => v.clone(),
    };
    serde_json::from_value(value).map_err(|e| ToolError::BadArguments {
        tool,
        message: e.to_string(),
    })
}

/// A non-negative integer that models may also send as a string (`"10"`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub(crate) enum Count {
    Number(u64),
    Text(#[serde(deserialize_with = "count_from_str")] u64),
}

impl Count {
    pub(crate) fn get(self) -> u64 {
        match self {
            Count::Number(n) | Count::Text(n) => n,
        }
    }
}

fn count_from_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let s = String::deserialize(d)?;
    s.trim().parse().map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn arguments_that_are_not_json_are_reported() {
        let f = Fixture::new();
        let out = f.run("read_file", json!("{path: oops")).await;
        assert!(out.is_error);
        assert!(
            out.text.starts_with(
                "invalid arguments for read_file: the arguments are not a JSON object"
            ),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn missing_and_unknown_fields_are_named() {
        let f = Fixture::new();
        let out = f.run("read_file", json!({})).await;
        assert!(out.is_error);
        assert!(out.text.contains("missing field `path`"), "{}", out.text);
        let out = f.run("read_file", json!({"path": "a", "lines": 3})).await;
        assert!(out.is_error);
        assert!(out.text.contains("unknown field `lines`"), "{}", out.text);
    }

    #[test]
    fn counts_accept_numbers_and_numeric_strings() {
        #[derive(Deserialize)]
        struct A {
            n: Count,
        }
        let a: A = serde_json::from_value(json!({"n": 7})).unwrap();
        assert_eq!(a.n.get(), 7);
        let a: A = serde_json::from_value(json!({"n": " 12 "})).unwrap();
        assert_eq!(a.n.get(), 12);
        assert!(serde_json::from_value::<A>(json!({"n": "many"})).is_err());
        assert!(serde_json::from_value::<A>(json!({"n": -1})).is_err());
    }
}
