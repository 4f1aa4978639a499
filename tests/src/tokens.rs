//! The fake's own tokenizer, deliberately unlike eonyx's 4 chars/token
//! estimate, and its simulated prompt cache.

use serde_json::Value;

use crate::recorded::collect_strings;

/// Characters per token of the fake tokenizer.
pub const FAKE_CHARS_PER_TOKEN: u64 = 3;
/// Tokens added per message (and per Anthropic `system`).
pub const FAKE_TOKENS_PER_MESSAGE: u64 = 4;

/// Prompt tokens of a chat request body: one token per 3 characters
/// (rounded up) of every JSON string in `system`, `messages` and `tools`,
/// plus 4 per message (and 4 for a non-empty Anthropic `system`).
pub fn count_prompt_tokens(body: &Value) -> u64 {
    let mut strings = Vec::new();
    for key in ["system", "instructions", "messages", "input", "tools"] {
        if let Some(v) = body.get(key) {
            collect_strings(v, &mut strings);
        }
    }
    let chars: usize = strings.iter().map(|s| s.chars().count()).sum();
    let messages = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len) as u64;
    let system = match body.get("system").or_else(|| body.get("instructions")) {
        Some(Value::String(s)) if !s.is_empty() => 1,
        Some(Value::Array(a)) if !a.is_empty() => 1,
        _ => 0,
    };
    count_text_chars(chars) + FAKE_TOKENS_PER_MESSAGE * (messages + system)
}

/// Tokens of generated text (1 per 3 chars, rounded up).
pub fn count_text_tokens(text: &str) -> u64 {
    count_text_chars(text.chars().count())
}

fn count_text_chars(chars: usize) -> u64 {
    (chars as u64).div_ceil(FAKE_CHARS_PER_TOKEN)
}

/// The canonical serialization compared between consecutive requests:
/// system, tools, then each message, in the order a server would see them
/// (keys of each object sorted).
pub(crate) fn canonical_prompt(body: &Value) -> String {
    let mut out = String::new();
    // Sorted here, not by `Value`: serde_json's `preserve_order` (which
    // the ACP crate turns on for the workspace) keeps insertion order.
    let sorted = |v: &Value| {
        let mut v = v.clone();
        v.sort_all_objects();
        v.to_string()
    };
    for key in ["system", "instructions", "tools"] {
        if let Some(v) = body.get(key) {
            out.push_str(&sorted(v));
        }
    }
    let items = body.get("messages").or_else(|| body.get("input"));
    if let Some(messages) = items.and_then(Value::as_array) {
        for m in messages {
            out.push_str(&sorted(m));
        }
    }
    out
}

/// Cached tokens: the common prefix (in characters) of this request's
/// canonical prompt and the previous one's, divided by 3 (rounded down),
/// never more than `prompt_tokens`.
pub(crate) fn cached_tokens(previous: Option<&str>, current: &str, prompt_tokens: u64) -> u64 {
    let Some(previous) = previous else {
        return 0;
    };
    let common = previous
        .chars()
        .zip(current.chars())
        .take_while(|(a, b)| a == b)
        .count() as u64;
    (common / FAKE_CHARS_PER_TOKEN).min(prompt_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_strings_at_three_chars_plus_four_per_message() {
        // "system" 6 + "be brief" 8 + "user" 4 + "hello" 5 = 23 chars -> 8, 2 messages -> 8.
        let body = json!({"model": "ignored-model-name", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
        ]});
        assert_eq!(count_prompt_tokens(&body), 16);
        // Anthropic: system counts as a message; "abc" + "user" + "abc" = 10 chars -> 4.
        let body = json!({"system": "abc", "messages": [{"role": "user", "content": "abc"}]});
        assert_eq!(count_prompt_tokens(&body), 4 + 8);
    }

    #[test]
    fn cache_counts_common_prefix_only() {
        let a = json!({"messages": [{"role": "user", "content": "hello there"}]});
        let mut b = a.clone();
        if let Some(m) = b["messages"].as_array_mut() {
            m.push(json!({"role": "assistant", "content": "hi"}));
        }
        let ca = canonical_prompt(&a);
        let cb = canonical_prompt(&b);
        assert_eq!(cached_tokens(None, &ca, 100), 0);
        assert_eq!(cached_tokens(Some(&ca), &cb, 100), ca.len() as u64 / 3);
        let c = json!({"messages": [{"role": "user", "content": "different"}]});
        assert!(cached_tokens(Some(&ca), &canonical_prompt(&c), 100) < 10);
    }
}
