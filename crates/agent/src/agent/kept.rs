//! What eonyx keeps verbatim for the user through every compaction: the
//! user's pins (the room is [`crate::pins`]; here only appending what it
//! hands back) and `## What the user said`, rebuilt from the session file
//! at each compaction (docs/compaction.md#what-the-user-said), never from
//! an earlier summary.

use eonyx_compact::{RequestSize, Said};
use eonyx_core::pin::{Pin, PinEvent, pin_notice, unpin_notice};
use eonyx_core::{CompactionRecord, Message};

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
    /// the session file, within `compaction.user_words_tokens` (the
    /// section is `None` when the budget is 0 or the user said nothing
    /// there). The records stay with it, so the section can be made
    /// smaller once the summary's size is known ([`Agent::keep_users_words`]).
    pub(super) fn said_at(&self, boundary: u64) -> Result<UserSaid, AgentError> {
        let budget = eonyx_compact::user_words_budget(
            &self.config.compaction,
            self.compaction.trigger.window,
        );
        if budget == 0 || !self.writer.is_on_disk() {
            return Ok(UserSaid::default());
        }
        let records = self
            .store
            .user_messages_before(self.session_id(), boundary)?;
        let said = eonyx_compact::user_words(&records, budget, &self.compaction.estimator);
        Ok(UserSaid { records, said })
    }

    /// Put the pins in force and what the user said into a compaction's
    /// `record`, counting them in its `tokens_after`. The section never
    /// takes the request past the trigger: when the summary and the kept
    /// turns leave less room than its budget, it is rebuilt smaller (the
    /// newest and the oldest still first), and left out when there is
    /// almost none.
    pub(super) fn keep_users_words(&self, record: &mut CompactionRecord, said: UserSaid) {
        let est = &self.compaction.estimator;
        let tokens = |chars: usize| est.tokens_for(RequestSize::new(chars, 0));
        record.pins = self.pins.list().to_vec();
        record.tokens_after += tokens(eonyx_core::pin::pinned_pins(&record.pins).chars().count());
        let size = |s: &Said| tokens(s.words.text.chars().count() + 2);
        let trigger = &self.compaction.trigger;
        let room = trigger
            .ceiling()
            .saturating_sub(record.tokens_after + trigger.window / 50);
        let said = match said.said {
            Some(s) if size(&s) > room => (room >= MIN_SAID_TOKENS)
                .then(|| eonyx_compact::user_words(&said.records, room, est))
                .flatten(),
            other => other,
        };
        record.tokens_after += said.as_ref().map_or(0, size);
        record.user_words = said.map(|s| Box::new(s.words));
    }
}

/// Below this much room a compaction keeps no `## What the user said`
/// (only with windows too small to hold it next to the kept turns).
const MIN_SAID_TOKENS: u64 = 64;

/// What the user said before a compaction's boundary: the records read
/// from the file, and the section built from them ([`Agent::said_at`]).
#[derive(Debug, Default)]
pub(super) struct UserSaid {
    records: Vec<eonyx_core::MessageRecord>,
    pub said: Option<Said>,
}

impl UserSaid {
    /// The line the summarizer is told ([`Said::note`]).
    pub fn note(&self) -> Option<&str> {
        self.said.as_ref().map(|s| s.note.as_str())
    }
}
