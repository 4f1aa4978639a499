//! What the server kept: every request, in arrival order, and the previous
//! prompt its prompt cache compares with.

use super::{FakeServer, RecordedRequest};

impl FakeServer {
    /// Forget the previous prompt, so the next request has no cache hit.
    pub fn clear_prompt_cache(&self) -> &Self {
        self.inner().previous_prompt = None;
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner().requests.clone()
    }

    /// Only the chat requests (`/v1/chat/completions`, `/v1/messages`).
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.inner()
            .requests
            .iter()
            .filter(|r| r.is_chat())
            .cloned()
            .collect()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.inner().requests.last().cloned()
    }

    /// Forget the recorded requests.
    pub fn clear_requests(&self) -> &Self {
        self.inner().requests.clear();
        self
    }
}
