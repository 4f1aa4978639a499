//! Ahead-of-time summaries (docs/compaction.md#ahead-of-time-summaries):
//! the agent decides when one is due and builds the job; the frontend runs
//! the job while it waits for the user (it alone knows when eonyx is idle)
//! and hands the result back; the next compaction applies the newest
//! draft that still fits (`compaction.rs`).
//!
//! Invariant: a draft changes nothing until a compaction applies it; a
//! cancelled, failed or outdated one is dropped and a new one is started at
//! the next idle moment.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use eonyx_compact::{DraftInput, DraftOutcome};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{CompactionTrigger, SessionId, SummaryDraftRecord};

use super::Agent;
use crate::error::AgentError;
use crate::events::AgentEvent;

/// A summary being written in the background: an independent future (it
/// owns the summarizer, the request and the plan), for the frontend to
/// poll while it waits for input. Dropping it (or [`DraftJob::cancel`])
/// stops it and changes nothing.
pub struct DraftJob {
    future: Pin<Box<dyn Future<Output = DraftOutcome> + Send>>,
    cancel: CancellationToken,
    session: SessionId,
    first_kept_seq: u64,
    yields_to_input: bool,
}

impl std::fmt::Debug for DraftJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraftJob")
            .field("session", &self.session)
            .field("first_kept_seq", &self.first_kept_seq)
            .field("yields_to_input", &self.yields_to_input)
            .finish_non_exhaustive()
    }
}

impl DraftJob {
    /// The boundary the summary is written for.
    pub fn first_kept_seq(&self) -> u64 {
        self.first_kept_seq
    }

    /// Whether new input must cancel it so the user's request goes first:
    /// the server computes one request at a time (llama.cpp `/props`
    /// `total_slots` = 1). Elsewhere both run.
    pub fn yields_to_input(&self) -> bool {
        self.yields_to_input
    }

    /// Stop it; nothing was written.
    pub fn cancel(self) {
        self.cancel.cancel();
    }
}

impl Drop for DraftJob {
    fn drop(&mut self) {
        // The summarizer request stops too (the provider watches the token).
        self.cancel.cancel();
    }
}

/// A finished job, to hand back with [`Agent::finish_draft`].
#[derive(Debug)]
pub struct DraftDone {
    outcome: DraftOutcome,
    session: SessionId,
}

impl Future for DraftJob {
    type Output = DraftDone;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DraftDone> {
        let session = self.session.clone();
        self.future
            .as_mut()
            .poll(cx)
            .map(|outcome| DraftDone { outcome, session })
    }
}

