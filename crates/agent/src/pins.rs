//! The pins room (docs/compaction.md#pins): notes the user pins with
//! `/pin TEXT`, listed by `/pins`, removed by `/unpin N`. A pin is
//! announced at once as a message (so the model has it now, without the
//! prefix changing) and written verbatim in the pinned section of every
//! compaction from then on; an unpinned one leaves at the next. The
//! session file's `pin` records are the truth: the room is rebuilt from
//! the compaction in force and the records after it on open, rewind and
//! fork. The agent appends what the room hands it.

use eonyx_core::pin::{MAX_PIN_CHARS, MAX_PINS, Pin, PinEvent, PinRecord, pins_in_force};

/// Why a pin was not added or removed; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error("usage: /pin TEXT (a note eonyx keeps verbatim through every compaction)")]
    Empty,
    #[error(
        "cannot pin a note of {chars} characters: a pin holds at most {MAX_PIN_CHARS}; pin the part that must survive (recall finds the rest in the session)"
    )]
    TooLong { chars: usize },
    #[error("cannot pin more than {MAX_PINS} notes: /unpin N one of them first (/pins lists them)")]
    TooMany,
    #[error("usage: /unpin N (N as /pins numbers the pins)")]
    NotANumber,
    #[error("there is no pin {0}; /pins lists them")]
    Unknown(u32),
}

/// What a `/pin` or `/unpin` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinChange<'a> {
    /// `/pin TEXT`.
    Add(&'a str),
    /// `/unpin N` (N as typed).
    Remove(&'a str),
}

/// The pins in force in a session, and the next pin's number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    pins: Vec<Pin>,
    next_id: u32,
}

impl Pins {
    /// The pins of a session opened from its file: `base` (what the
    /// compaction in force kept) with the `pin` records after it applied.
    pub fn from_file(base: &[Pin], records: &[PinRecord]) -> Self {
        let last = base
            .iter()
            .map(|p| p.id)
            .chain(records.iter().map(|r| r.id))
            .max()
            .unwrap_or(0);
        Self {
            pins: pins_in_force(base, records),
            next_id: last + 1,
        }
    }

    /// The pins in force, in the order they were added.
    pub fn list(&self) -> &[Pin] {
        &self.pins
    }

    /// The record `change` appends (`seq` and `ts` for the writer to
    /// fill), or why there is none.
    pub fn record_for(&self, change: PinChange<'_>) -> Result<PinRecord, PinError> {
        match change {
            PinChange::Add(text) => {
                let text = text.trim();
                if text.is_empty() {
                    return Err(PinError::Empty);
                }
                let chars = text.chars().count();
                if chars > MAX_PIN_CHARS {
                    return Err(PinError::TooLong { chars });
                }
                if self.pins.len() >= MAX_PINS {
                    return Err(PinError::TooMany);
                }
                Ok(record(self.next_id.max(1), text, PinEvent::Added))
            }
            PinChange::Remove(n) => {
                let id: u32 = n.trim().parse().map_err(|_| PinError::NotANumber)?;
                let pin = self
                    .pins
                    .iter()
                    .find(|p| p.id == id)
                    .ok_or(PinError::Unknown(id))?;
                Ok(record(id, &pin.text, PinEvent::Removed))
            }
        }
    }

    /// Take a record that was appended.
    pub fn apply(&mut self, rec: &PinRecord) {
        self.pins = pins_in_force(&self.pins, [rec]);
        self.next_id = self.next_id.max(rec.id + 1);
    }
}

fn record(id: u32, text: &str, event: PinEvent) -> PinRecord {
    PinRecord {
        seq: 0,
        ts: String::new(),
        id,
        text: text.to_owned(),
        event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_numbered_checked_and_removed() {
        let mut pins = Pins::from_file(&[], &[]);
        let a = pins
            .record_for(PinChange::Add("  never touch migrations/ "))
            .unwrap();
        assert_eq!((a.id, a.text.as_str()), (1, "never touch migrations/"));
        pins.apply(&a);
        let b = pins
            .record_for(PinChange::Add("Grace owns retries"))
            .unwrap();
        pins.apply(&b);
        assert_eq!(pins.record_for(PinChange::Add(" ")), Err(PinError::Empty));
        let long = "x".repeat(MAX_PIN_CHARS + 1);
        assert_eq!(
            pins.record_for(PinChange::Add(&long)),
            Err(PinError::TooLong {
                chars: MAX_PIN_CHARS + 1
            })
        );
        assert_eq!(
            pins.record_for(PinChange::Remove("9")),
            Err(PinError::Unknown(9))
        );
        assert_eq!(
            pins.record_for(PinChange::Remove("x")),
            Err(PinError::NotANumber)
        );
        let gone = pins.record_for(PinChange::Remove("1")).unwrap();
        assert_eq!(gone.event, PinEvent::Removed);
        pins.apply(&gone);
        assert_eq!(pins.list().len(), 1);
        // Numbers are not reused while the session knows them.
        let c = pins.record_for(PinChange::Add("third")).unwrap();
        assert_eq!(c.id, 3);
        for i in 0..MAX_PINS {
            let r = pins.record_for(PinChange::Add(&format!("n{i}")));
            match r {
                Ok(r) => pins.apply(&r),
                Err(e) => {
                    assert_eq!(e, PinError::TooMany);
                    assert_eq!(pins.list().len(), MAX_PINS);
                    return;
                }
            }
        }
        panic!("no limit");
    }
}
