//! The client's prompt as one user message (docs/acp.md#prompts): text
//! blocks as typed, resource links read like `@path` attachments,
//! embedded resources attached with their text, images as image parts.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use camino::Utf8Path;
use eonyx_agent::attach::{self, Accept, AttachError, AttachLimits, Attachment};
use eonyx_agent::{Agent, AgentError, UserInput};

/// The user message of `blocks`, `prefix` first (a skill command's
/// instruction).
pub fn user_input(
    agent: &Agent,
    blocks: &[ContentBlock],
    prefix: Option<&str>,
) -> Result<UserInput, AgentError> {
    let tools = &agent.config().tools;
    let limits = AttachLimits {
        text_cap_bytes: tools.output_cap_bytes,
        max_image_bytes: tools.max_image_bytes,
    };
    input_of(&limits, agent.cwd(), agent.project_root(), blocks, prefix)
}

/// [`user_input`] with the attachment limits and the places a resource
/// link is looked up from given (the fuzz target reads prompts so).
pub(crate) fn input_of(
    limits: &AttachLimits,
    cwd: &Utf8Path,
    root: &Utf8Path,
    blocks: &[ContentBlock],
    prefix: Option<&str>,
) -> Result<UserInput, AgentError> {
    let mut text = prefix.map(str::to_owned).unwrap_or_default();
    let mut attachments = Vec::new();
    let mut images = 0;
    for block in blocks {
        match block {
            ContentBlock::Text(t) => {
                if prefix.is_some() && !t.text.is_empty() && !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&t.text);
            }
            ContentBlock::ResourceLink(link) => {
                let Some(path) = file_path(&link.uri) else {
                    text.push_str(&link.uri);
                    continue;
                };
                let found = attach::locate(&path, cwd, root, None)?;
                // Shown as the client named it.
                text.push_str(&format!("@{}", found.shown));
                attachments.push(attach::read(&found, limits, Accept::Any)?);
            }
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    let shown = file_path(&t.uri).unwrap_or_else(|| t.uri.clone());
                    let cap = usize::try_from(limits.text_cap_bytes).unwrap_or(usize::MAX);
                    let mut end = t.text.len().min(cap);
                    while !t.text.is_char_boundary(end) {
                        end -= 1;
                    }
                    attachments.push(Attachment::Text {
                        shown,
                        text: t.text[..end].to_owned(),
                        bytes: t.text.len() as u64,
                        cut: (t.text.len() - end) as u64,
                    });
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    let Some(media_type) = b.mime_type.as_deref().and_then(image_media_type) else {
                        return Err(AttachError::Binary {
                            shown: b.uri.clone(),
                        }
                        .into());
                    };
                    images += 1;
                    attachments.push(image(&b.uri, media_type, &b.blob, limits)?);
                }
                _ => {
                    return Err(AttachError::Unsupported {
                        what: "an embedded resource of an unknown kind",
                    }
                    .into());
                }
            },
            ContentBlock::Image(i) => {
                let Some(media_type) = image_media_type(&i.mime_type) else {
                    return Err(AttachError::NotAnImage {
                        shown: format!("an image of type {}", i.mime_type),
                    }
                    .into());
                };
                images += 1;
                let shown = i.uri.clone().unwrap_or_else(|| format!("image {images}"));
                attachments.push(image(&shown, media_type, &i.data, limits)?);
            }
            ContentBlock::Audio(_) => {
                return Err(AttachError::Unsupported { what: "audio" }.into());
            }
            _ => {
                return Err(AttachError::Unsupported {
                    what: "a content block of an unknown type",
                }
                .into());
            }
        }
    }
    Ok(UserInput {
        content: attach::content(&text, &attachments),
        attached: attachments.iter().map(Attachment::describe).collect(),
        text,
    })
}

fn image(
    shown: &str,
    media_type: &'static str,
    data: &str,
    limits: &AttachLimits,
) -> Result<Attachment, AgentError> {
    let bytes = (data.len() as u64) * 3 / 4;
    if bytes > limits.max_image_bytes {
        return Err(AttachError::ImageTooLarge {
            shown: shown.to_owned(),
            bytes,
            max: limits.max_image_bytes,
        }
        .into());
    }
    Ok(Attachment::Image {
        shown: shown.to_owned(),
        media_type,
        data: data.to_owned(),
        bytes,
    })
}

/// The image types eonyx sends.
fn image_media_type(mime: &str) -> Option<&'static str> {
    match mime {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    }
}

/// The path of a `file://` URI (percent-escapes decoded), or a plain path.
pub fn file_path(uri: &str) -> Option<String> {
    let rest = match uri.strip_prefix("file://") {
        Some(r) => r,
        None if uri.starts_with('/') => uri,
        None => return None,
    };
    // `file://host/path`: only the local host.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = rest
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(h);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_path("file:///home/u/a%20b.rs").as_deref(),
            Some("/home/u/a b.rs")
        );
        assert_eq!(file_path("file://localhost/x").as_deref(), Some("/x"));
        assert_eq!(file_path("/abs/p").as_deref(), Some("/abs/p"));
        assert_eq!(file_path("https://example.com/x"), None);
        assert_eq!(file_path("file://otherhost/x"), None);
    }
}
