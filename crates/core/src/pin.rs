//! Pins' shared vocabulary (docs/compaction.md#pins): the `pin` record of a
//! session file, a pin as a compaction keeps it, the notices a pin and an
//! unpin are announced with, and the limits. Adding and removing them is
//! the agent's pins room.

use serde::{Deserialize, Serialize};

/// At most this many pins are in force at once.
pub const MAX_PINS: usize = 20;

/// A pin holds at most this many characters.
pub const MAX_PIN_CHARS: usize = 2000;

/// Whether a `pin` record adds a pin or removes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PinEvent {
    Added,
    Removed,
}

/// One `pin` line of a session file (docs/session-format.md#pin-records).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRecord {
    pub seq: u64,
    pub ts: String,
    /// The pin's number in its session (1, 2, 3…; `/pins` shows it,
    /// `/unpin N` takes it).
    pub id: u32,
    pub text: String,
    pub event: PinEvent,
}

/// A pin in force, as a compaction record keeps it (`pins`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub id: u32,
    pub text: String,
}

/// The heading the pins start with in the pinned section.
pub const PINNED_PINS_HEADING: &str = "## Pinned by the user (kept verbatim by eonyx)";

/// The pinned section's part for `pins` (empty when there are none).
pub fn pinned_pins(pins: &[Pin]) -> String {
    if pins.is_empty() {
        return String::new();
    }
    let mut s = PINNED_PINS_HEADING.to_owned();
    for p in pins {
        s.push_str(&format!("\n[pin {}] {}", p.id, p.text));
    }
    s
}

/// The message a pin is announced with at once, so the model has it
/// before the next compaction pins it.
pub fn pin_notice(text: &str) -> String {
    format!("[pinned by the user: {text}]")
}

/// The message an unpin is announced with; the pin leaves the pinned
/// section at the next compaction.
pub fn unpin_notice(text: &str) -> String {
    format!("[unpinned by the user: {text}]")
}

/// The start of both notices (they are eonyx's, not the user's words).
pub const NOTICE_PREFIXES: [&str; 2] = ["[pinned by the user: ", "[unpinned by the user: "];

/// The pins in force after `records` (oldest first) applied to `base`
/// (what the compaction in force kept), in the order they were added.
pub fn pins_in_force<'a>(
    base: &[Pin],
    records: impl IntoIterator<Item = &'a PinRecord>,
) -> Vec<Pin> {
    let mut pins = base.to_vec();
    for r in records {
        match r.event {
            PinEvent::Added => {
                if !pins.iter().any(|p| p.id == r.id) {
                    pins.push(Pin {
                        id: r.id,
                        text: r.text.clone(),
                    });
                }
            }
            PinEvent::Removed => pins.retain(|p| p.id != r.id),
        }
    }
    pins
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, id: u32, event: PinEvent) -> PinRecord {
        PinRecord {
            seq,
            ts: "t".into(),
            id,
            text: format!("note {id}"),
            event,
        }
    }

    #[test]
    fn a_pin_record_has_the_documented_shape() {
        let line = serde_json::to_string(&rec(7, 2, PinEvent::Added)).unwrap();
        assert_eq!(
            line,
            r#"{"seq":7,"ts":"t","id":2,"text":"note 2","event":"added"}"#
        );
        assert_eq!(
            pin_notice("never touch migrations/"),
            "[pinned by the user: never touch migrations/]"
        );
        assert!(pin_notice("x").starts_with(NOTICE_PREFIXES[0]));
        assert!(unpin_notice("x").starts_with(NOTICE_PREFIXES[1]));
    }

    #[test]
    fn pins_fold_over_the_base_in_order() {
        let base = [Pin {
            id: 1,
            text: "note 1".into(),
        }];
        let recs = [
            rec(3, 2, PinEvent::Added),
            rec(4, 1, PinEvent::Removed),
            rec(5, 3, PinEvent::Added),
        ];
        let ids: Vec<u32> = pins_in_force(&base, &recs).iter().map(|p| p.id).collect();
        assert_eq!(ids, [2, 3]);
        assert_eq!(
            pinned_pins(&pins_in_force(&[], &recs[..1])),
            format!("{PINNED_PINS_HEADING}\n[pin 2] note 2")
        );
        assert_eq!(pinned_pins(&[]), "");
    }
}
