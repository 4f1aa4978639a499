//! A summary cut by the output cap (`summary_max_tokens`) is not stored as
//! if complete, and never costs a second full request: the shared-prefix
//! summarizer asks once for a shorter one on the same cached prefix
//! ([`retry_shorter_if_cut`]); the transcript summarizer keeps the cut
//! summary ([`mark_if_cut`]). A summary still cut is kept with
//! [`CUT_SUMMARY_NOTE`] appended, so the user (and the model) can tell.

use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, ChatResponse, Content, FinishReason, Provider, ProviderError};

use crate::CompactError;

/// Appended to a summary that was cut at the output cap and kept.
pub const CUT_SUMMARY_NOTE: &str = "[This summary was cut at the summarizer's output limit (compaction.summary_max_tokens) and may be incomplete.]";

/// The request asking again for a summary at most half as long.
pub(crate) fn shorter(req: &ChatRequest) -> ChatRequest {
    let mut again = req.clone();
    let cap = req.max_tokens.unwrap_or(0);
    let note = format!(
        "\n\nA previous attempt at this summary was cut off at the output limit ({cap} tokens). Write the whole summary again, shorter: at most about {} tokens, keeping every section.",
        cap / 2
    );
    if let Some(last) = again.messages.last_mut() {
        match &mut last.content {
            Content::Text(t) => t.push_str(&note),
            other => *other = Content::Text(format!("{}{note}", other.text())),
        }
    }
    again
}

/// `resp` as a summary to keep: when it was cut by the output cap, its
/// text with [`CUT_SUMMARY_NOTE`] appended.
pub(crate) fn mark_if_cut(mut resp: ChatResponse) -> ChatResponse {
    if resp.finish_reason == Some(FinishReason::Length) {
        let text = format!(
            "{}\n\n{CUT_SUMMARY_NOTE}",
            resp.message.content.text().trim_end()
        );
        resp.message.content = Content::Text(text);
    }
    resp
}

/// Send a summarizer request (its stream unread) until `cancel` fires
/// (`None`: cancelled before it finished).
pub(crate) async fn send(
    provider: &dyn Provider,
    req: &ChatRequest,
    cancel: &CancellationToken,
) -> Option<Result<ChatResponse, ProviderError>> {
    let mut ignore = |_ev| {};
    cancel
        .run_until_cancelled(provider.send(req, &mut ignore))
        .await
}

/// When `resp` was cut by the output cap, ask once for a shorter summary
/// with the same request plus a note (its prefix is what the provider just
/// cached); a second cut is kept marked, and a retry that fails keeps the
/// first reply, marked.
pub(crate) async fn retry_shorter_if_cut(
    provider: &dyn Provider,
    req: &ChatRequest,
    resp: ChatResponse,
    cancel: &CancellationToken,
) -> Result<ChatResponse, CompactError> {
    if resp.finish_reason != Some(FinishReason::Length) {
        return Ok(resp);
    }
    match send(provider, &shorter(req), cancel).await {
        None | Some(Err(ProviderError::Cancelled)) => Err(CompactError::Cancelled),
        Some(Err(_)) => Ok(mark_if_cut(resp)),
        Some(Ok(r)) if r.message.content.text().trim().is_empty() => Ok(mark_if_cut(resp)),
        Some(Ok(r)) => Ok(mark_if_cut(r)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::{Message, SystemPrompt};

    #[test]
    fn the_retry_asks_for_half_the_cap_in_the_same_request() {
        let mut req = ChatRequest::new(
            "m",
            SystemPrompt::default(),
            vec![Message::user("transcript")],
        );
        req.max_tokens = Some(400);
        let again = shorter(&req);
        let text = again.messages[0].content.text();
        assert!(text.starts_with("transcript\n\n"), "{text}");
        assert!(text.contains("cut off at the output limit (400 tokens)"));
        assert!(text.contains("at most about 200 tokens"));
        assert_eq!(again.max_tokens, Some(400));
    }
}
