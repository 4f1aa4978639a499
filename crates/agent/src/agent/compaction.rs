//! Compaction steps: when to compact before a step, `/compact`, where to
//! cut, and the call into eonyx-compact; the saved record then refreshes
//! memory and the skills in use.

use eonyx_compact::{Plan, PlanError};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, CompactionRecord, CompactionTrigger, Role};

use super::Agent;
use crate::error::AgentError;
use crate::events::AgentEvent;

impl Agent {
    pub(super) async fn maybe_auto_compact(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let Some(trigger_tokens) = self.trigger.tokens else {
            return Ok(());
        };
        if !self.guard.allowed() {
            return Ok(());
        }
        let estimate = self.estimate_next();
        if estimate < trigger_tokens {
            return Ok(());
        }
        let target = eonyx_compact::request_target(&self.trigger);
        match self
            .compact_with(CompactionTrigger::Auto, None, target, sink, cancel)
            .await
        {
            Ok(_) => Ok(()),
            Err(AgentError::Interrupted) => Err(AgentError::Interrupted),
            Err(AgentError::NothingToCompact) => {
                // Everything that may go is already summarized; the guard
                // keeps this from repeating every step.
                if let Some(msg) = self.guard.after_compaction(estimate, trigger_tokens) {
                    sink(AgentEvent::Notice(msg));
                }
                Ok(())
            }
            Err(AgentError::Compaction(reason)) => {
                // A failed compaction deletes nothing; go on uncompacted if the
                // request still fits the window, else fail with the reason.
                let window = self.trigger.window;
                if self.estimate_next() < window {
                    sink(AgentEvent::Warning(format!(
                        "compaction failed, continuing uncompacted: {reason}"
                    )));
                    Ok(())
                } else {
                    Err(AgentError::Compaction(reason))
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Compact now (`/compact`, `eonyx compact`).
    pub async fn compact_now(
        &mut self,
        focus: Option<&str>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<CompactionRecord, AgentError> {
        let target = eonyx_compact::request_target(&self.trigger);
        let record = self
            .compact_with(CompactionTrigger::Manual, focus, target, sink, cancel)
            .await?
            .ok_or(AgentError::NothingToCompact)?;
        self.guard.reset();
        Ok(record)
    }

    /// Where to cut: keep the last `keep_turns` turns verbatim whenever
    /// they fit under the trigger; the lower aim (`budget`) only decides how
    /// far to cut when they do not. An overflow aims at the learned window.
    fn plan_compaction(
        &self,
        trigger: CompactionTrigger,
        overhead: u64,
        budget: u64,
    ) -> Result<Plan, AgentError> {
        let planned = |budget| {
            eonyx_compact::plan(&self.view, &self.config.compaction, &self.estimator, budget)
        };
        let keep_plan = match trigger {
            CompactionTrigger::Overflow => None,
            _ => {
                let ceiling = eonyx_compact::tail_budget(
                    self.trigger.ceiling(),
                    overhead,
                    &self.config.compaction,
                    self.trigger.window,
                );
                let want = (self.config.compaction.keep_turns as usize).max(1);
                planned(ceiling.max(budget)).ok().filter(|p| {
                    let records = self.view.records();
                    let kept = records[p.compacted_len.min(records.len())..]
                        .iter()
                        .filter(|r| r.message.role == Role::User)
                        .count();
                    !p.mid_turn && kept >= want
                })
            }
        };
        match keep_plan.map_or_else(|| planned(budget), Ok) {
            Ok(p) => Ok(p),
            Err(PlanError::NothingToCompact) => Err(AgentError::NothingToCompact),
        }
    }

    /// The request a shared-prefix summary extends (the one the
    /// conversation would send now), or `None` with a debug note when only
    /// the transcript summarizer can work: an overflow (that request is
    /// already too big) or a different `compaction.model` (another model
    /// has nothing of this conversation cached).
    fn shared_prefix_base(
        &self,
        trigger: CompactionTrigger,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Option<ChatRequest> {
        let own_model = self.config.compaction.model.is_empty()
            || self.config.compaction.model == self.config.model_key;
        let why = if trigger == CompactionTrigger::Overflow {
            "the request overflowed the window"
        } else if !own_model {
            "compaction.model is a different model"
        } else {
            return Some(self.build_request(cancel));
        };
        sink(AgentEvent::Debug(format!(
            "compaction: {why}; using the transcript summarizer"
        )));
        None
    }

    /// Compact so that the whole next request aims at `target` tokens.
    /// `Ok(None)`: collapsing older tool results made enough room, no
    /// summary was needed.
    pub(super) async fn compact_with(
        &mut self,
        trigger: CompactionTrigger,
        focus: Option<&str>,
        target: u64,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Option<CompactionRecord>, AgentError> {
        // The planner budgets the retained messages: take away what is not a
        // message (system prompt without the old summary, tool definitions)
        // and room for the new summary.
        let bare_system = self.bare_system_prompt();
        let overhead = self.estimator.tokens_for(eonyx_compact::request_size(
            &bare_system,
            &[],
            &self.tool_defs,
        ));
        let budget = eonyx_compact::tail_budget(
            target,
            overhead,
            &self.config.compaction,
            self.trigger.window,
        );
        // Old tool output is the usual reason a conversation fills up:
        // collapse older results first (the newest `keep_recent_results`
        // stay whole, the session file keeps them all) and summarize only if
        // that is not enough. `/compact` asks for a summary, so it skips this.
        if trigger != CompactionTrigger::Manual {
            let excess = self.estimate_next().saturating_sub(target);
            let chars = (excess as f64 * self.estimator.ratio()).ceil() as usize;
            let n = self.view.collapse_for_room(chars);
            if n > 0 {
                sink(AgentEvent::Notice(format!(
                    "collapsed {n} older tool result(s) to make room; the session file keeps them whole"
                )));
                if self.estimate_next() <= target {
                    return Ok(None);
                }
            }
        }
        let plan = self.plan_compaction(trigger, overhead, budget)?;
        let skills_in_use = self.skills_after(plan.compacted(&self.view));
        sink(AgentEvent::CompactionStarted { trigger });
        let system_chars =
            eonyx_compact::request_size(&self.system_prompt(), &[], &self.tool_defs).chars;
        let next = self.shared_prefix_base(trigger, sink, cancel);
        let mut debug = |m: String| sink(AgentEvent::Debug(m));
        let input = eonyx_compact::CompactInput {
            model_name: &self.summarizer_model,
            view: &self.view,
            plan: &plan,
            cfg: &self.config.compaction,
            focus,
            trigger,
            estimator: &self.estimator,
            window: self.summarizer_window.unwrap_or(self.trigger.window),
            system_chars,
            next: next.as_ref(),
        };
        let record =
            eonyx_compact::compact(self.summarizer.as_ref(), input, &mut debug, cancel.clone())
                .await
                .map_err(|e| {
                    if cancel.is_cancelled() {
                        AgentError::Interrupted
                    } else {
                        AgentError::Compaction(e.to_string())
                    }
                })?;
        self.remember_quirks(sink);
        if record.summary.contains(eonyx_compact::CUT_SUMMARY_NOTE) {
            sink(AgentEvent::Warning(format!(
                "the summary was cut at the summarizer's output limit (compaction.summary_max_tokens = {}, or less when the context window had less room) even when asked for a shorter one; it was kept as is and may be incomplete",
                self.config.compaction.summary_max_tokens
            )));
        }
        let mut record = record;
        record.skills = skills_in_use;
        let saved = self.writer.append_compaction(record)?;
        self.view.apply(&saved);
        // The prefix changes here anyway: pick up memory saved since.
        if let Some(w) = self.refresh_memory() {
            sink(AgentEvent::Warning(w));
        }
        for w in self.reattach_skills(saved.skills.clone()) {
            sink(AgentEvent::Warning(w));
        }
        let after = self.estimate_next();
        if let Some(t) = self.trigger.tokens
            && let Some(msg) = self.guard.after_compaction(after, t)
        {
            sink(AgentEvent::Notice(msg));
        }
        sink(AgentEvent::Compacted(saved.clone()));
        Ok(Some(saved))
    }
}
