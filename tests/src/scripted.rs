//! [`ScriptedProvider`]: an in-process [`Provider`] for unit tests and
//! benches that answers from a script, with no HTTP in between.
//!
//! Use it where a test drives `Agent`, `compact` or a bench directly and the
//! wire format does not matter; use [`crate::FakeServer`] when it does.
//!
//! Invariants:
//! - Steps are consumed in order, one per `send`; when the queue is empty
//!   the responder (if any) answers, otherwise `send` fails with
//!   `ProviderError::Transient { "script exhausted" }`.
//! - Every request is recorded, in order, before it is answered, unless
//!   recording was turned off ([`ScriptedProvider::unrecorded`], for benches
//!   whose requests are large).
//! - [`Step::Hang`] never answers, whatever the request's cancel token says;
//!   [`Step::UntilCancelled`] answers `ProviderError::Cancelled` once it fires.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use eonyx_core::provider::BoxFuture;
use eonyx_core::{
    ChatRequest, ChatResponse, FinishReason, Message, Provider, ProviderError, StreamEvent,
    ToolCall, Usage,
};

/// A computed answer for one request (see [`Step::With`] and
/// [`ScriptedProvider::answering`]).
pub type StepFn = Box<dyn FnOnce(&ChatRequest) -> Step + Send>;
/// The answer for every request once the queue is empty.
pub type ResponderFn = Box<dyn Fn(&ChatRequest) -> Step + Send + Sync>;

/// One scripted answer.
pub enum Step {
    /// Stream `events` (e.g. text deltas), then return `response`.
    Reply {
        events: Vec<StreamEvent>,
        /// Boxed: the other steps are small.
        response: Box<ChatResponse>,
    },
    /// Fail with this error (e.g. a context overflow).
    Fail(ProviderError),
    /// Stream `events`, then wait until the request's cancel token fires and
    /// fail with `ProviderError::Cancelled` (a real provider cut off mid-step).
    UntilCancelled { events: Vec<StreamEvent> },
    /// Never answer, ignoring the cancel token.
    Hang,
    /// Decide from the request (and maybe act on it, e.g. cancel it).
    With(StepFn),
}

impl Step {
    /// A plain assistant text: streamed as one delta, `finish_reason: stop`.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::Reply {
            events: vec![StreamEvent::TextDelta(text.clone())],
            response: Box::new(ChatResponse {
                message: Message::assistant(text),
                usage: None,
                finish_reason: Some(FinishReason::Stop),
            }),
        }
    }

    /// An assistant message calling `(name, arguments)` tools, with ids
    /// `call_1`, `call_2`, … in order.
    pub fn tool_calls(calls: &[(&str, serde_json::Value)]) -> Self {
        let mut message = Message::assistant("");
        for (i, (name, arguments)) in calls.iter().enumerate() {
            message.tool_calls.push(ToolCall {
                id: format!("call_{}", i + 1),
                name: (*name).to_owned(),
                arguments: arguments.clone(),
            });
        }
        Self::Reply {
            events: Vec::new(),
            response: Box::new(ChatResponse {
                message,
                usage: None,
                finish_reason: Some(FinishReason::ToolCalls),
            }),
        }
    }

    /// A context overflow with the server's figures.
    pub fn overflow(prompt_tokens: Option<u64>, limit: Option<u64>) -> Self {
        Self::Fail(ProviderError::ContextOverflow {
            message: "scripted overflow".into(),
            prompt_tokens,
            limit,
        })
    }

    /// Decide from the request.
    pub fn with(f: impl FnOnce(&ChatRequest) -> Step + Send + 'static) -> Self {
        Self::With(Box::new(f))
    }

    /// Report `usage` with a `Reply` (on the response and on its message,
    /// as the real providers do); other steps are returned unchanged.
    pub fn usage(mut self, usage: Usage) -> Self {
        if let Self::Reply { response, .. } = &mut self {
            response.usage = Some(usage);
            response.message.usage = Some(usage);
        }
        self
    }
}

