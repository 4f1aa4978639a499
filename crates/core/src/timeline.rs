//! Which records of a session file a rewind left out
//! (docs/session-format.md#rewind-records).
//!
//! The view as of `seq` M is the view right after the record with that
//! `seq` was written; a rewind record's own view is the view as of its
//! `to_seq`. So, reading a file from its end, a rewind to M skips every
//! record between M and itself (rewind records in that gap included: their
//! effect is part of what was skipped) and reading goes on before M. The
//! records a reader skips that way are *rewound*; the others form the
//! session's timeline. A `seq` fixes the position in the file (seqs grow
//! with it), so the gaps are computed from the rewind records alone.

use crate::message::Role;
use crate::record::{MessageRecord, RewindRecord};

/// The user turns of a run of messages (oldest first): a turn starts at a
/// user message that does not come right after another user message, so a
/// `!command`'s message and the line typed after it are one turn (as is a
/// line whose turn failed before the model answered, with the next one).
/// The store's `last_turns` counts turns the same way.
pub fn count_turns(records: &[MessageRecord]) -> usize {
    let mut prev_user = false;
    let mut turns = 0;
    for r in records {
        let user = r.message.role == Role::User;
        if user && !prev_user {
            turns += 1;
        }
        prev_user = user;
    }
    turns
}

/// The rewound `seq` ranges of one session file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Inclusive, disjoint, ascending.
    gaps: Vec<(u64, u64)>,
}

impl Timeline {
    /// From every rewind record of a file, in any order.
    pub fn from_rewinds<'a>(rewinds: impl IntoIterator<Item = &'a RewindRecord>) -> Self {
        let mut rewinds: Vec<(u64, u64)> = rewinds
            .into_iter()
            .filter(|r| r.is_effective())
            .map(|r| (r.seq, r.to_seq))
            .collect();
        rewinds.sort_unstable_by(|a, b| b.cmp(a));
        // Walk from the end: `cursor` is the highest seq not decided yet.
        let mut cursor = u64::MAX;
        let mut gaps = Vec::new();
        for (seq, to) in rewinds {
            if seq > cursor {
                // Inside a gap already skipped: its effect is skipped too.
                continue;
            }
            if to + 1 < seq {
                gaps.push((to + 1, seq - 1));
            }
            cursor = to;
        }
        gaps.reverse();
        Timeline { gaps }
    }

    /// Whether the record with this `seq` was left out by a rewind. A
    /// rewind record that is not rewound itself is in effect.
    pub fn is_rewound(&self, seq: u64) -> bool {
        let i = self.gaps.partition_point(|&(_, hi)| hi < seq);
        self.gaps.get(i).is_some_and(|&(lo, _)| lo <= seq)
    }

    /// Whether no record is rewound.
    pub fn is_linear(&self) -> bool {
        self.gaps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn consecutive_user_messages_are_one_turn() {
        let rec = |m: Message| MessageRecord {
            seq: 0,
            ts: String::new(),
            message: m,
        };
        let msgs = [
            rec(Message::user("one")),
            rec(Message::assistant("a")),
            rec(Message::user("!ls output")),
            rec(Message::user("two")),
            rec(Message::assistant("b")),
        ];
        assert_eq!(count_turns(&msgs), 2);
        assert_eq!(count_turns(&msgs[1..]), 1);
        assert_eq!(count_turns(&[]), 0);
    }

    fn rw(seq: u64, to_seq: u64) -> RewindRecord {
        RewindRecord {
            seq,
            ts: String::new(),
            to_seq,
        }
    }

    fn rewound(t: &Timeline, upto: u64) -> Vec<u64> {
        (1..=upto).filter(|s| t.is_rewound(*s)).collect()
    }

    #[test]
    fn a_rewind_leaves_out_what_lies_between_its_target_and_itself() {
        let t = Timeline::from_rewinds(&[rw(6, 3)]);
        assert_eq!(rewound(&t, 8), [4, 5]);
        assert!(!t.is_linear());
        // To 0: everything before.
        assert_eq!(rewound(&Timeline::from_rewinds(&[rw(4, 0)]), 5), [1, 2, 3]);
        // A rewind to the record just before it, or to itself or later,
        // leaves nothing out.
        assert!(Timeline::from_rewinds(&[rw(4, 3), rw(7, 7), rw(9, 12)]).is_linear());
    }

    #[test]
    fn two_rewinds_in_a_row_and_a_rewind_into_an_earlier_kept_part() {
        // 1..10, rewind to 5 at 11, 12..15, rewind to 13 at 16, 17..
        let t = Timeline::from_rewinds(&[rw(11, 5), rw(16, 13)]);
        assert_eq!(rewound(&t, 18), [6, 7, 8, 9, 10, 14, 15]);
        assert!(!t.is_rewound(11), "the first rewind is still in effect");
        // Then a rewind further back than both: both are rewound.
        let t = Timeline::from_rewinds(&[rw(11, 5), rw(16, 13), rw(18, 2)]);
        assert_eq!(rewound(&t, 19), (3..=17).collect::<Vec<_>>());
    }

    #[test]
    fn a_rewind_to_a_rewound_record_brings_back_the_view_it_had() {
        // 1..10, rewind to 4 at 11, 12, rewind to 8 at 13: the view as of 8
        // is 1..8, written before the first rewind.
        let t = Timeline::from_rewinds(&[rw(11, 4), rw(13, 8)]);
        assert_eq!(rewound(&t, 14), [9, 10, 11, 12]);
        assert!(t.is_rewound(11), "the first rewind is itself undone");
    }
}
