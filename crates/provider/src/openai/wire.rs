//! Chat Completions replies as typed values: the streamed chunks and the
//! non-streamed completion (one shape: a chunk's choices carry a `delta`,
//! a completion's a `message`), with the usage variants servers send.
//! Read leniently (see `crate::wire`).

use eonyx_core::message::Usage as CoreUsage;
use serde::Deserialize;

use crate::wire::{Arguments, list, opt, present};

/// One `chat.completion.chunk` event, or a whole `chat.completion` body.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk {
    /// An `error` member, whatever its value (OpenAI, llama.cpp, proxies).
    #[serde(default, deserialize_with = "present")]
    pub error: bool,
    /// `"error"` for vLLM's error objects.
    #[serde(default, deserialize_with = "opt")]
    pub object: Option<String>,
    #[serde(default, deserialize_with = "list")]
    pub choices: Option<Vec<Choice>>,
    #[serde(default, deserialize_with = "opt")]
    pub usage: Option<Usage>,
    /// llama.cpp's timings (`cache_n`: prompt tokens served from its cache).
    #[serde(default, deserialize_with = "opt")]
    pub timings: Option<Timings>,
}

impl Chunk {
    /// Whether the chunk is an error object rather than an answer.
    pub(crate) fn is_error(&self) -> bool {
        self.error || self.object.as_deref() == Some("error")
    }

    /// The usage, with llama.cpp's `timings.cache_n` as a fallback for
    /// cached tokens; `None` without a `usage` object.
    pub(crate) fn usage(&self) -> Option<CoreUsage> {
        let u = self.usage.as_ref()?;
        let cached = u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or_else(|| self.timings.as_ref().and_then(|t| t.cache_n))
            .unwrap_or(0);
        Some(CoreUsage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
            cached_tokens: cached,
            reasoning_tokens: u
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            ..CoreUsage::default()
        })
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    /// Streamed: what this chunk adds.
    #[serde(default, deserialize_with = "opt")]
    pub delta: Option<Message>,
    /// Not streamed: the whole answer.
    #[serde(default, deserialize_with = "opt")]
    pub message: Option<Message>,
    #[serde(default, deserialize_with = "opt")]
    pub finish_reason: Option<String>,
}

/// A delta or a whole assistant message.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Message {
    #[serde(default, deserialize_with = "opt")]
    pub content: Option<String>,
    /// DeepSeek, Kimi, vLLM and llama-server reasoning parsers.
    #[serde(default, deserialize_with = "opt")]
    pub reasoning_content: Option<String>,
    /// OpenRouter, Ollama and newer vLLM name it `reasoning`.
    #[serde(default, deserialize_with = "opt")]
    pub reasoning: Option<String>,
    #[serde(default, deserialize_with = "list")]
    pub tool_calls: Option<Vec<ToolCall>>,
}

/// A tool call, or (streamed) a piece of one.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCall {
    /// Which call a streamed piece belongs to (some servers omit it).
    #[serde(default, deserialize_with = "opt")]
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "opt")]
    pub function: Option<Function>,
}

impl ToolCall {
    pub(crate) fn name(&self) -> Option<&str> {
        self.function.as_ref()?.name.as_deref()
    }

    pub(crate) fn arguments(&self) -> Option<&Arguments> {
        self.function.as_ref()?.arguments.as_ref()
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Function {
    #[serde(default, deserialize_with = "opt")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "opt")]
    pub arguments: Option<Arguments>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default, deserialize_with = "opt")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub completion_tokens: Option<u64>,
    /// OpenAI, vLLM: `cached_tokens`.
    #[serde(default, deserialize_with = "opt")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// OpenAI: `reasoning_tokens`.
    #[serde(default, deserialize_with = "opt")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CompletionTokensDetails {
    #[serde(default, deserialize_with = "opt")]
    pub reasoning_tokens: Option<u64>,
}

impl Message {
    /// The reasoning piece this delta (or message) carries, under either name.
    pub(crate) fn reasoning_text(&self) -> Option<&str> {
        self.reasoning_content
            .as_deref()
            .or(self.reasoning.as_deref())
            .filter(|s| !s.is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptTokensDetails {
    #[serde(default, deserialize_with = "opt")]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Timings {
    #[serde(default, deserialize_with = "opt")]
    pub cache_n: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode;
    use serde_json::json;

    #[test]
    fn llama_cpp_final_chunk_with_timings() {
        // As llama-server b5000+ sends it with `stream_options.include_usage`.
        let v = json!({
            "choices": [{"finish_reason": "stop", "index": 0, "delta": {}}],
            "created": 1_760_000_000, "id": "chatcmpl-x", "model": "gemma-3-270m",
            "system_fingerprint": "b5000", "object": "chat.completion.chunk",
            "usage": {"completion_tokens": 12, "prompt_tokens": 1500, "total_tokens": 1512},
            "timings": {"cache_n": 1408, "prompt_n": 92, "prompt_ms": 40.5,
                        "predicted_n": 12, "predicted_ms": 80.1}
        });
        let c: Chunk = decode(&v);
        assert!(!c.is_error());
        let choices = c.choices.as_deref().unwrap();
        assert_eq!(choices[0].finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            c.usage(),
            Some(CoreUsage {
                prompt_tokens: 1500,
                completion_tokens: 12,
                cached_tokens: 1408,
                ..CoreUsage::default()
            })
        );
        // `prompt_tokens_details` wins over the timings when both are there.
        let mut v = v;
        v["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 1024});
        assert_eq!(decode::<Chunk>(&v).usage().unwrap().cached_tokens, 1024);
        // Timings without a usage object are no usage.
        v["usage"] = json!(null);
        assert_eq!(decode::<Chunk>(&v).usage(), None);
    }

    #[test]
    fn tool_call_pieces_and_odd_servers() {
        let c: Chunk = decode(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 1, "id": "call_b", "type": "function",
             "function": {"name": "grep", "arguments": "{\"pattern\":"}},
            {"function": {"arguments": {"path": "src"}}},
            {"function": {"arguments": 7}}
        ]}, "finish_reason": null}]}));
        let delta = c.choices.unwrap().remove(0).delta.unwrap();
        let calls = delta.tool_calls.unwrap();
        assert_eq!(
            (calls[0].index, calls[0].id.as_deref()),
            (Some(1), Some("call_b"))
        );
        assert_eq!(calls[0].name(), Some("grep"));
        assert_eq!(
            calls[0].arguments(),
            Some(&Arguments::Text("{\"pattern\":".into()))
        );
        assert!(
            matches!(calls[1].arguments(), Some(Arguments::Object(m)) if m.contains_key("path"))
        );
        assert_eq!((calls[1].index, calls[2].arguments()), (None, None));
        // vLLM's mid-stream error object, and an `error` member of any value.
        assert!(decode::<Chunk>(&json!({"object": "error", "message": "x"})).is_error());
        assert!(decode::<Chunk>(&json!({"error": null})).is_error());
    }
}
