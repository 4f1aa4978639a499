//! What eonyx keeps verbatim for the user through every compaction: the
//! user's pins (the room is [`crate::pins`]; here only appending what it
//! hands back) and `## What the user said`, rebuilt from the session file
//! at each compaction (docs/compaction.md#what-the-user-said), never from
//! an earlier summary.

use eonyx_compact::{RequestSize, Said};
use eonyx_core::pin::{Pin, PinEvent, pin_notice, unpin_notice};
use eonyx_core::{CompactionRecord, Message, Role};

use super::Agent;
use crate::error::{AgentError, UsageError};
use crate::pins::PinChange;

impl Agent {
    /// The user's pins in force, in the order they were added.
    pub fn pins(&self) -> &[Pin] {
        self.pins.list()
    }

    /// `/pin TEXT` or `/unpin N`: the notice first (so the model has it
    /// now, and a rewind to before it takes the pin back too), then the
    /// `pin` record. Returns the pin added or removed.
    pub fn pin_change(&mut self, change: PinChange<'_>) -> Result<Pin, AgentError> {
        let rec = self
            .pins
            .record_for(change)
            .map_err(|e| AgentError::Usage(UsageError::Pin(e)))?;
        let notice = match rec.event {
            PinEvent::Added => pin_notice(&rec.text),
            PinEvent::Removed => unpin_notice(&rec.text),
        };
        self.append(&Message::user(notice))?;
        let saved = self.writer.append_pin(rec)?;
        self.pins.apply(&saved);
        Ok(Pin {
            id: saved.id,
            text: saved.text,
        })
    }

    /// `## What the user said` for a compaction whose boundary is
    /// `boundary`: every user message of the timeline before it, read from
    /// the session file, within `compaction.user_words_tokens`. `None`
    /// when the budget is 0 or the user said nothing there.
    pub(super) fn said_at(&self, boundary: u64) -> Result<Option<Said>, AgentError> {
        let budget = eonyx_compact::user_words_budget(
            &self.config.compaction,
            self.compaction.trigger.window,
        );
        if budget == 0 || !self.writer.is_on_disk() {
            return Ok(None);
        }
        let records = self
            .store
            .user_messages_before(self.session_id(), boundary)?;
        Ok(eonyx_compact::user_words(
            &records,
            budget,
            &self.compaction.estimator,
        ))
    }

    /// What the next `## What the user said` may take, in tokens, for the
    /// planner: the budget, or less when the user has said less (the last
    /// section plus every user message since; nothing read from disk).
    pub(super) fn said_reserve(&self) -> u64 {
        let budget = eonyx_compact::user_words_budget(
            &self.config.compaction,
            self.compaction.trigger.window,
        );
        if budget == 0 {
            return 0;
        }
        let since: usize = self
            .view
            .records()
            .iter()
            .filter(|r| r.message.role == Role::User)
            .map(|r| r.message.content.text_chars() + 16)
            .sum();
        let chars = self.view.said().chars().count() + since;
        budget.min(
            self.compaction
                .estimator
                .tokens_for(RequestSize::new(chars, 0)),
        )
    }

    /// Put the pins in force and what the user said into a compaction's
    /// `record`, counting them in its `tokens_after`.
    pub(super) fn keep_users_words(&self, record: &mut CompactionRecord, said: Option<Said>) {
        record.pins = self.pins.list().to_vec();
        let chars = said.as_ref().map_or(0, |s| s.words.text.chars().count() + 2)
            + eonyx_core::pin::pinned_pins(&record.pins).chars().count();
        record.tokens_after += self
            .compaction
            .estimator
            .tokens_for(RequestSize::new(chars, 0));
        record.user_words = said.map(|s| s.words);
    }
}
