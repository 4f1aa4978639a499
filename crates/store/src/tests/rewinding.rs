//! Rewinds, the view as of a seq, forks and the file history
//! (docs/session-format.md#rewind-records, #forks, #file-history).

use std::collections::BTreeMap;

use eonyx_core::{Role, Undo};

use super::*;
use crate::RecallOptions;

/// What a session does, one step at a time.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A user message then an assistant one.
    Turn,
    /// A compaction keeping messages from this seq on.
    Compact(u64),
    Rewind(u64),
}

/// The view by definition: the view as of a record is the one before it
/// plus the record (a compaction replaces what it summarizes); a rewind's is
/// the view as of its target. Returns (compaction seq, message seqs).
fn by_definition(records: &[Record]) -> (Option<u64>, Vec<u64>) {
    // seq -> timeline (messages and compactions, as (seq, is_compaction,
    // first_kept)) right after it.
    let mut after: BTreeMap<u64, Vec<(u64, bool, u64)>> = BTreeMap::new();
    let mut now: Vec<(u64, bool, u64)> = Vec::new();
    for r in records {
        match r {
            Record::Message(m) => now.push((m.seq, false, 0)),
            Record::Compaction(c) => now.push((c.seq, true, c.first_kept_seq)),
            Record::Rewind(r) if r.to_seq < r.seq => {
                now = after
                    .range(..=r.to_seq)
                    .next_back()
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
            }
            _ => continue,
        }
        if let Some(seq) = r.seq() {
            after.insert(seq, now.clone());
        }
    }
    let comp = now.iter().rev().find(|(_, c, _)| *c).copied();
    let first_kept = comp.map_or(0, |(_, _, k)| k);
    let msgs = now
        .iter()
        .filter(|(s, c, _)| !*c && *s >= first_kept)
        .map(|(s, _, _)| *s)
        .collect();
    (comp.map(|(s, _, _)| s), msgs)
}

fn effective_seqs(store: &Store, sid: &SessionId) -> (Option<u64>, Vec<u64>) {
    let eff = store.load_effective(sid).unwrap();
    (
        eff.compaction.map(|c| c.seq),
        eff.messages.iter().map(|m| m.seq).collect(),
    )
}

fn play(store: &Store, ops: &[Op]) -> SessionId {
    let mut w = new_writer(store);
    for op in ops {
        match *op {
            Op::Turn => {
                w.append_message(&Message::user("question")).unwrap();
                w.append_message(&Message::assistant("answer")).unwrap();
            }
            Op::Compact(k) => {
                w.append_compaction(compaction(k)).unwrap();
            }
            Op::Rewind(to) => {
                w.append_rewind(to).unwrap();
            }
        }
    }
    w.id().clone()
}

#[test]
fn the_view_after_rewinds_and_compactions_is_the_view_as_of_the_target() {
    use Op::*;
    let cases: &[&[Op]] = &[
        // 1..6, rewind to 2 at 7, 8..9.
        &[Turn, Turn, Turn, Rewind(2), Turn],
        // Several rewinds in a row, then a turn.
        &[Turn, Turn, Turn, Rewind(4), Rewind(2), Rewind(6), Turn],
        // Across a compaction boundary: 1..6, compaction 7 (keeps 5..),
        // 8..9, rewind to 6 (before the compaction: no summary), 11..12.
        &[Turn, Turn, Turn, Compact(5), Turn, Rewind(6), Turn],
        // ... and to a point after it: the summary of 7 is in force.
        &[Turn, Turn, Turn, Compact(5), Turn, Turn, Rewind(9), Turn],
        // A rewind then a compaction that keeps messages from before it.
        &[Turn, Turn, Turn, Rewind(2), Turn, Turn, Compact(2), Turn],
        // A rewind to before an earlier rewind.
        &[Turn, Turn, Turn, Rewind(4), Turn, Rewind(1), Turn],
        // A rewind into what an earlier one left out brings it back.
        &[Turn, Turn, Turn, Rewind(2), Turn, Rewind(5), Turn],
        // Compactions on both sides of a rewind that drops the later one.
        &[
            Turn,
            Turn,
            Compact(3),
            Turn,
            Turn,
            Compact(8),
            Turn,
            Rewind(7),
            Turn,
        ],
        // Back to the start.
        &[Turn, Turn, Compact(3), Rewind(0), Turn],
    ];
    let t = t();
    for ops in cases {
        let sid = play(&t.store, ops);
        let log = t.store.read_all(&sid).unwrap();
        assert_eq!(
            effective_seqs(&t.store, &sid),
            by_definition(&log.records),
            "{ops:?}"
        );
        // The same from a store with no index (a fresh first open).
        let _ = std::fs::remove_file(t.root.join("data/index"));
        let fresh = Store::open(&t.root.join("data")).unwrap();
        assert_eq!(
            effective_seqs(&fresh, &sid),
            by_definition(&log.records),
            "{ops:?}"
        );
    }
}

