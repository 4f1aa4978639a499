//! The real APIs' refusals of a tool loop that drops the model's
//! reasoning (see [`super::FakeServer::require_reasoning_back`]), with
//! their error texts.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::recorded::RecordedRequest;
use crate::wire::{encrypted_of, signature_of};

fn invalid(message: String) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})
}

fn anthropic_invalid(message: String) -> Value {
    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
}

/// The 400 body when `record` does not send reasoning back as its API
/// requires; `issued` is the reasoning of every call made with some.
pub(super) fn refusal(issued: &HashMap<String, String>, record: &RecordedRequest) -> Option<Value> {
    if record.is_responses() {
        responses(issued, &record.input())
    } else if record.is_anthropic() {
        anthropic(issued, &record.body)
    } else {
        chat(issued, &record.messages())
    }
}

/// OpenAI: each `function_call` of a reasoning step needs its `reasoning`
/// item (unaltered) before it, after the previous input or output item.
fn responses(issued: &HashMap<String, String>, input: &[Value]) -> Option<Value> {
    let valid: Vec<String> = issued.values().map(|t| encrypted_of(t)).collect();
    let mut since_input: Vec<&Value> = Vec::new();
    for item in input {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "reasoning" => {
                let has_content = item.get("content").is_some_and(Value::is_array);
                let enc = item.get("encrypted_content").and_then(Value::as_str);
                match enc {
                    Some(e) if !valid.iter().any(|v| v == e) => {
                        return Some(invalid(
                            "The encrypted content for item rs_fake could not be verified.".into(),
                        ));
                    }
                    // llama-server: reads the text from `content[0].text`.
                    None if !has_content => {
                        return Some(invalid("item['content'] is not an array".into()));
                    }
                    _ => {}
                }
                since_input.push(item);
            }
            "function_call" => {
                let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                if let Some(text) = issued.get(call_id) {
                    let enc = encrypted_of(text);
                    let found = since_input.iter().any(|r| {
                        r.get("encrypted_content").and_then(Value::as_str) == Some(enc.as_str())
                            || r.pointer("/content/0/text").and_then(Value::as_str)
                                == Some(text.as_str())
                    });
                    if !found {
                        return Some(invalid(format!(
                            "Item 'fc_{call_id}' of type 'function_call' was provided without its required 'reasoning' item: 'rs_fake'."
                        )));
                    }
                }
            }
            "message" if item.get("role").and_then(Value::as_str) == Some("assistant") => {}
            _ => since_input.clear(),
        }
    }
    None
}

/// Anthropic: no `temperature` but 1 with thinking on; an assistant
/// message with a `tool_use` of a thinking step starts with that
/// step's `thinking` block, signature unchanged.
fn anthropic(issued: &HashMap<String, String>, body: &Value) -> Option<Value> {
    let thinking = body.pointer("/thinking/type").and_then(Value::as_str) == Some("enabled");
    if thinking
        && let Some(t) = body.get("temperature").and_then(Value::as_f64)
        && (t - 1.0).abs() > f64::EPSILON
    {
        return Some(anthropic_invalid(
            "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking".into(),
        ));
    }
    if thinking
        && let (Some(max), Some(budget)) = (
            body.get("max_tokens").and_then(Value::as_u64),
            body.pointer("/thinking/budget_tokens")
                .and_then(Value::as_u64),
        )
        && max <= budget
    {
        return Some(anthropic_invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`".into(),
        ));
    }
    let messages = body.get("messages").and_then(Value::as_array)?;
    for (i, m) in messages.iter().enumerate() {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        let Some(text) = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .find_map(|b| {
                b.get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| issued.get(id))
            })
        else {
            continue;
        };
        let first = blocks.first();
        let signed = first.is_some_and(|b| {
            b["type"] == "thinking"
                && b["thinking"].as_str() == Some(text.as_str())
                && b["signature"].as_str() == Some(signature_of(text).as_str())
        });
        if !signed {
            let found = first
                .and_then(|b| b.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("nothing");
            return Some(anthropic_invalid(format!(
                "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). To avoid this requirement, disable `thinking`."
            )));
        }
    }
    None
}

/// DeepSeek: an assistant tool call of a reasoning step carries the step's
/// `reasoning_content`.
fn chat(issued: &HashMap<String, String>, messages: &[Value]) -> Option<Value> {
    for (i, m) in messages.iter().enumerate() {
        let Some(text) = m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|c| {
                c.get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| issued.get(id))
            })
        else {
            continue;
        };
        if m.get("reasoning_content").and_then(Value::as_str) != Some(text.as_str()) {
            return Some(invalid(format!(
                "Missing `reasoning_content` field in the assistant message at message index {i}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
            )));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            headers: Default::default(),
            raw_body: body.to_string(),
            body,
            prompt_tokens: 0,
        }
    }

    fn issued() -> HashMap<String, String> {
        [("call_1".to_owned(), "think".to_owned())].into()
    }

    #[test]
    fn each_wire_refuses_a_tool_loop_without_its_reasoning() {
        let call =
            json!({"type": "function_call", "call_id": "call_1", "name": "x", "arguments": "{}"});
        let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]});
        let with =
            |enc: &str| json!({"type": "reasoning", "summary": [], "encrypted_content": enc});
        let r = |input: Vec<Value>| {
            refusal(
                &issued(),
                &request("/v1/responses", json!({"input": input})),
            )
        };
        assert!(r(vec![user.clone(), call.clone()]).is_some());
        assert!(
            r(vec![
                user.clone(),
                with(&encrypted_of("think")),
                call.clone()
            ])
            .is_none()
        );
        assert!(r(vec![user.clone(), with("altered"), call.clone()]).is_some());
        // llama-server: a reasoning item needs `content`.
        let bare = json!({"type": "reasoning", "summary": []});
        assert!(r(vec![user, bare, call]).is_some());

        let tool_use = json!({"type": "tool_use", "id": "call_1", "name": "x", "input": {}});
        let thinking =
            json!({"type": "thinking", "thinking": "think", "signature": signature_of("think")});
        let a = |content: Vec<Value>, extra: Value| {
            let mut body = json!({"messages": [{"role": "user", "content": "q"},
                {"role": "assistant", "content": content}]});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            refusal(&issued(), &request("/v1/messages", body))
        };
        assert!(a(vec![tool_use.clone()], json!({})).is_some());
        assert!(a(vec![thinking.clone(), tool_use.clone()], json!({})).is_none());
        let on =
            json!({"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048});
        assert!(a(vec![thinking.clone(), tool_use.clone()], on.clone()).is_none());
        let mut hot = on;
        hot["temperature"] = json!(0.2);
        assert!(a(vec![thinking, tool_use], hot).is_some());

        let c = |m: Value| {
            refusal(
                &issued(),
                &request("/v1/chat/completions", json!({"messages": [m]})),
            )
        };
        let calls = json!([{"id": "call_1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]);
        assert!(c(json!({"role": "assistant", "tool_calls": calls})).is_some());
        assert!(
            c(json!({"role": "assistant", "tool_calls": calls, "reasoning_content": "think"}))
                .is_none()
        );
    }
}
