//! Fuzz every record type of the session file (docs/session-format.md):
//! `session`, `title`, `model`, `message` (with its `blocked` marker),
//! `compaction` (its pinned goal, plan and jobs, and a provider's `native`
//! items), `summary_draft`, `rewind`, `goal` and `job`; and a `plan` call's
//! arguments. Never panics; a record that parses is written back and
//! parses to the same record; a plan that is accepted renders and counts
//! its steps within bounds.
#![no_main]

use eonyx_core::Record;
use eonyx_core::goal::{continuation_message, pinned_section};
use eonyx_core::job::{JobState, exit_notice};
use eonyx_core::plan::{MAX_STEPS, WorkPlan};
use eonyx_core::record::ParsedLine;
use libfuzzer_sys::fuzz_target;

/// The line types fuzzed: the body after `{"type":"T",` is the input, the
/// type chosen by the first byte (modulo the count: the seeds' first
/// bytes index this list, so new types go at its end).
const TYPES: [&str; 9] = [
    "goal",
    "model",
    "message",
    "compaction",
    "job",
    "session",
    "title",
    "rewind",
    "summary_draft",
];

fn round_trip(line: &[u8]) {
    let Ok(ParsedLine::Record(r)) = Record::parse_line(line) else {
        return;
    };
    let again = r.to_line();
    match Record::parse_line(again.as_bytes()) {
        Ok(ParsedLine::Record(r2)) => assert_eq!(r, r2, "written back: {again}"),
        other => panic!("a record written back does not parse: {again}: {other:?}"),
    }
    match &*r {
        Record::Goal(g) => {
            let _ = g.status_line();
            let _ = g.turns_left();
            let _ = continuation_message(g);
            let _ = pinned_section(Some(&g.pinned()), None);
        }
        Record::Compaction(c) => {
            let _ = c.pinned_section();
            if let Some(n) = &c.native {
                let _ = n.display();
                let _ = n.opaque_bytes();
                let _ = n.chars();
            }
        }
        Record::Job(j) => {
            assert_eq!(r.seq(), Some(j.seq));
            let _ = exit_notice(j.id, JobState::Running, 0, &j.command);
        }
        Record::Rewind(w) => {
            let _ = w.is_effective();
        }
        _ => {}
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&head, body)) = input.split_first() else {
        return;
    };
    if head & 0x80 != 0 {
        // A `plan` call's arguments.
        let Ok(args) = serde_json::from_slice::<serde_json::Value>(body) else {
            return;
        };
        if let Ok(plan) = WorkPlan::from_args(&args) {
            assert!(!plan.steps.is_empty() && plan.steps.len() <= MAX_STEPS);
            assert!(plan.completed() <= plan.steps.len());
            let _ = plan.progress();
            let _ = plan.render();
            let _ = pinned_section(None, Some(&plan));
        }
        return;
    }
    let kind = TYPES[usize::from(head) % TYPES.len()];
    let mut line = format!(r#"{{"type":"{kind}","#).into_bytes();
    line.extend_from_slice(body);
    round_trip(&line);
    // The same body through the general path (`type` not first).
    if let Some(rest) = body.strip_suffix(b"}") {
        let mut late = b"{".to_vec();
        late.extend_from_slice(rest);
        if rest.iter().any(|b| !b.is_ascii_whitespace()) {
            late.push(b',');
        }
        late.extend_from_slice(format!(r#""type":"{kind}"}}"#).as_bytes());
        round_trip(&late);
    }
});
