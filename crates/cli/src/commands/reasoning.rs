//! How a message's reasoning parts are shown in transcripts (`sessions
//! show`, `--effective`): marked, readable text indented, opaque payloads
//! (encrypted content, redacted thinking) abbreviated.

/// Opaque reasoning payloads are shown by their start and size.
const OPAQUE_SHOWN_CHARS: usize = 16;

fn abbreviated(s: &str) -> String {
    format!(
        "{} ({} bytes)",
        eonyx_core::text::ellipsize(s, OPAQUE_SHOWN_CHARS),
        s.len()
    )
}

/// A reasoning part: `  [reasoning · API · encrypted enc-4920… (86 bytes)]`
/// then its readable text (or summary), each line indented.
pub(crate) fn block(r: &eonyx_core::Reasoning) -> String {
    let api = match r.api {
        eonyx_core::ReasoningApi::Chat => "chat",
        eonyx_core::ReasoningApi::Responses => "responses",
        eonyx_core::ReasoningApi::Anthropic => "anthropic",
    };
    let mut out = format!("  [reasoning · {api}");
    if r.text.is_empty() && !r.summary.is_empty() {
        out.push_str(" · summary");
    }
    if let Some(e) = &r.encrypted {
        out.push_str(&format!(" · encrypted {}", abbreviated(e)));
    }
    if r.signature.as_deref().is_some_and(|s| !s.is_empty()) {
        out.push_str(" · signed");
    }
    if let Some(d) = &r.redacted {
        out.push_str(&format!(" · redacted {}", abbreviated(d)));
    }
    out.push(']');
    for line in r.readable().lines() {
        out.push_str("\n    ");
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_content_is_abbreviated() {
        let mut r = eonyx_core::Reasoning::new(eonyx_core::ReasoningApi::Responses);
        r.summary = vec!["Read it.".into()];
        r.encrypted = Some("gAAAAB".repeat(20));
        assert_eq!(
            block(&r),
            "  [reasoning · responses · summary · encrypted gAAAABgAAAABgAAA… (120 bytes)]\n    Read it."
        );
    }
}