#[test]
fn the_view_of_a_long_rewound_history_matches_its_definition() {
    // Many pseudo-random operations: the reader's jumps agree with the
    // definition everywhere.
    let t = t();
    let mut rng = fastrand::Rng::with_seed(27);
    for _ in 0..20 {
        let mut ops = Vec::new();
        let mut next = 1u64;
        for _ in 0..rng.usize(5..40) {
            let op = match rng.u8(0..10) {
                0..=5 => Op::Turn,
                6 | 7 => Op::Rewind(rng.u64(0..next)),
                _ => Op::Compact(rng.u64(1..next.max(2))),
            };
            next += match op {
                Op::Turn => 2,
                _ => 1,
            };
            ops.push(op);
        }
        let sid = play(&t.store, &ops);
        let log = t.store.read_all(&sid).unwrap();
        assert_eq!(
            effective_seqs(&t.store, &sid),
            by_definition(&log.records),
            "{ops:?}"
        );
    }
}

#[test]
fn last_turns_counts_user_turns_of_the_timeline_only() {
    use Op::*;
    let t = t();
    // 1..6, rewind to 2 at 7, 8..11: the timeline's turns are 1, 8, 10.
    let sid = play(&t.store, &[Turn, Turn, Turn, Rewind(2), Turn, Turn]);
    let seqs = |n| {
        t.store
            .last_turns(&sid, n)
            .unwrap()
            .iter()
            .map(|m| m.seq)
            .collect::<Vec<_>>()
    };
    assert_eq!(seqs(1), [10, 11]);
    assert_eq!(seqs(2), [8, 9, 10, 11]);
    assert_eq!(seqs(3), [1, 2, 8, 9, 10, 11]);
    assert_eq!(seqs(9), seqs(3), "fewer turns than asked: all of them");
    assert!(seqs(0).is_empty());
    let last = t.store.last_turns(&sid, 1).unwrap();
    assert_eq!(last[0].message.role, Role::User);
}

#[test]
fn a_rewind_must_point_before_itself() {
    let t = t();
    let mut w = session_with(&t.store, "one");
    assert!(matches!(
        w.append_rewind(2),
        Err(StoreError::InvalidRewind { to_seq: 2, .. })
    ));
    let r = w.append_rewind(0).unwrap();
    assert_eq!((r.seq, r.to_seq), (2, 0));
    assert_eq!(w.next_seq(), 3);
    assert!(t.store.load_effective(w.id()).unwrap().messages.is_empty());
    // The listing counts the rewind as activity and keeps every message.
    let listed = t.store.list().unwrap();
    assert_eq!(listed[0].message_count, 1);
}

fn with_undo(path: &str, before: Option<&str>, kept: bool) -> Message {
    let mut m = Message::tool_result("c1", "changed");
    m.undo = Some(Box::new(Undo {
        path: path.into(),
        before: before.map(str::to_owned),
        after: sha256_hex(b"after"),
        kept,
    }));
    m
}

