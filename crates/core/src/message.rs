//! The conversation model: roles, content, parts, tool calls and usage.
//!
//! These types serialize exactly as the `message` line of a session file
//! (docs/session-format.md#message-records) minus the `type`, `seq` and `ts` envelope, which lives in
//! [`crate::record::MessageRecord`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One part of a multi-part message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Part {
    Text {
        text: String,
    },
    /// An image, either inline (`data`, base64) or by `url`.
    Image {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
}

impl Part {
    /// How an image is shown in transcripts and the REPL:
    /// `[image png 12 KB]` (subtype of the media type, decoded size), or
    /// `[image URL]`; `None` for a text part.
    pub fn image_label(&self) -> Option<String> {
        let Part::Image {
            media_type,
            data,
            url,
        } = self
        else {
            return None;
        };
        let kind = media_type
            .as_deref()
            .map(|m| m.strip_prefix("image/").unwrap_or(m))
            .unwrap_or("image");
        Some(match (data, url) {
            (Some(d), _) => format!("[image {kind} {}]", human_bytes(base64_decoded_len(d))),
            (None, Some(u)) => format!("[image {u}]"),
            (None, None) => format!("[image {kind}]"),
        })
    }
}

/// Bytes that `data` (standard base64, padded or not) decodes to.
pub fn base64_decoded_len(data: &str) -> u64 {
    let body = data.trim_end_matches('=');
    let n = body.bytes().filter(|b| !b.is_ascii_whitespace()).count() as u64;
    n * 3 / 4
}

/// `512 B`, `12 KB`, `5.2 MB` (1024-based, as file managers round).
pub fn human_bytes(n: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * 1024;
    if n < KB {
        format!("{n} B")
    } else if n < MB {
        format!("{} KB", (n + KB / 2) / KB)
    } else {
        format!("{:.1} MB", n as f64 / MB as f64)
    }
}

/// Message content: a plain string or an array of parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// Read as the JSON is, string or array (an untagged derive would buffer
/// every content into serde's generic content and copy it once more).
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> serde::de::Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of parts")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content::Text(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Content, E> {
                Ok(Content::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(p) = seq.next_element()? {
                    parts.push(p);
                }
                Ok(Content::Parts(parts))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl Content {
    /// All text of the content, parts joined with a newline; images omitted.
    pub fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => {
                let mut out = String::new();
                for p in parts {
                    if let Part::Text { text } = p {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(text);
                    }
                }
                out
            }
        }
    }

    /// Number of characters of text (not bytes), images excluded.
    pub fn text_chars(&self) -> usize {
        match self {
            Content::Text(t) => t.chars().count(),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => text.chars().count(),
                    Part::Image { .. } => 0,
                })
                .sum(),
        }
    }

    /// Every part as text, joined with a newline; an image is what `image`
    /// makes of its media type and URL (transcripts show them this way).
    pub fn text_with_images(&self, image: impl Fn(Option<&str>, Option<&str>) -> String) -> String {
        self.join_parts(|p| match p {
            Part::Text { text } => text.clone(),
            Part::Image {
                media_type, url, ..
            } => image(media_type.as_deref(), url.as_deref()),
        })
    }

    /// Every part as text, joined with a newline, each image shown by its
    /// [`Part::image_label`] (`sessions show`, the REPL's echo).
    pub fn transcript(&self) -> String {
        self.join_parts(|p| match p {
            Part::Text { text } => text.clone(),
            image => image.image_label().unwrap_or_default(),
        })
    }

    /// Each part as `show` renders it, joined with a newline.
    fn join_parts(&self, show: impl Fn(&Part) -> String) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => parts.iter().map(show).collect::<Vec<_>>().join("\n"),
        }
    }

    /// Number of image parts.
    pub fn image_count(&self) -> usize {
        match self {
            Content::Text(_) => 0,
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| matches!(p, Part::Image { .. }))
                .count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(t) => t.is_empty(),
            Content::Parts(p) => p.is_empty(),
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

/// A tool call requested by the assistant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed JSON arguments. When a model sends arguments that are not
    /// valid JSON, they are kept verbatim as a JSON string.
    #[serde(default)]
    pub arguments: Value,
}

