//! Provider-native compaction's vocabulary (docs/compaction.md#native-compaction):
//! what a provider returned when it compacted a conversation itself, kept in
//! the compaction record so a resumed session sends the same bytes, and
//! carried on every later request of the model that made it.
//!
//! Invariant: the items are stored exactly as the server returned them
//! (one JSON value each) and sent back unchanged; only the provider crate
//! reads their wire shape, everything above it treats them as opaque
//! except for [`NativeCompaction::display`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which wire wrote a native compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NativeProvider {
    /// OpenAI Responses `POST /responses/compact`: output items (a
    /// `compaction` item with `encrypted_content`, retained messages).
    Responses,
    /// Anthropic Messages on-demand compaction: one signed `compaction`
    /// block.
    Anthropic,
}

impl NativeProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            NativeProvider::Responses => "responses",
            NativeProvider::Anthropic => "anthropic",
        }
    }
}

/// The `native` field of a compaction record: `{provider, model,
/// base_url, items}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativeCompaction {
    pub provider: NativeProvider,
    /// The model id the items were made by (`ModelConfig::name`); only
    /// that model, on that wire, is sent them.
    pub model: String,
    /// The server that made them (`ModelConfig::base_url`); only it is
    /// sent them. `None` in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The items (Responses) or the block (Anthropic), as returned.
    pub items: Vec<Value>,
}

/// The beta header value Anthropic's on-demand compaction needs, on the
/// compaction request and on every later request carrying the block.
pub const ANTHROPIC_COMPACTION_BETA: &str = "compact-2026-09-04";

impl NativeCompaction {
    /// Whether these items may be sent to `provider` / `model` at
    /// `base_url` (SPEC 31, settled: only to the server that made them). A
    /// record without `base_url` counts as another server's once the model
    /// was changed (`model_unchanged` false: `/model`, `--model`).
    pub fn is_for(
        &self,
        provider: NativeProvider,
        model: &str,
        base_url: &str,
        model_unchanged: bool,
    ) -> bool {
        let server = match &self.base_url {
            Some(b) => b.trim_end_matches('/') == base_url.trim_end_matches('/'),
            None => model_unchanged,
        };
        self.provider == provider && self.model == model && server
    }

    /// Bytes of the opaque payloads (`encrypted_content`, signatures).
    pub fn opaque_bytes(&self) -> usize {
        self.items
            .iter()
            .map(|i| {
                ["encrypted_content", "signature"]
                    .iter()
                    .filter_map(|k| i.get(k).and_then(Value::as_str))
                    .map(str::len)
                    .sum::<usize>()
            })
            .sum()
    }

    /// The items' size as sent, in characters (the estimate counts an item
    /// by its bytes until the next usage report).
    pub fn chars(&self) -> usize {
        self.items.iter().map(|i| i.to_string().len()).sum()
    }

    /// What a reader is shown for the compacted part: Anthropic's summary
    /// text; for OpenAI's opaque item `[compacted by the provider: opaque,
    /// N bytes]`, followed by the text of retained messages.
    pub fn display(&self) -> String {
        match self.provider {
            NativeProvider::Anthropic => self
                .items
                .iter()
                .filter_map(|b| b.get("content").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n"),
            NativeProvider::Responses => {
                let mut out = Vec::new();
                for item in &self.items {
                    match item.get("type").and_then(Value::as_str) {
                        Some("compaction") => {
                            let n = item
                                .get("encrypted_content")
                                .and_then(Value::as_str)
                                .map_or(0, str::len);
                            out.push(opaque_line(n));
                        }
                        Some("message") => {
                            let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                            let text = message_text(item);
                            if !text.is_empty() {
                                out.push(format!("[{role}] {text}"));
                            }
                        }
                        _ => {}
                    }
                }
                out.join("\n\n")
            }
        }
    }
}

/// How an opaque compaction item of `n` bytes is shown.
pub fn opaque_line(n: usize) -> String {
    format!("[compacted by the provider: opaque, {n} bytes]")
}

fn message_text(item: &Value) -> String {
    match item.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_shows_anthropic_text_and_openai_as_opaque() {
        let a = NativeCompaction {
            provider: NativeProvider::Anthropic,
            model: "claude".into(),
            base_url: None,
            items: vec![
                json!({"type": "compaction", "content": "We fixed the parser.", "signature": "sig"}),
            ],
        };
        assert_eq!(a.display(), "We fixed the parser.");
        let o = NativeCompaction {
            provider: NativeProvider::Responses,
            model: "gpt".into(),
            base_url: Some("https://api.openai.com/v1".into()),
            items: vec![
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}),
                json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "abcdef"}),
            ],
        };
        assert_eq!(
            o.display(),
            "[user] fix it\n\n[compacted by the provider: opaque, 6 bytes]"
        );
        let openai = "https://api.openai.com/v1";
        assert!(o.is_for(NativeProvider::Responses, "gpt", openai, false));
        assert!(o.is_for(
            NativeProvider::Responses,
            "gpt",
            "https://api.openai.com/v1/",
            false
        ));
        assert!(!o.is_for(NativeProvider::Anthropic, "gpt", openai, true));
        assert!(!o.is_for(
            NativeProvider::Responses,
            "gpt",
            "http://127.0.0.1:1/v1",
            true
        ));
        // A record from before `base_url` was kept: only while the model
        // is unchanged.
        assert!(a.is_for(NativeProvider::Anthropic, "claude", "https://x", true));
        assert!(!a.is_for(NativeProvider::Anthropic, "claude", "https://x", false));
        assert_eq!(o.opaque_bytes(), 6);
    }
}
