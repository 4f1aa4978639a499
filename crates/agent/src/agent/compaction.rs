//! Compaction steps: when to compact before a step, `/compact`, where to
//! cut, applying a summary written ahead (`ahead.rs`) or calling
//! eonyx-compact; the saved record then refreshes memory and the skills in
//! use.

use eonyx_compact::{Plan, PlanError};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, CompactionRecord, CompactionTrigger, Role};

use super::Agent;
use crate::error::AgentError;
use crate::events::{AgentEvent, Events};
use crate::native::Asked;

impl Agent {
    pub(super) async fn maybe_auto_compact(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        self.drop_stale_native(cancel).await?;
        let Some(trigger_tokens) = self.compaction.trigger.tokens else {
            return Ok(());
        };
        if !self.compaction.guard.allowed() {
            return Ok(());
        }
        let estimate = self.estimate_next();
        if estimate < trigger_tokens {
            return Ok(());
        }
        let target = eonyx_compact::request_target(&self.compaction.trigger);
        match self
            .compact_with(CompactionTrigger::Auto, None, target, cancel)
            .await
        {
            Ok(_) => Ok(()),
            Err(AgentError::Interrupted) => Err(AgentError::Interrupted),
            // A PreCompact hook skipped it (its event says why).
            Err(AgentError::HookBlocked { .. }) => Ok(()),
            Err(AgentError::NothingToCompact) => {
                // Everything that may go is already summarized; the guard
                // keeps this from repeating every step.
                if let Some(msg) = self
                    .compaction
                    .guard
                    .after_compaction(estimate, trigger_tokens)
                {
                    self.events.send(AgentEvent::Notice(msg));
                }
                Ok(())
            }
            Err(AgentError::Compaction(reason)) => {
                // A failed compaction deletes nothing; go on uncompacted if the
                // request still fits the window, else fail with the reason.
                let window = self.compaction.trigger.window;
                if self.estimate_next() < window {
                    self.events.send(AgentEvent::Warning(format!(
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
        cancel: &CancellationToken,
    ) -> Result<CompactionRecord, AgentError> {
        // The summary request carries the tools the next request would.
        self.mcp_ready(cancel).await?;
        self.drop_stale_native(cancel).await?;
        let target = eonyx_compact::request_target(&self.compaction.trigger);
        let record = self
            .compact_with(CompactionTrigger::Manual, focus, target, cancel)
            .await?
            .ok_or(AgentError::NothingToCompact)?;
        self.compaction.guard.reset();
        Ok(record)
    }

    /// Where to cut: keep the last `keep_turns` turns verbatim whenever
    /// they fit under the trigger; the lower aim (`budget`) only decides how
    /// far to cut when they do not. An overflow aims at the learned window.
    pub(super) fn plan_compaction(
        &self,
        trigger: CompactionTrigger,
        overhead: u64,
        budget: u64,
    ) -> Result<Plan, AgentError> {
        let planned = |budget| {
            eonyx_compact::plan(
                &self.view,
                &self.config.compaction,
                &self.compaction.estimator,
                budget,
            )
        };
        let keep_plan = match trigger {
            CompactionTrigger::Overflow => None,
            _ => {
                let ceiling = eonyx_compact::tail_budget(
                    self.compaction.trigger.ceiling(),
                    overhead,
                    &self.config.compaction,
                    self.compaction.trigger.window,
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
    /// conversation would send now), or why not when only
    /// the transcript summarizer can work: an overflow (that request is
    /// already too big) or a different `compaction.model` (another model
    /// has nothing of this conversation cached).
    /// `Err` says why not (for the debug line).
    pub(super) fn shared_prefix_base(
        &self,
        trigger: CompactionTrigger,
        cancel: &CancellationToken,
    ) -> Result<ChatRequest, &'static str> {
        let own_model = self.config.compaction.model.is_empty()
            || self.config.compaction.model == self.config.model_key;
        let why = if trigger == CompactionTrigger::Overflow {
            "the request overflowed the window"
        } else if !own_model {
            "compaction.model is a different model"
        } else {
            return Ok(self.build_request(cancel));
        };
        Err(why)
    }

    /// Tokens of everything in the request that is not a message: system
    /// prompt without the summary, tool definitions (for the planner's
    /// budget). `## What the user said` takes the room the summary and the
    /// kept turns leave (`Agent::keep_users_words`).
    pub(super) fn overhead_tokens(&self) -> u64 {
        let bare_system = self.bare_system_prompt();
        self.compaction
            .estimator
            .tokens_for(eonyx_compact::request_size(
                &bare_system,
                &[],
                &self.tools.defs,
            ))
    }

    /// Compact so that the whole next request aims at `target` tokens, then
    /// run the `PostCompact` and `SessionStart` (`compact`) hooks when a
    /// compaction was applied. `Ok(None)`: collapsing older tool results
    /// made enough room, no summary was needed.
    ///
    /// Without a focus, a summary written ahead that fits is applied first
    /// (no summarizer call); if the request is still past the trigger (for
    /// an overflow: past `target`) an ordinary compaction follows.
    pub(super) async fn compact_with(
        &mut self,
        trigger: CompactionTrigger,
        focus: Option<&str>,
        target: u64,
        cancel: &CancellationToken,
    ) -> Result<Option<CompactionRecord>, AgentError> {
        // The planner budgets the retained messages: take away what is not a
        // message (system prompt without the old summary, tool definitions)
        // and room for the new summary.
        let budget = |agent: &Self| {
            eonyx_compact::tail_budget(
                target,
                agent.overhead_tokens(),
                &agent.config.compaction,
                agent.compaction.trigger.window,
            )
        };
        // Old tool output is the usual reason a conversation fills up:
        // collapse older results first (the newest `keep_recent_results`
        // stay whole, the session file keeps them all) and summarize only if
        // that is not enough. `/compact` asks for a summary, so it skips this.
        if trigger != CompactionTrigger::Manual {
            let excess = self.estimate_next().saturating_sub(target);
            let chars = (excess as f64 * self.compaction.estimator.ratio()).ceil() as usize;
            let n = self.view.collapse_for_room(chars);
            if n > 0 {
                self.events.send(AgentEvent::Notice(format!(
                    "collapsed {n} older tool result(s) to make room; the session file keeps them whole"
                )));
                if self.estimate_next() <= target {
                    return Ok(None);
                }
            }
        }
        let mut plan = self.plan_compaction(trigger, self.overhead_tokens(), budget(self))?;
        if focus.is_none()
            && let Some(saved) = self.apply_draft(trigger, &plan)?
        {
            // A changed MCP tool list applies here too
            // (docs/mcp.md#when-the-tool-list-changes).
            self.mcp_refresh().await;
            let enough = match trigger {
                CompactionTrigger::Overflow => target,
                _ => self.compaction.trigger.ceiling(),
            };
            let again = if self.estimate_next() < enough {
                None
            } else {
                self.events.send(AgentEvent::Debug(
                    "compaction: the request is still past the trigger after applying the summary written ahead; compacting again".to_owned(),
                ));
                match self.plan_compaction(trigger, self.overhead_tokens(), budget(self)) {
                    Ok(p) => Some(p),
                    Err(AgentError::NothingToCompact) => None,
                    Err(e) => return Err(e),
                }
            };
            match again {
                Some(p) => plan = p,
                None => {
                    self.after_compaction();
                    if let Some(m) = self
                        .hook
                        .post_compact(trigger, &saved.summary, cancel)
                        .await
                    {
                        self.append(&m)?;
                    }
                    return Ok(Some(saved));
                }
            }
        }
        let saved = self.summarize(trigger, focus, plan, cancel).await?;
        if let Some(m) = self
            .hook
            .post_compact(trigger, &saved.summary, cancel)
            .await
        {
            self.append(&m)?;
        }
        Ok(Some(saved))
    }

    /// The compaction from the newest summary written ahead, when it builds
    /// on the latest compaction and its boundary is at or before `plan`'s:
    /// its text, with the facts and figures computed now; the messages
    /// between its boundary and `plan`'s stay verbatim.
    fn apply_draft(
        &mut self,
        trigger: CompactionTrigger,
        plan: &Plan,
    ) -> Result<Option<CompactionRecord>, AgentError> {
        let Some(draft) = self.compaction.draft.clone() else {
            return Ok(None);
        };
        let Some(at) = eonyx_compact::draft_applies(
            &draft,
            &self.view,
            self.compaction.base_seq,
            plan.first_kept_seq,
        ) else {
            self.events.send(AgentEvent::Debug(format!(
                "compaction: the summary written ahead (#{}) does not fit (it builds on another compaction, or its boundary #{} is not in the conversation or past #{}); summarizing now",
                draft.seq, draft.first_kept_seq, plan.first_kept_seq
            )));
            return Ok(None);
        };
        let skills_in_use = self.skills_after(at.compacted(&self.view));
        let input = self.compact_input(&at, trigger, None, None);
        let mut record = eonyx_compact::record_from_draft(&draft, input)
            .map_err(|e| AgentError::Compaction(e.to_string()))?;
        record.skills = skills_in_use;
        let said = self.said_at(record.first_kept_seq)?;
        self.save_compaction(record, said).map(Some)
    }

    /// What compacting `plan` works on: the summarizer's model and window,
    /// the view, the estimator, the system prompt's size, and `next`, the
    /// request the shared-prefix summary extends (`None`: the transcript).
    pub(super) fn compact_input<'a>(
        &'a self,
        plan: &'a Plan,
        trigger: CompactionTrigger,
        focus: Option<&'a str>,
        next: Option<&'a ChatRequest>,
    ) -> eonyx_compact::CompactInput<'a> {
        eonyx_compact::CompactInput {
            model_name: &self.models.summarizer_model,
            view: &self.view,
            plan,
            cfg: &self.config.compaction,
            focus,
            trigger,
            estimator: &self.compaction.estimator,
            window: self
                .models
                .summarizer_window
                .unwrap_or(self.compaction.trigger.window),
            system_chars: eonyx_compact::request_size(&self.system_prompt(), &[], &self.tools.defs)
                .chars,
            next,
            pinned: self.pinned(),
            said_note: None,
        }
    }

    /// Ask the summarizer for `plan` and save the compaction.
    async fn summarize(
        &mut self,
        trigger: CompactionTrigger,
        focus: Option<&str>,
        plan: Plan,
        cancel: &CancellationToken,
    ) -> Result<CompactionRecord, AgentError> {
        self.hook.pre_compact(trigger, focus, cancel).await?;
        let skills_in_use = self.skills_after(plan.compacted(&self.view));
        // What the user said, from the file, before the summarizer is
        // told which of it eonyx keeps (docs/compaction.md#what-the-user-said).
        let said = self.said_at(plan.first_kept_seq)?;
        self.events.send(AgentEvent::CompactionStarted { trigger });
        // The provider compacts it itself when `compaction.native` is
        // `auto` and its wire offers it (docs/compaction.md#native-compaction);
        // else, or when that fails, eonyx's own summarizer does.
        let req = crate::native::wire_to_ask(
            &self.config.model,
            &self.config.compaction,
            self.models.provider.as_ref(),
        )
        .and_then(|_| {
            let next = self.build_request(cancel);
            let input = self.compact_input(&plan, trigger, focus, None);
            eonyx_compact::native_request(&next, &input).ok()
        });
        let provider = self.models.provider.clone();
        let record = match self
            .compaction
            .native
            .ask(provider, req, focus, cancel)
            .await?
        {
            Asked::Compacted(outcome) => {
                let input = self.compact_input(&plan, trigger, focus, None);
                eonyx_compact::native_record(outcome, &input)
                    .map_err(|e| AgentError::Compaction(e.to_string()))?
            }
            Asked::Own { line, remember } => {
                if remember {
                    self.remember_quirks();
                }
                if let Some(line) = line {
                    self.events.send(AgentEvent::Warning(line));
                }
                self.own_summary(trigger, focus, &plan, said.note(), cancel)
                    .await?
            }
        };
        if record.summary.contains(eonyx_compact::CUT_SUMMARY_NOTE) {
            self.events.send(AgentEvent::Warning(format!(
                "the summary was cut at the summarizer's output limit (compaction.summary_max_tokens = {}, or less when the context window had less room); it was kept, marked, and may be incomplete",
                self.config.compaction.summary_max_tokens
            )));
        }
        let mut record = record;
        record.skills = skills_in_use;
        let saved = self.save_compaction(record, said)?;
        // And a changed MCP tool list (docs/mcp.md#when-the-tool-list-changes).
        self.mcp_refresh().await;
        self.after_compaction();
        Ok(saved)
    }

    /// eonyx's own summarizer for `plan` (shared-prefix, else transcript).
    async fn own_summary(
        &mut self,
        trigger: CompactionTrigger,
        focus: Option<&str>,
        plan: &Plan,
        said_note: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionRecord, AgentError> {
        let next = self
            .shared_prefix_base(trigger, cancel)
            .inspect_err(|why| {
                self.events.send(AgentEvent::Debug(format!(
                    "compaction: {why}; using the transcript summarizer"
                )))
            })
            .ok();
        let input = eonyx_compact::CompactInput {
            said_note,
            ..self.compact_input(plan, trigger, focus, next.as_ref())
        };
        let record =
            summarize_with(self.models.summarizer.as_ref(), input, &self.events, cancel).await?;
        self.remember_quirks();
        Ok(record)
    }

    /// Append a compaction record and start from it: the view, memory
    /// saved since, the skills in use; drafts before it no longer apply.
    /// `said` is what the user said before its boundary (`Agent::said_at`).
    pub(super) fn save_compaction(
        &mut self,
        mut record: CompactionRecord,
        said: super::kept::UserSaid,
    ) -> Result<CompactionRecord, AgentError> {
        // Every compaction, however its summary was written, pins the goal
        // and the plan as they stand (docs/compaction.md#what-is-pinned),
        // the user's pins and what the user said.
        self.pin(&mut record);
        self.keep_users_words(&mut record, said);
        let saved = self.writer.append_compaction(record)?;
        self.view.apply(&saved);
        self.compaction.base_seq = Some(saved.seq);
        self.compaction.draft = None;
        // The prefix changes here anyway: pick up memory saved since.
        if let Some(w) = self.refresh_memory() {
            self.events.send(AgentEvent::Warning(w));
        }
        for w in self.reattach_skills(saved.skills.clone()) {
            self.events.send(AgentEvent::Warning(w));
        }
        self.events
            .send(AgentEvent::Compacted(Box::new(saved.clone())));
        Ok(saved)
    }

    /// The loop breaker's count, once per compaction the trigger asked for.
    fn after_compaction(&mut self) {
        let after = self.estimate_next();
        if let Some(t) = self.compaction.trigger.tokens
            && let Some(msg) = self.compaction.guard.after_compaction(after, t)
        {
            self.events.send(AgentEvent::Notice(msg));
        }
    }
}

/// eonyx's own summarizer on `input`, its debug lines to `events`; a
/// failure after `cancel` is an interruption.
pub(super) async fn summarize_with(
    summarizer: &dyn eonyx_core::Provider,
    input: eonyx_compact::CompactInput<'_>,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<CompactionRecord, AgentError> {
    let mut debug = |m: String| events.send(AgentEvent::Debug(m));
    eonyx_compact::compact(summarizer, input, &mut debug, cancel.clone())
        .await
        .map_err(|e| {
            if cancel.is_cancelled() {
                AgentError::Interrupted
            } else {
                AgentError::Compaction(e.to_string())
            }
        })
}
