//! [`Flushing`]: an approver that lets the frontend show every event sent
//! before it decides, so a question is never drawn above the tool call it
//! is about (or anything else that came before it). It forwards every
//! decision of [`Approver`] to the approver it wraps.

use std::sync::Arc;

use eonyx_core::provider::BoxFuture;
use eonyx_tools::permissions::RuleMatcher;
use eonyx_tools::{ApprovalKind, Approver, Decision};

use super::Events;

pub(crate) struct Flushing {
    events: Events,
    inner: Arc<dyn Approver>,
}

impl Flushing {
    /// `inner`, flushing `events` before each decision that may ask.
    pub(crate) fn wrap(events: &Events, inner: Arc<dyn Approver>) -> Arc<dyn Approver> {
        Arc::new(Self {
            events: events.clone(),
            inner,
        })
    }
}

impl Approver for Flushing {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            self.events.flush().await;
            self.inner.decide(kind).await
        })
    }

    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            self.events.flush().await;
            self.inner.decide_asked(kind).await
        })
    }

    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        self.inner.rule_denial(kind)
    }

    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            self.events.flush().await;
            self.inner.decide_read(kind).await
        })
    }

    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        self.inner.read_rules()
    }
}
