//! A summary cut by the output cap (`summary_max_tokens`) is not stored as
//! if complete, and is never asked for again: both summarizers keep it with
//! [`CUT_SUMMARY_NOTE`] appended ([`mark_if_cut`]), so the user (and the
//! model) can tell. One summarizer request per compaction.

use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, ChatResponse, Content, FinishReason, Provider, ProviderError};

/// Appended to a summary that was cut at the output cap and kept.
pub const CUT_SUMMARY_NOTE: &str = "[This summary was cut at the summarizer's output limit (compaction.summary_max_tokens) and may be incomplete.]";

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
