//! A tool result as text (docs/mcp.md#results): text parts as they are,
//! an embedded text resource as its text, images, audio, binary resources
//! and resource links as one-line placeholders; with no content at all,
//! the structured content as JSON.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::client::CallOutput;

/// The text the model sees for a tool's result.
pub(crate) fn call_output(result: &CallToolResult) -> CallOutput {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty()
        && let Some(v) = &result.structured_content
    {
        parts.push(v.to_string());
    }
    CallOutput {
        text: parts.join("\n"),
        is_error: result.is_error.unwrap_or(false),
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes, not shown]",
            i.mime_type,
            decoded_len(&i.data)
        ),
        ContentBlock::Audio(a) => format!(
            "[audio: {}, {} bytes, not shown]",
            a.mime_type,
            decoded_len(&a.data)
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes, not shown]",
                mime_type.as_deref().unwrap_or("binary"),
                decoded_len(blob)
            ),
            _ => "[resource of an unknown kind, not shown]".to_owned(),
        },
        ContentBlock::ResourceLink(l) => {
            let mut s = format!("[resource link: {}", l.uri);
            if !l.name.is_empty() && l.name != l.uri {
                s.push_str(&format!(" ({})", l.name));
            }
            if let Some(d) = l.description.as_deref().filter(|d| !d.is_empty()) {
                s.push_str(&format!(": {d}"));
            }
            s.push(']');
            s
        }
        // A content type newer than this client.
        other => match serde_json::to_value(other) {
            Ok(v) => format!(
                "[{} content, not shown]",
                v.get("type").and_then(|t| t.as_str()).unwrap_or("unknown")
            ),
            Err(_) => "[content of an unknown type, not shown]".to_owned(),
        },
    }
}

/// Bytes a base64 string decodes to (without decoding it).
fn decoded_len(b64: &str) -> usize {
    let trimmed = b64.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_parts_are_joined_and_others_are_placeholders() {
        let r = result(json!({
            "content": [
                {"type": "text", "text": "first"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c file"},
                {"type": "text", "text": "last"}
            ],
            "isError": false
        }));
        let out = call_output(&r);
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "first\n[image: image/png, 5 bytes, not shown]\n[resource: file:///a.txt]\ninside\n[resource: file:///b.bin, application/zip, 3 bytes, not shown]\n[resource link: file:///c (c file)]\nlast"
        );
    }

    #[test]
    fn is_error_and_structured_content_are_kept() {
        let r =
            result(json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}));
        assert_eq!(
            call_output(&r),
            CallOutput {
                text: "no such city".into(),
                is_error: true
            }
        );
        let r = result(json!({"content": [], "structuredContent": {"temp": 21}}));
        assert_eq!(call_output(&r).text, r#"{"temp":21}"#);
    }
}
