//! Provider-native compaction in the agent (docs/compaction.md#native-compaction):
//! a native result that another model or server made is replaced with
//! eonyx's own summary of the same history. The room is [`crate::native`]:
//! it asks the provider (composed in `compaction.rs`) and reads back what
//! the replacement summarizes; here the agent composes it with its
//! summarizer and the saved compaction.

use eonyx_core::provider::CancellationToken;

use super::Agent;
use super::compaction::summarize_with;
use crate::error::AgentError;
use crate::events::AgentEvent;

impl Agent {
    /// A native compaction made by another model or wire (before `/model`)
    /// is never sent: eonyx's own summary of that history replaces it
    /// first (docs/compaction.md#native-compaction).
    pub(super) async fn drop_stale_native(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let stale = self.view.native().is_some_and(|n| {
            !crate::native::applies(
                n,
                &self.config.model,
                self.models.provider.quirks().responses_api,
                self.inherit.model_flag.is_none(),
            )
        });
        if stale {
            self.replace_native(
                "the conversation was compacted natively by another model",
                cancel,
            )
            .await?;
        }
        Ok(())
    }

    /// Replace the view's native compaction with eonyx's own summary of
    /// the same history (the provider's result is only for its model, or
    /// the server refused it): the messages it covered are read back from
    /// the session file ([`crate::native::replacement`]) and summarized
    /// with the transcript summarizer; `why` is said once.
    pub(super) async fn replace_native(
        &mut self,
        why: &str,
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
        self.events.send(AgentEvent::Warning(format!(
            "{why}; writing eonyx's own summary of that history before the next request"
        )));
        let log = self.store.read_all(self.session_id())?;
        let cfg = &self.config;
        let mut r =
            crate::native::replacement(log, &cfg.compaction, cfg.tools.output_cap_bytes, boundary);
        let mut record = match r.stand_in(shown) {
            Some(record) => record,
            None => {
                let input = eonyx_compact::CompactInput {
                    view: &r.view,
                    plan: &r.plan,
                    focus: None,
                    trigger: r.trigger,
                    next: None,
                    ..self.compact_input(&r.plan, r.trigger, None, None)
                };
                let record =
                    summarize_with(self.models.summarizer.as_ref(), input, &self.events, cancel)
                        .await?;
                self.remember_quirks();
                record
            }
        };
        record.skills = self.prompt.skills_in_use.clone();
        let said = self.said_at(boundary)?;
        self.save_compaction(record, said)?;
        Ok(())
    }
}
