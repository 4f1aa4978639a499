//! Reading a session's timeline backwards from the end of the file
//! (docs/session-format.md#rewind-records): the messages and compaction
//! records of the view as of the end, newest first. A rewind record to M
//! makes the reader jump to just after the record with `seq` M, found by
//! a binary search on the file (seqs grow with the position), so what a
//! rewind left out is never read and resuming costs the same with or
//! without rewinds.
//!
//! Invariant: the records given are exactly those [`eonyx_core::timeline::Timeline`]
//! does not call rewound, in reverse file order (a test checks both agree).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use eonyx_core::goal::GoalRecord;
use eonyx_core::record::{ParsedLine, Record};
use eonyx_core::{CompactionRecord, MessageRecord, SummaryDraftRecord};
use serde::Deserialize;

use crate::lines::{BackwardLines, for_each_line};

/// One record of the timeline.
#[derive(Debug)]
pub(crate) enum Item {
    Message(MessageRecord),
    Compaction(CompactionRecord),
    /// A summary written ahead (docs/session-format.md#summary-draft-records).
    Draft(SummaryDraftRecord),
    /// A goal record (docs/session-format.md#goal-records).
    Goal(GoalRecord),
    /// A background job's start or end (docs/session-format.md#job-records).
    Job(eonyx_core::job::JobRecord),
    /// A pin added or removed (docs/session-format.md#pin-records).
    Pin(eonyx_core::pin::PinRecord),
}

/// Below this many bytes the binary search becomes a forward scan.
const SCAN_BYTES: u64 = 64 * 1024;

/// Call `f` with every record of the timeline that ends at `end` (just
/// after a `'\n'`), newest first, until it returns `false`. Damaged and
/// unknown lines are skipped.
pub(crate) fn walk_back(
    file: &mut File,
    end: u64,
    mut f: impl FnMut(Item) -> bool,
) -> io::Result<()> {
    let mut end = end;
    loop {
        // (offset of the rewind line, its target)
        let mut jump = None;
        {
            let mut back = BackwardLines::new(&mut *file, end);
            while let Some((off, line)) = back.prev_line()? {
                let Ok(ParsedLine::Record(r)) = Record::parse_line(line) else {
                    continue;
                };
                let go_on = match *r {
                    Record::Message(m) => f(Item::Message(m)),
                    Record::Compaction(c) => f(Item::Compaction(c)),
                    Record::SummaryDraft(d) => f(Item::Draft(d)),
                    Record::Goal(g) => f(Item::Goal(g)),
                    Record::Job(j) => f(Item::Job(j)),
                    Record::Pin(p) => f(Item::Pin(p)),
                    Record::Rewind(r) if r.is_effective() => {
                        jump = Some((off, r.to_seq));
                        break;
                    }
                    Record::Rewind(_)
                    | Record::Session(_)
                    | Record::Title(_)
                    | Record::Model(_) => true,
                };
                if !go_on {
                    return Ok(());
                }
            }
        }
        match jump {
            None => return Ok(()),
            Some((_, 0)) => return Ok(()),
            Some((at, to)) => end = end_of_seq(file, at, to)?,
        }
    }
}

/// The `seq` (and nothing else) of a line.
#[derive(Deserialize)]
struct SeqOnly {
    seq: Option<u64>,
}

fn seq_of(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<SeqOnly>(line).ok()?.seq
}

/// The offset just after the last record with a `seq` at most `seq`,
/// among the lines before `hi` (a line start). Every record from `hi` on
/// has a greater `seq`.
pub(crate) fn end_of_seq(file: &mut File, hi: u64, seq: u64) -> io::Result<u64> {
    // Invariants: `lo` is a line start and every record before it has a
    // seq <= `seq`; every record starting at or after `hi` has a greater one.
    let (mut lo, mut hi) = (0u64, hi);
    while hi - lo > SCAN_BYTES {
        let mid = lo + (hi - lo) / 2;
        let start = next_line_start(file, mid, hi)?;
        match first_seq_from(file, start, hi)? {
            Some((_, end, s)) if s <= seq => lo = end,
            Some((at, _, _)) => hi = at,
            // No record between `start` and `hi`: the answer lies before.
            None => hi = start.max(lo),
        }
    }
    let mut result = lo;
    file.seek(SeekFrom::Start(lo))?;
    for_each_line((&mut *file).take(hi - lo), lo, |off, line| {
        match seq_of(line) {
            Some(s) if s > seq => false,
            Some(_) => {
                result = off + line.len() as u64 + 1;
                true
            }
            None => true,
        }
    })?;
    Ok(result)
}