impl Agent {
    /// Start writing the next summary in the background, when one is due:
    /// the request is estimated past `compaction.ahead_percent`, automatic
    /// compaction is on, there is something to summarize before the kept
    /// turns, and the newest draft is not already for this boundary. Call
    /// it only when the session is idle (the user is reading or typing) and
    /// no job is running.
    pub fn start_draft(&mut self) -> Option<DraftJob> {
        let ahead = self.compaction.trigger.ahead?;
        self.compaction.trigger.tokens?;
        // With native compaction the provider writes at the trigger
        // (docs/compaction.md#native-compaction): nothing is drafted.
        if crate::native::wire_to_ask(
            &self.config.model,
            &self.config.compaction,
            self.models.provider.as_ref(),
        )
        .is_some()
        {
            return None;
        }
        if !self.compaction.guard.allowed() || self.estimate_next() < ahead {
            return None;
        }
        let target = eonyx_compact::request_target(&self.compaction.trigger);
        let overhead = self.overhead_tokens();
        let budget = eonyx_compact::tail_budget(
            target,
            overhead,
            &self.config.compaction,
            self.compaction.trigger.window,
        );
        let plan = self
            .plan_compaction(CompactionTrigger::Auto, overhead, budget)
            .ok()
            .filter(|p| !p.mid_turn)?;
        if self
            .current_draft()
            .is_some_and(|d| d.first_kept_seq >= plan.first_kept_seq)
            || self.hook.draft_blocked_at() == Some(plan.first_kept_seq)
        {
            return None;
        }
        let cancel = CancellationToken::new();
        let next = self
            .shared_prefix_base(CompactionTrigger::Auto, &cancel)
            .ok()
            .map(|mut r| {
                r.cancel = cancel.clone();
                r
            });
        // Which user messages the compaction keeps verbatim (the summarizer
        // is told); a file that cannot be read now drafts nothing.
        let said_note = self.said_at(plan.first_kept_seq).ok()?.said.map(|s| s.note);
        // What a compaction now would work on, owned by the job.
        let now = self.compact_input(&plan, CompactionTrigger::Auto, None, None);
        let input = DraftInput {
            model_name: now.model_name.to_owned(),
            view: now.view.clone(),
            plan: plan.clone(),
            cfg: now.cfg.clone(),
            estimator: now.estimator.clone(),
            window: now.window,
            system_chars: now.system_chars,
            next,
            base_seq: self.compaction.base_seq,
            pinned: self.pinned(),
            said_note,
        };
        let provider = self.models.summarizer.clone();
        let job_cancel = cancel.clone();
        // PreCompact runs first, inside the job (docs/hooks.md#events).
        let gate = self.hook.draft_gate(plan.first_kept_seq);
        let future = async move {
            if let Err(why) = gate.await {
                return DraftOutcome {
                    result: Err(eonyx_compact::CompactError::Cancelled),
                    debug: vec![why],
                };
            }
            eonyx_compact::write_draft(provider, input, job_cancel).await
        };
        Some(DraftJob {
            future: Box::pin(future),
            cancel,
            session: self.session_id().clone(),
            first_kept_seq: plan.first_kept_seq,
            yields_to_input: self.one_slot_summarizer(),
        })
    }

    /// Take a finished job's result: a draft that still fits the session
    /// (same session, same base compaction, boundary still in the view) is
    /// appended as a `summary_draft` record and reported; anything else is
    /// dropped (a failure only reaches a debug event, a draft that cannot
    /// be saved is a warning: nothing depends on it). It does not wait, so
    /// its events wait in [`Agent::events`] for the frontend to drain.
    pub fn finish_draft(&mut self, done: DraftDone) {
        for m in done.outcome.debug {
            self.events.send(AgentEvent::Debug(m));
        }
        let draft = match done.outcome.result {
            Ok(d) => d,
            Err(eonyx_compact::CompactError::Cancelled) => return,
            Err(e) => {
                self.events.send(AgentEvent::Debug(format!(
                    "the summary written ahead failed ({e}); it is tried again at the next idle moment"
                )));
                return;
            }
        };
        if &done.session != self.session_id()
            || draft.base_seq != self.compaction.base_seq
            || eonyx_compact::plan_at(&self.view, draft.first_kept_seq).is_none()
        {
            self.events.send(AgentEvent::Debug(
                "the summary written ahead is outdated (the session was compacted or switched meanwhile); dropped".to_owned(),
            ));
            return;
        }
        self.remember_quirks();
        match self.writer.append_draft(draft) {
            Ok(saved) => {
                self.compaction.draft = Some(saved.clone());
                self.events.send(AgentEvent::SummaryDraft(saved));
            }
            Err(e) => self.events.send(AgentEvent::Warning(format!(
                "the summary written ahead could not be saved, so the next compaction writes its own: {}",
                AgentError::from(e)
            ))),
        }
    }

    /// Whether a summary written ahead is ready for the next compaction.
    pub fn draft_ready(&self) -> bool {
        self.current_draft().is_some()
    }

    /// The newest draft, when it still builds on the latest compaction and
    /// its boundary is in the view.
    pub(super) fn current_draft(&self) -> Option<&SummaryDraftRecord> {
        self.compaction.draft.as_ref().filter(|d| {
            d.base_seq == self.compaction.base_seq
                && eonyx_compact::plan_at(&self.view, d.first_kept_seq).is_some()
        })
    }

    /// The summarizer's server computes one request at a time and is the
    /// session's (a background summary would hold up the user's request).
    fn one_slot_summarizer(&self) -> bool {
        self.models.total_slots == Some(1)
            && self.models.summarizer_config.base_url == self.config.model.base_url
    }
}
