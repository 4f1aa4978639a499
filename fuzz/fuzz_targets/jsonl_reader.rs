//! The session-file reader on arbitrary bytes: never panics, the forward
//! and backward line readers agree, and every complete line is accounted
//! for exactly once (a record, a bad line or an unknown record).
#![no_main]

use std::io::Cursor;

use eonyx_store::SessionLog;
use eonyx_store::lines::{BackwardLines, for_each_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let log = SessionLog::parse(data);

    let mut forward = Vec::new();
    let (end, tail) = for_each_line(data, 0, |off, line| {
        forward.push((off, line.to_vec()));
        true
    })
    .unwrap();
    assert_eq!(end + tail, data.len() as u64);
    assert_eq!(tail, log.stats.torn_tail_bytes);
    assert_eq!(
        log.records.len() as u64 + log.stats.bad_lines + log.stats.unknown_lines,
        forward.len() as u64
    );

    let mut back = BackwardLines::new(Cursor::new(data), end);
    let mut backward = Vec::new();
    while let Some((off, line)) = back.prev_line().unwrap() {
        backward.push((off, line.to_vec()));
    }
    backward.reverse();
    assert_eq!(forward, backward);
});