/// The first line start at or after `pos` (at most `hi`).
fn next_line_start(file: &mut File, pos: u64, hi: u64) -> io::Result<u64> {
    if pos == 0 {
        return Ok(0);
    }
    file.seek(SeekFrom::Start(pos - 1))?;
    let mut buf = vec![0u8; 8192];
    let mut at = pos - 1;
    while at < hi {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok((at + i as u64 + 1).min(hi));
        }
        at += n as u64;
    }
    Ok(hi)
}

/// The first line from `start` (a line start) to `hi` that has a `seq`:
/// its start, end (after the `'\n'`) and seq.
fn first_seq_from(file: &mut File, start: u64, hi: u64) -> io::Result<Option<(u64, u64, u64)>> {
    let mut found = None;
    file.seek(SeekFrom::Start(start))?;
    for_each_line(
        (&mut *file).take(hi.saturating_sub(start)),
        start,
        |off, line| match seq_of(line) {
            Some(s) => {
                found = Some((off, off + line.len() as u64 + 1, s));
                false
            }
            None => true,
        },
    )?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use eonyx_core::record::RewindRecord;
    use eonyx_core::timeline::Timeline;

    use super::*;

    /// A file of `n` records: messages (text `m<seq>`, padded to `pad`
    /// bytes), with rewinds at the given seqs.
    fn file_with(n: u64, rewinds: &[(u64, u64)], pad: usize) -> (tempfile::NamedTempFile, u64) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, r#"{{"type":"session","version":1,"id":"20260101T000000-00000000","title":"1","created":"2026-01-01T00:00:00Z","cwd":"/w","project":"/w"}}"#).unwrap();
        for seq in 1..=n {
            match rewinds.iter().find(|(s, _)| *s == seq) {
                Some((_, to)) => writeln!(
                    f,
                    r#"{{"type":"rewind","seq":{seq},"ts":"2026-01-01T00:00:00Z","to_seq":{to}}}"#
                )
                .unwrap(),
                None => {
                    if seq % 7 == 0 {
                        writeln!(f, r#"{{"type":"title","title":"t{seq}","ts":"x"}}"#).unwrap();
                    }
                    writeln!(
                        f,
                        r#"{{"type":"message","seq":{seq},"ts":"2026-01-01T00:00:00Z","role":"user","content":"m{seq}{}"}}"#,
                        "x".repeat(pad)
                    )
                    .unwrap()
                }
            }
        }
        f.flush().unwrap();
        let len = f.as_file().metadata().unwrap().len();
        (f, len)
    }

    fn walked(f: &tempfile::NamedTempFile, end: u64) -> Vec<u64> {
        let mut file = File::open(f.path()).unwrap();
        let mut seqs = Vec::new();
        walk_back(&mut file, end, |item| {
            if let Item::Message(m) = item {
                seqs.push(m.seq);
            }
            true
        })
        .unwrap();
        seqs.reverse();
        seqs
    }

    fn expected(n: u64, rewinds: &[(u64, u64)]) -> Vec<u64> {
        let recs: Vec<RewindRecord> = rewinds
            .iter()
            .map(|&(seq, to_seq)| RewindRecord {
                seq,
                ts: String::new(),
                to_seq,
            })
            .collect();
        let t = Timeline::from_rewinds(&recs);
        (1..=n)
            .filter(|s| !rewinds.iter().any(|(r, _)| r == s) && !t.is_rewound(*s))
            .collect()
    }

    #[test]
    fn the_walk_gives_the_timeline_for_nested_and_reviving_rewinds() {
        let cases: &[&[(u64, u64)]] = &[
            &[],
            &[(6, 3)],
            &[(6, 0)],
            &[(11, 5), (16, 13)],
            &[(11, 5), (16, 13), (18, 2)],
            &[(11, 4), (13, 8)],
            &[(5, 4), (9, 9), (12, 20)],
        ];
        for pad in [0, 3000] {
            for rw in cases {
                let (f, len) = file_with(20, rw, pad);
                assert_eq!(walked(&f, len), expected(20, rw), "{rw:?} pad {pad}");
            }
        }
    }

    #[test]
    fn the_jump_target_is_found_by_binary_search_in_a_long_file() {
        // ~6 MB: many probes; every target must land right after its record.
        let (f, len) = file_with(2000, &[(1500, 37), (1990, 1700)], 3000);
        assert_eq!(walked(&f, len), expected(2000, &[(1500, 37), (1990, 1700)]));
        let mut file = File::open(f.path()).unwrap();
        for target in [0, 1, 2, 7, 8, 999, 1499] {
            let end = end_of_seq(&mut file, len, target).unwrap();
            if target == 0 {
                assert!(end < 300, "right after the header: {end}");
                continue;
            }
            let mut b = BackwardLines::new(&mut file, end);
            let last = loop {
                let (_, line) = b.prev_line().unwrap().unwrap();
                if let Some(s) = seq_of(line) {
                    break s;
                }
            };
            assert_eq!(last, target);
        }
    }
}
