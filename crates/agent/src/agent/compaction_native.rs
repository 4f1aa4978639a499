//! Provider-native compaction in the agent (docs/compaction.md#native-compaction):
//! asking the provider to compact when its wire offers it, and replacing a
//! native result that another model or server made with eonyx's own
//! summary of the same history, read back from the session file.

use eonyx_compact::{ContextView, Plan};
use eonyx_core::provider::CancellationToken;
use eonyx_core::{CompactionMode, CompactionRecord, CompactionTrigger, Record};

use super::Agent;
use super::compaction::summarize_with;
use crate::error::AgentError;
use crate::events::AgentEvent;

impl Agent {
    /// The provider compacts `plan` itself when `compaction.native` is
    /// `auto` and its wire offers it (docs/compaction.md#native-compaction).
    /// `Ok(None)`: not asked, or it failed (said once on stderr, and
    /// remembered when the server does not offer it): eonyx's own
    /// summarizer writes this compaction.
    pub(super) async fn native_compaction(
        &mut self,
        trigger: CompactionTrigger,
        focus: Option<&str>,
        plan: &Plan,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Option<CompactionRecord>, AgentError> {
        if crate::native::wire_to_ask(
            &self.config.model,
            &self.config.compaction,
            self.models.provider.as_ref(),
        )
        .is_none()
        {
            return Ok(None);
        }
        let next = self.build_request(cancel);
        let req = {
            let input = self.compact_input(plan, trigger, focus, None);
            match eonyx_compact::native_request(&next, &input) {
                Ok(r) => r,
                Err(_) => return Ok(None),
            }
        };
        let instructions = eonyx_compact::native_instructions(focus);
        let provider = self.models.provider.clone();
        let result = provider.compact(&req, &instructions).await;
        match result {
            Ok(outcome) => {
                self.compaction.native.succeeded();
                let input = self.compact_input(plan, trigger, focus, None);
                eonyx_compact::native_record(outcome, &input)
                    .map(Some)
                    .map_err(|e| AgentError::Compaction(e.to_string()))
            }
            Err(_) if cancel.is_cancelled() => Err(AgentError::Interrupted),
            Err(e) => {
                let (line, remember) = self.compaction.native.failed(&e, provider.quirks());
                if let Some(q) = remember {
                    provider.set_quirks(q);
                    self.remember_quirks(sink);
                }
                sink(AgentEvent::Warning(line));
                Ok(None)
            }
        }
    }

    /// A native compaction made by another model or wire (before `/model`)
    /// is never sent: eonyx's own summary of that history replaces it
    /// first (docs/compaction.md#native-compaction).
    pub(super) async fn drop_stale_native(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        if self.native_stale() {
            self.replace_native(
                "the conversation was compacted natively by another model",
                sink,
                cancel,
            )
            .await?;
        }
        Ok(())
    }

    /// Replace the view's native compaction with eonyx's own summary of
    /// the same history (the provider's result is only for its model, or
    /// the server refused it): the messages it covered are read back from
    /// the session file, from the last compaction of eonyx's own on, and
    /// summarized with the transcript summarizer; `why` is said once.
    pub(super) async fn replace_native(
        &mut self,
        why: &str,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let Some(shown) = self
            .view
            .native()
            .map(eonyx_core::NativeCompaction::display)
        else {
            return Ok(());
        };
        let boundary = self.view.first_kept_seq();
        sink(AgentEvent::Warning(format!(
            "{why}; writing eonyx's own summary of that history before the next request"
        )));
        let log = self.store.read_all(self.session_id())?;
        let timeline = log.timeline();
        let mut base: Option<CompactionRecord> = None;
        let mut native: Option<CompactionRecord> = None;
        let mut messages = Vec::new();
        for r in log.records {
            match r {
                Record::Message(m) if !timeline.is_rewound(m.seq) => messages.push(m),
                Record::Compaction(c) if !timeline.is_rewound(c.seq) => {
                    if c.native.is_some() {
                        native = Some(c);
                    } else {
                        base = Some(c);
                    }
                }
                _ => {}
            }
        }
        let from = base.as_ref().map_or(0, |b| b.first_kept_seq);
        messages.retain(|m| m.seq >= from && m.seq < boundary);
        let view = ContextView::from_effective(
            &self.config.compaction,
            self.config.tools.output_cap_bytes,
            base.as_ref(),
            messages,
        );
        let trigger = native
            .as_ref()
            .map_or(CompactionTrigger::Auto, |n| n.trigger);
        let plan = Plan {
            first_kept_seq: boundary,
            compacted_len: view.records().len(),
            mid_turn: native.as_ref().is_some_and(|n| n.mid_turn),
        };
        let record = if plan.compacted_len == 0 {
            // Nothing of it is left to read (the file holds only the
            // provider's result): what it showed stands in.
            let mut r = native.unwrap_or_else(|| empty_record(boundary, trigger));
            r.summary = shown;
            r.native = None;
            r.usage = None;
            r.mode = Some(CompactionMode::Transcript);
            r
        } else {
            let input = eonyx_compact::CompactInput {
                view: &view,
                plan: &plan,
                focus: None,
                trigger,
                next: None,
                ..self.compact_input(&plan, trigger, None, None)
            };
            let record =
                summarize_with(self.models.summarizer.as_ref(), input, sink, cancel).await?;
            self.remember_quirks(sink);
            record
        };
        let mut record = record;
        record.skills = self.prompt.skills_in_use.clone();
        let said = self.said_at(boundary)?;
        self.save_compaction(record, said, sink)?;
        Ok(())
    }
}

/// A compaction record at `boundary` with nothing in it yet.
fn empty_record(boundary: u64, trigger: CompactionTrigger) -> CompactionRecord {
    CompactionRecord::new(boundary, trigger, String::new())
}