impl ToolCall {
    /// The arguments as the JSON text a provider expects.
    pub fn arguments_json(&self) -> String {
        match &self.arguments {
            Value::String(s) if serde_json::from_str::<Value>(s).is_err() => s.clone(),
            Value::Null => "{}".to_owned(),
            v => v.to_string(),
        }
    }

    /// Parse raw argument text from a provider: JSON when it parses, the raw
    /// string otherwise (an empty string becomes `{}`).
    pub fn parse_arguments(raw: &str) -> Value {
        if raw.trim().is_empty() {
            return Value::Object(Default::default());
        }
        serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
    }
}

/// Token usage reported by a provider for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the whole prompt, cached ones included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output tokens, reasoning ones included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Output tokens the model spent reasoning (part of
    /// `completion_tokens`; 0 when the server does not say).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`); absent from the line when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which API produced a [`Reasoning`] part: each wire sends back only its
/// own kind (docs/providers.md#reasoning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningApi {
    /// Chat Completions `reasoning_content` (or `reasoning`).
    Chat,
    /// A Responses API `reasoning` item.
    Responses,
    /// An Anthropic `thinking` or `redacted_thinking` block.
    Anthropic,
}

/// What a model reasoned before (or between) its answer and tool calls, as
/// the API gave it (docs/session-format.md#reasoning). Kept losslessly and
/// sent back as its API requires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    pub api: ReasoningApi,
    /// The server's item id (Responses `rs_…`); kept, never sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The reasoning text (Chat `reasoning_content`, Anthropic `thinking`,
    /// Responses `reasoning_text` content).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Responses summary texts, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// Responses `encrypted_content`: opaque, sent back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
    /// Anthropic `signature` of a `thinking` block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Anthropic `redacted_thinking` `data`: opaque, sent back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

impl Reasoning {
    /// An empty part of `api`.
    pub fn new(api: ReasoningApi) -> Self {
        Self {
            api,
            id: None,
            text: String::new(),
            summary: Vec::new(),
            encrypted: None,
            signature: None,
            redacted: None,
        }
    }

    /// What a reader can see of it: the text, else the summary joined by
    /// blank lines (empty for encrypted or redacted reasoning alone).
    pub fn readable(&self) -> String {
        if !self.text.is_empty() {
            return self.text.clone();
        }
        self.summary.join("\n\n")
    }

    /// Characters it adds to a request that sends it back (readable text
    /// and opaque payloads alike).
    pub fn chars(&self) -> usize {
        self.text.chars().count()
            + self
                .summary
                .iter()
                .map(|s| s.chars().count())
                .sum::<usize>()
            + self.encrypted.as_ref().map_or(0, String::len)
            + self.signature.as_ref().map_or(0, String::len)
            + self.redacted.as_ref().map_or(0, String::len)
    }

    /// Whether it holds anything at all.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.summary.is_empty()
            && self.encrypted.is_none()
            && self.redacted.is_none()
    }
}

/// One conversation message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: Content,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// On an assistant message: what the model reasoned first, in the order
    /// the API gave it (docs/session-format.md#reasoning). Absent in older
    /// files, which read as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    /// A tool result that reports a failure (Anthropic's `is_error`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// On the result of a `write_file` / `edit_file` call that changed a
    /// file: what `/rewind` needs to undo it (docs/session-format.md#undo).
    /// Never sent to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<Box<Undo>>,
    /// On an assistant message the provider blocked or refused: its reason
    /// as it gave it (`content_filter`, `refusal`;
    /// docs/providers.md#blocked-replies). Never sent to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

