//! The frontend's part of summaries written ahead
//! (docs/compaction.md#ahead-of-time-summaries): the agent decides when one
//! is due and what it covers ([`Agent::start_draft`]); this runs its job
//! while eonyx is idle (the REPL waits at its prompt, a batch for its next
//! line) and hands the result back ([`Agent::finish_draft`]). New input on
//! a server that computes one request at a time cancels the job, so the
//! user's request goes first; elsewhere both run. Dropping [`Drafts`] (the
//! process exits) cancels the job: a draft never holds up exit.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use eonyx_agent::commands::{Drafting, Invocation};
use eonyx_agent::{Agent, AgentEvent, DraftDone, DraftJob};

use super::View;

/// At most one job at a time.
#[derive(Debug, Default)]
pub struct Drafts {
    job: Option<DraftJob>,
}

impl Drafts {
    /// At an idle moment: start the job the agent says is due, unless one
    /// runs already.
    pub fn start_if_due(&mut self, agent: &mut Agent, view: &mut View<'_>) {
        if self.job.is_none()
            && let Some(job) = agent.start_draft()
        {
            view.draft_started(job.first_kept_seq());
            self.job = Some(job);
        }
    }

    /// Whether a summary is being written.
    pub fn running(&self) -> bool {
        self.job.is_some()
    }

    /// New input arrived: cancel the job when it would hold up the user's
    /// request (a one-slot server), unless it has just finished: then its
    /// summary is kept.
    pub fn input_arrived(&mut self, agent: &mut Agent, view: &mut View<'_>) {
        if !self.job.as_ref().is_some_and(DraftJob::yields_to_input) {
            return;
        }
        let Some(mut job) = self.job.take() else {
            return;
        };
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(&mut job).poll(&mut cx) {
            Poll::Ready(done) => Self::finish(Some(done), agent, view),
            Poll::Pending => job.cancel(),
        }
    }

    /// Cancel the job (the session is about to change).
    pub fn cancel(&mut self) {
        if let Some(job) = self.job.take() {
            job.cancel();
        }
    }

    /// Before a slash command, as its table row says
    /// ([`Invocation::drafting`]): a session switch or a focused `/compact`
    /// (it writes its own summary) cancels the job; a plain `/compact`
    /// waits for it, so the compaction applies it instead of asking for
    /// another summary; a goal set or resumed sends requests at once.
    /// Other commands send no request, so the job goes on.
    pub async fn before_command(
        &mut self,
        inv: &Invocation<'_>,
        agent: &mut Agent,
        view: &mut View<'_>,
    ) {
        match inv.drafting() {
            Drafting::Cancel => self.cancel(),
            Drafting::InputArrives => self.input_arrived(agent, view),
            Drafting::Await => {
                if let Some(job) = self.job.take() {
                    let done = job.await;
                    Self::finish(Some(done), agent, view);
                }
            }
            Drafting::GoesOn => {}
        }
    }

    /// Wait for `input` (it must not borrow the agent) while the job runs;
    /// a job that finishes meanwhile is handed to the agent at once, its
    /// events to `show`.
    pub async fn wait<T>(
        &mut self,
        input: impl Future<Output = T>,
        agent: &mut Agent,
        show: impl FnMut(AgentEvent),
    ) -> T {
        tokio::pin!(input);
        if let Some(job) = self.job.as_mut() {
            let done = tokio::select! {
                out = &mut input => return out,
                done = job => done,
            };
            self.job = None;
            agent.finish_draft(done);
            agent.events().drain(show);
        }
        input.await
    }

    /// Run `work` (a turn, a command) while the job goes on; returns its
    /// output and the job's result when it finished meanwhile, for
    /// [`Agent::finish_draft`] once `work` no longer borrows the agent.
    pub async fn alongside<T>(&mut self, work: impl Future<Output = T>) -> (T, Option<DraftDone>) {
        tokio::pin!(work);
        let Some(job) = self.job.as_mut() else {
            return (work.await, None);
        };
        let finished = tokio::select! {
            out = &mut work => return (out, None),
            done = job => done,
        };
        self.job = None;
        (work.await, Some(finished))
    }

    /// Hand a result from [`Drafts::alongside`] to the agent.
    pub fn finish(done: Option<DraftDone>, agent: &mut Agent, view: &mut View<'_>) {
        if let Some(done) = done {
            agent.finish_draft(done);
            agent.events().drain(|ev| view.event(ev));
        }
    }
}
