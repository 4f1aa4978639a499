//! Scripted replies: the queue, the default reply and the responder hook.

use std::sync::Arc;

use super::{FakeServer, RecordedRequest, Reply};

impl FakeServer {
    /// Queue a reply; chat requests take replies in the order pushed.
    pub fn push(&self, reply: Reply) -> &Self {
        self.inner().queue.push_back(reply);
        self
    }

    /// Queue several replies.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.inner().queue.extend(replies);
        self
    }

    /// Replies still queued.
    pub fn pending(&self) -> usize {
        self.inner().queue.len()
    }

    /// The reply used when the queue is empty (initially `Reply::text("ok")`).
    pub fn set_default_reply(&self, reply: Reply) -> &Self {
        self.inner().default_reply = reply;
        self
    }

    /// Consult `f` before the queue for every chat request (after the auth
    /// and context-window checks); `Some(reply)` answers without consuming
    /// the queue.
    pub fn set_responder(
        &self,
        f: impl Fn(&RecordedRequest) -> Option<Reply> + Send + Sync + 'static,
    ) -> &Self {
        self.inner().responder = Some(Arc::new(f));
        self
    }

    /// Answer compaction requests ([`RecordedRequest::is_summarizer`]) with
    /// `f`, leaving the queue for the agent's own requests.
    pub fn set_summarizer(
        &self,
        f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> &Self {
        self.set_responder(move |r| r.is_summarizer().then(|| f(r)))
    }

    /// A summarizer that keeps nothing: every compaction request
    /// ([`RecordedRequest::is_summarizer`]) gets [`FORGETFUL_SUMMARY`],
    /// whatever the conversation held (a weak model that drops the goal
    /// and the plan). What survives such a compaction is what eonyx keeps
    /// itself.
    pub fn set_forgetful_summarizer(&self) -> &Self {
        self.set_summarizer(|_| Reply::text(FORGETFUL_SUMMARY))
    }
}

impl FakeServer {
    /// Answer memory-mining requests ([`RecordedRequest::is_miner`]) with
    /// `f` (a scripted extractor), never from the queue. Without one they
    /// get [`NO_MEMORIES`], so a test's queued replies stay the agent's.
    pub fn set_extractor(
        &self,
        f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> &Self {
        self.inner().extractor = Some(Arc::new(move |r| Some(f(r))));
        self
    }

    /// The memory-mining requests, in arrival order.
    pub fn miner_requests(&self) -> Vec<RecordedRequest> {
        self.chat_requests()
            .into_iter()
            .filter(RecordedRequest::is_miner)
            .collect()
    }
}

/// What a mining request gets when no extractor is set: nothing durable.
pub const NO_MEMORIES: &str = r#"{"memories": []}"#;

/// What [`FakeServer::set_forgetful_summarizer`] answers.
pub const FORGETFUL_SUMMARY: &str = "## Active goal\nnone\n## Progress\nnone\n## Open tasks and next steps\nnone\n## Critical context\nnone";