#[test]
fn a_fork_copies_the_history_as_of_a_seq_and_leaves_the_original_alone() {
    use Op::*;
    let t = t();
    let sid = play(&t.store, &[Turn, Turn, Compact(3), Turn, Rewind(5), Turn]);
    let mut w = t.store.open_writer(&sid).unwrap();
    w.rename("original").unwrap();
    let kept = t.store.file_history(&sid).keep(b"before\n").unwrap();
    w.append_message(&with_undo("/w/a.txt", Some(&kept), true))
        .unwrap(); // seq 11
    drop(w);
    let original = std::fs::read(t.store.session_path(&sid)).unwrap();
    let log = t.store.read_all(&sid).unwrap();

    for at in [1, 5, 6, 9, 11] {
        let f = t.store.fork(&sid, Some(at)).unwrap();
        assert_eq!(f.seq, at);
        let flog = t.store.read_all(&f.id).unwrap();
        let h = flog.header.clone().unwrap();
        let from = h.forked_from.clone().unwrap();
        assert_eq!((from.id, from.seq, from.root), (sid.clone(), at, None));
        assert_eq!((h.cwd.as_str(), h.project.as_str()), ("/w/sub", "/w"));
        // The fork's view is the original's view as of `at`.
        let upto: Vec<Record> = log
            .records
            .iter()
            .filter(|r| r.seq().is_some_and(|s| s <= at))
            .cloned()
            .collect();
        assert_eq!(
            effective_seqs(&t.store, &f.id),
            by_definition(&upto),
            "at {at}"
        );
        // Renames are not copied: the fork has its own title.
        assert!(!flog.records.iter().any(|r| matches!(r, Record::Title(_))));
        assert_ne!(h.title, "original");
    }
    // The fork of the last record gets the kept content its undo names.
    let f = t.store.fork(&sid, None).unwrap();
    assert_eq!(f.seq, 11);
    assert_eq!(
        t.store.file_history(&f.id).get(&kept).unwrap().as_deref(),
        Some(&b"before\n"[..])
    );
    // A fork of a fork names the first session as its root, whose id is
    // the prompt-cache key of them all.
    let g = t.store.fork(&f.id, Some(3)).unwrap();
    let gh = t.store.read_all(&g.id).unwrap().header.unwrap();
    assert_eq!(gh.forked_from.as_ref().unwrap().root.as_ref(), Some(&sid));
    assert_eq!(gh.cache_key(), &sid);
    // Titles keep counting: one per fork.
    let titles: Vec<String> = t
        .store
        .list()
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect();
    assert_eq!(titles.len(), 8);

    assert!(matches!(
        t.store.fork(&sid, Some(0)),
        Err(StoreError::InvalidFork { at: 0, .. })
    ));
    assert!(matches!(
        t.store.fork(&sid, Some(12)),
        Err(StoreError::InvalidFork { at: 12, .. })
    ));
    assert_eq!(
        std::fs::read(t.store.session_path(&sid)).unwrap(),
        original,
        "the original is byte-for-byte unchanged"
    );
    // No temporary file is left behind.
    let (_, ignored) = t.store.scan_sessions_dir().unwrap();
    assert!(ignored.is_empty(), "{ignored:?}");
}

#[test]
fn deleting_a_session_deletes_its_file_history() {
    let t = t();
    let w = session_with(&t.store, "one");
    let sid = w.id().clone();
    drop(w);
    let h = t.store.file_history(&sid);
    h.keep(b"old content").unwrap();
    assert!(h.dir().exists());
    t.store.delete(&sid).unwrap();
    assert!(!h.dir().exists());
}

#[test]
fn recall_finds_rewound_messages_and_marks_them() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("the port is 8443"))
        .unwrap(); // 1
    w.append_message(&Message::assistant("noted")).unwrap(); // 2
    w.append_message(&Message::user("no, the port is 9000"))
        .unwrap(); // 3
    w.append_message(&Message::assistant("noted 9000")).unwrap(); // 4
    w.append_rewind(2).unwrap(); // 5
    w.append_message(&Message::user("what port again?"))
        .unwrap(); // 6
    let sid = w.id().clone();
    drop(w);
    let sessions = [sid.clone()];
    let found = |exclude_from| {
        let r = recall(
            &t.store,
            "port",
            RecallOptions {
                sessions: &sessions,
                exclude_from: Some((&sid, exclude_from)),
                limit: 10,
            },
        );
        let hits: Vec<(u64, bool)> = r.hits.iter().map(|h| (h.record.seq, h.rewound)).collect();
        (hits, r.total)
    };
    // The request carries 1.. (no compaction): only the rewound message
    // is not in it, so only it is returned, marked.
    assert_eq!(found(1), (vec![(3, true)], 1));
    // With the request starting at 6: 1 is summarized away, 3 rewound.
    assert_eq!(found(6), (vec![(3, true), (1, false)], 2));
}
