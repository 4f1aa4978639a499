//! A summary cut by the output cap (`summary_max_tokens`) is not stored as
//! if complete: the summarizer is asked once for a shorter one; if that is
//! cut too, it is kept with [`CUT_SUMMARY_NOTE`] appended, so the user (and
//! the model) can tell.

use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, ChatResponse, Content, FinishReason, Provider, ProviderError};

use crate::CompactError;

/// Appended to a summary that was still cut after the shorter retry.
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

/// When `resp` was cut by the output cap, ask once for a shorter summary;
/// a second cut keeps the reply, marked with [`CUT_SUMMARY_NOTE`].
pub(crate) async fn retry_if_cut(
    provider: &dyn Provider,
    req: &ChatRequest,
    resp: ChatResponse,
    cancel: &CancellationToken,
) -> Result<ChatResponse, CompactError> {
    if resp.finish_reason != Some(FinishReason::Length) {
        return Ok(resp);
    }
    let again = shorter(req);
    let mut ignore = |_ev| {};
    let mut resp = match cancel
        .run_until_cancelled(provider.send(&again, &mut ignore))
        .await
    {
        None | Some(Err(ProviderError::Cancelled)) => return Err(CompactError::Cancelled),
        Some(Err(e)) => return Err(CompactError::Summarizer(e)),
        Some(Ok(r)) => r,
    };
    if resp.finish_reason == Some(FinishReason::Length) {
        let text = format!(
            "{}\n\n{CUT_SUMMARY_NOTE}",
            resp.message.content.text().trim_end()
        );
        resp.message.content = Content::Text(text);
    }
    Ok(resp)
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
