//! The approvers that answer alone ([`AllowAll`], [`DenyAll`]) and those
//! that wrap another ([`TaskLabel`], [`MustAsk`]). A wrapper forwards
//! every decision of [`Approver`] (none has a default), so a read, a
//! rule's denial and the rules a search follows reach the policy inside
//! (`wrappers_tests.rs` runs every kind through every wrapper).

use std::sync::Arc;

use eonyx_core::provider::BoxFuture;

use super::{ApprovalKind, Approver, Decision};
use crate::permissions::RuleMatcher;

/// Approves everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Approver for AllowAll {
    fn decide<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }

    fn decide_asked<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }

    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }

    fn decide_read<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }

    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        None
    }
}

/// Denies everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn decide<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Deny })
    }

    fn decide_asked<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Deny })
    }

    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }

    fn decide_read<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Deny })
    }

    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        None
    }
}

/// The user's approver as a task's child sees it: every question is
/// labelled with the task ([`ApprovalKind::Task`]) before it is asked;
/// reads, rule denials and the rules a search follows are the parent's.
pub struct TaskLabel {
    pub task: String,
    pub inner: Arc<dyn Approver>,
}

impl TaskLabel {
    /// `kind` labelled with the task. (That the child's progress, the call
    /// asked about included, is shown before the question is the agent's
    /// events handle's: every approver it holds flushes it first.)
    fn label(&self, kind: &ApprovalKind) -> ApprovalKind {
        ApprovalKind::Task {
            task: self.task.clone(),
            kind: Box::new(kind.clone()),
        }
    }
}

impl Approver for TaskLabel {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move { self.inner.decide(&self.label(kind)).await })
    }

    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move { self.inner.decide_asked(&self.label(kind)).await })
    }

    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        self.inner.rule_denial(&self.label(kind))
    }

    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move { self.inner.decide_read(&self.label(kind)).await })
    }

    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        self.inner.read_rules()
    }
}

/// An approver whose every question must be asked of the user
/// ([`Approver::decide_asked`]): a call a `PreToolUse` hook answered `ask`
/// about is approved through it, so a mode that would answer for the user
/// (ACP's `auto`) asks instead.
pub struct MustAsk(pub Arc<dyn Approver>);

impl Approver for MustAsk {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.0.decide_asked(kind)
    }

    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.0.decide_asked(kind)
    }

    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.0.decide_read(kind)
    }

    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        self.0.read_rules()
    }

    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        self.0.rule_denial(kind)
    }
}

#[cfg(test)]
#[path = "wrappers_tests.rs"]
mod tests;
