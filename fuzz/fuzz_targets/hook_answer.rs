//! Fuzz the reading of hooks' answers (docs/hooks.md#answers): up to three
//! hooks of one event, each an exit code, stdout (JSON or not) and stderr,
//! combined as a run combines them. Never panics; every run is reported;
//! a block or a deny always gives the reason a tool call must not run;
//! the permission is the strongest one given (deny over ask over allow).
#![no_main]

use eonyx_core::hooks::HookEvent;
use eonyx_hooks::Permission;
use libfuzzer_sys::fuzz_target;

/// Exit codes worth telling apart: 0 (read stdout), 2 (block), others.
const CODES: [i32; 4] = [0, 2, 1, 137];

fuzz_target!(|input: &[u8]| {
    let Some((&head, rest)) = input.split_first() else {
        return;
    };
    let event = HookEvent::ALL[usize::from(head) % HookEvent::ALL.len()];
    let claude_tool = (head & 0x80 != 0).then_some("Bash");
    // The answers are separated by NUL bytes: stdout, then an 0x01 and
    // stderr; the first byte of each picks its exit code.
    let answers: Vec<(i32, &[u8], &[u8])> = rest
        .split(|&b| b == 0)
        .take(3)
        .map(|a| {
            let (code, a) = match a.split_first() {
                Some((&c, a)) => (CODES[usize::from(c) % CODES.len()], a),
                None => (0, a),
            };
            match a.iter().position(|&b| b == 1) {
                Some(i) => (code, &a[..i], &a[i + 1..]),
                None => (code, a, &[][..]),
            }
        })
        .collect();
    let out = eonyx_hooks::read_answers(event, answers.iter().copied(), claude_tool);
    assert_eq!(out.runs.len(), answers.len());
    for (run, (code, ..)) in out.runs.iter().zip(&answers) {
        assert_eq!(run.exit_code, Some(*code));
    }
    if out.block.is_some() || out.permission == Some(Permission::Deny) {
        assert!(out.denied().is_some());
    } else {
        assert!(out.denied().is_none());
    }
    if out.permission.is_some() {
        assert_eq!(
            event,
            HookEvent::PreToolUse,
            "a permission only from PreToolUse"
        );
    }
    if let Some(u) = &out.updated_input {
        assert!(u.is_object(), "updatedInput is an object: {u}");
    }
    // An exit 2 always blocks.
    if answers.iter().any(|(c, ..)| *c == 2) {
        assert!(out.block.is_some());
    }
});