/// How to undo one file change: the file, its content's sha256 before the
/// change (`None`: the change created it) and after it. The content
/// before is kept under `<data dir>/file-history/<session id>/<sha256>`
/// unless `kept` is false (it held a configured API key value, so no copy
/// was made and the change cannot be undone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undo {
    /// Absolute path of the file written.
    pub path: String,
    /// Lowercase hex sha256 of the content before; `null` for a created file.
    #[serde(default)]
    pub before: Option<String>,
    /// Lowercase hex sha256 of the content eonyx wrote.
    pub after: String,
    /// Whether the content before is in the file history.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub kept: bool,
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, Content::Text(text.into()))
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, Content::Text(text.into()))
    }

    pub fn tool_result(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        let mut m = Self::new(Role::Tool, Content::Text(text.into()));
        m.tool_call_id = Some(tool_call_id.into());
        m
    }

    /// A tool result that reports a failure.
    pub fn tool_error(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        let mut m = Self::tool_result(tool_call_id, text);
        m.is_error = true;
        m
    }

    pub fn new(role: Role, content: Content) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            usage: None,
            reasoning: Vec::new(),
            is_error: false,
            undo: None,
            blocked: None,
        }
    }

    /// Characters this message contributes to a request: text, tool-call
    /// names and arguments, the tool-call id. Images are not counted here.
    pub fn chars(&self) -> usize {
        let mut n = self.content.text_chars();
        for c in &self.tool_calls {
            n += c.id.len() + c.name.len() + c.arguments_json().chars().count();
        }
        if let Some(id) = &self.tool_call_id {
            n += id.len();
        }
        n + self.reasoning.iter().map(Reasoning::chars).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_string_and_parts_round_trip() {
        let m: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
        assert_eq!(m.content, Content::Text("hi".into()));
        let m: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","media_type":"image/png","data":"AAAA"}]}"#,
        )
        .unwrap();
        assert_eq!(m.content.image_count(), 1);
        assert_eq!(m.content.text(), "a");
        assert_eq!(
            m.content
                .text_with_images(|t, url| format!("[image {t:?} {url:?}]")),
            "a\n[image Some(\"image/png\") None]"
        );
        let back = serde_json::to_string(&m).unwrap();
        assert_eq!(
            back,
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","media_type":"image/png","data":"AAAA"}]}"#
        );
    }

    #[test]
    fn images_are_labelled_with_their_type_and_decoded_size() {
        let image = |data: &str| Part::Image {
            media_type: Some("image/png".into()),
            data: Some(data.into()),
            url: None,
        };
        // 16 base64 characters are 12 bytes; 16 KiB of data is 12 KiB.
        assert_eq!(
            image("AAAAAAAAAAAAAAAA").image_label().unwrap(),
            "[image png 12 B]"
        );
        assert_eq!(
            image(&"A".repeat(16 * 1024)).image_label().unwrap(),
            "[image png 12 KB]"
        );
        assert_eq!(base64_decoded_len("AAA="), 2);
        assert_eq!(human_bytes(5 * 1024 * 1024 + 200 * 1024), "5.2 MB");
        let by_url = Part::Image {
            media_type: None,
            data: None,
            url: Some("https://x/y.png".into()),
        };
        assert_eq!(by_url.image_label().unwrap(), "[image https://x/y.png]");
        assert_eq!(Part::Text { text: "t".into() }.image_label(), None);
        let c = Content::Parts(vec![
            Part::Text {
                text: "look".into(),
            },
            image("AAAA"),
        ]);
        assert_eq!(c.transcript(), "look\n[image png 3 B]");
    }

    #[test]
    fn tool_call_arguments_keep_invalid_json_verbatim() {
        assert_eq!(ToolCall::parse_arguments(""), serde_json::json!({}));
        assert_eq!(
            ToolCall::parse_arguments(r#"{"path":"a"}"#),
            serde_json::json!({"path":"a"})
        );
        let c = ToolCall {
            id: "1".into(),
            name: "x".into(),
            arguments: ToolCall::parse_arguments("{broken"),
        };
        assert_eq!(c.arguments_json(), "{broken");
    }
}