/// An in-process provider answering from a queue of [`Step`]s.
pub struct ScriptedProvider {
    name: String,
    queue: Mutex<VecDeque<Step>>,
    responder: Option<ResponderFn>,
    record: bool,
    requests: Mutex<Vec<ChatRequest>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ScriptedProvider {
    /// Answers `steps` in order, then fails with "script exhausted".
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            name: "scripted".into(),
            queue: Mutex::new(steps.into_iter().collect()),
            responder: None,
            record: true,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Answers every request with `f` (after any queued steps).
    pub fn answering(f: impl Fn(&ChatRequest) -> Step + Send + Sync + 'static) -> Self {
        Self::new([]).with_responder(f)
    }

    /// Answer with `f` once the queue is empty.
    pub fn with_responder(
        mut self,
        f: impl Fn(&ChatRequest) -> Step + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Box::new(f));
        self
    }

    /// The name reported by [`Provider::name`] (default `scripted`).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// Do not keep copies of the requests (benches with large requests).
    pub fn unrecorded(mut self) -> Self {
        self.record = false;
        self
    }

    /// Queue more steps.
    pub fn push(&self, step: Step) {
        lock(&self.queue).push_back(step);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }

    /// How many steps are still queued.
    pub fn remaining(&self) -> usize {
        lock(&self.queue).len()
    }

    fn next_step(&self, request: &ChatRequest) -> Step {
        let queued = lock(&self.queue).pop_front();
        let mut step = match (queued, &self.responder) {
            (Some(step), _) => step,
            (None, Some(f)) => f(request),
            (None, None) => Step::Fail(ProviderError::Transient {
                message: "script exhausted".into(),
            }),
        };
        while let Step::With(f) = step {
            step = f(request);
        }
        step
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn send<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        if self.record {
            lock(&self.requests).push(request.clone());
        }
        let step = self.next_step(request);
        Box::pin(async move {
            match step {
                Step::Reply { events, response } => {
                    for e in events {
                        on_event(e);
                    }
                    Ok(*response)
                }
                Step::Fail(e) => Err(e),
                Step::UntilCancelled { events } => {
                    for e in events {
                        on_event(e);
                    }
                    request.cancel.cancelled().await;
                    Err(ProviderError::Cancelled)
                }
                Step::Hang => std::future::pending().await,
                // `next_step` resolves every `With`.
                Step::With(_) => Err(ProviderError::Transient {
                    message: "unresolved scripted step".into(),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::SystemPrompt;

    fn request(text: &str) -> ChatRequest {
        ChatRequest::new("m", SystemPrompt::default(), vec![Message::user(text)])
    }

    #[tokio::test]
    async fn answers_in_order_records_requests_then_falls_back() {
        let p = ScriptedProvider::new([Step::text("one"), Step::overflow(Some(9), Some(8))])
            .with_responder(|r| Step::text(format!("echo {}", r.messages.len())));
        let mut deltas = Vec::new();
        let mut sink = |e: StreamEvent| deltas.push(e);
        let a = p.send(&request("a"), &mut sink).await.unwrap();
        assert_eq!(a.message.content.text(), "one");
        let b = p.send(&request("b"), &mut sink).await;
        assert!(matches!(
            b,
            Err(ProviderError::ContextOverflow { limit: Some(8), .. })
        ));
        let c = p.send(&request("c"), &mut sink).await.unwrap();
        assert_eq!(c.message.content.text(), "echo 1");
        assert_eq!(
            deltas,
            [
                StreamEvent::TextDelta("one".into()),
                StreamEvent::TextDelta("echo 1".into())
            ]
        );
        let seen: Vec<String> = p
            .requests()
            .iter()
            .map(|r| r.messages[0].content.text())
            .collect();
        assert_eq!(seen, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn an_empty_script_fails_and_until_cancelled_ends_on_cancel() {
        let p = ScriptedProvider::new([Step::UntilCancelled { events: vec![] }]).unrecorded();
        let req = request("x");
        req.cancel.cancel();
        let r = p.send(&req, &mut |_| {}).await;
        assert!(matches!(r, Err(ProviderError::Cancelled)));
        let r = p.send(&req, &mut |_| {}).await;
        assert!(matches!(r, Err(ProviderError::Transient { .. })), "{r:?}");
        assert!(p.requests().is_empty());
    }
}
