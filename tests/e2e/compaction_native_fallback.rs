//! Provider-native compaction that fails (docs/compaction.md#native-compaction):
//! every failure falls back to eonyx's own summarizer in the same
//! compaction and the turn goes on; an unsupported answer is remembered in
//! the limits cache at once, an empty one after two in a row, a broken-off
//! or overloaded one never; a refused item is replaced by eonyx's own
//! summary of the same history.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::NativeCompact;

use crate::agent::{Fx, code};
use crate::compaction_native::{
    Wire, carried, compactions, fx, fx_tuned, limits, said, summarizer_requests,
};
use crate::util::{json_lines, stderr};

#[test]
fn a_404_falls_back_in_the_same_compaction_is_remembered_and_reset_limits_forgets_it() {
    let fx = fx(Wire::Responses, Some("auto"), NativeCompact::Absent);
    let o = fx.run(&["--json"], "one\ntwo\n/compact\nthree\n/compact\nfour\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = said(&o);
    assert_eq!(
        err.matches("native compaction failed").count(),
        1,
        "one line: {err}"
    );
    assert!(err.contains("--reset-limits"), "{err}");
    // The first compaction asked and fell back; the second did not ask.
    assert_eq!(fx.fake.native_calls().len(), 1);
    assert_eq!(summarizer_requests(&fx).len(), 2);
    assert!(compactions(&fx).iter().all(|c| c.get("native").is_none()));
    assert!(
        limits(&fx).contains("no_native_compaction"),
        "{}",
        limits(&fx)
    );
    // A later run remembers it.
    let o = fx.run(&["-c"], "five\n/compact\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.native_calls().len(), 1);
    // `eonyx config --reset-limits` forgets it: the next compaction asks.
    let o = fx.run(&["config", "--reset-limits"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let o = fx.run(&["-c"], "six\n/compact\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.native_calls().len(), 2);
}

/// Two compactions and four turns.
const TWO_COMPACTIONS: &str = "one\ntwo\n/compact\nthree\n/compact\nfour\n";

/// What a `--json` run of [`TWO_COMPACTIONS`] shows when native compaction
/// fell back.
struct FellBack {
    /// Named in the stderr line.
    why: &'static str,
    /// Stderr lines saying it fell back.
    lines: usize,
    /// Compact calls the server got.
    calls: usize,
    /// Whether `limits.json` remembers it for the base URL and model.
    remembered: bool,
}

/// Every turn answered, both compactions eonyx's own, and `f`.
fn assert_fell_back(fx: &Fx, o: &std::process::Output, case: &str, f: &FellBack) {
    assert_eq!(code(o), Some(0), "{case}: {}", stderr(o));
    let err = said(o);
    assert_eq!(
        err.matches("native compaction failed").count(),
        f.lines,
        "{case}: {err}"
    );
    assert!(err.contains(f.why), "{case}: {err}");
    let tail = if f.remembered {
        "--reset-limits"
    } else {
        "asks the provider again"
    };
    assert!(err.contains(tail), "{case}: {err}");
    assert_eq!(fx.fake.native_calls().len(), f.calls, "{case}");
    assert_eq!(summarizer_requests(fx).len(), 2, "{case}");
    let saved = compactions(fx);
    assert_eq!(saved.len(), 2, "{case}");
    assert!(saved.iter().all(|c| c.get("native").is_none()), "{case}");
    assert_eq!(
        limits(fx).contains("no_native_compaction"),
        f.remembered,
        "{case}: {}",
        limits(fx)
    );
    let turns = json_lines(&o.stdout)
        .iter()
        .filter(|e| e["type"] == "turn_completed")
        .count();
    assert_eq!(turns, 4, "{case}: every turn answered");
}

#[test]
fn an_unsupported_answer_falls_back_is_remembered_at_once_and_not_asked_again() {
    // SPEC 31: 404/405/501 and an error naming the endpoint or field as
    // unsupported, on both wires. The first compaction asks and falls back
    // in the same compaction; the second does not ask.
    let cases = [
        (Wire::Responses, NativeCompact::Absent, "HTTP 404"),
        (Wire::Responses, NativeCompact::Status(405), "HTTP 405"),
        (Wire::Responses, NativeCompact::Status(501), "HTTP 501"),
        (
            Wire::Responses,
            NativeCompact::NamesUnsupported,
            "not supported",
        ),
        (Wire::Anthropic, NativeCompact::Absent, "Extra inputs"),
        (Wire::Anthropic, NativeCompact::Status(404), "HTTP 404"),
        (
            Wire::Anthropic,
            NativeCompact::NamesUnsupported,
            "not supported",
        ),
    ];
    for (wire, serve, why) in cases {
        let fx = fx(wire, Some("auto"), serve);
        let o = fx.run(&["--json"], TWO_COMPACTIONS);
        let f = FellBack {
            why,
            lines: 1,
            calls: 1,
            remembered: true,
        };
        assert_fell_back(&fx, &o, &format!("{wire:?} {serve:?}"), &f);
    }
}

#[test]
fn an_empty_result_falls_back_each_time_and_two_in_a_row_are_remembered() {
    // SPEC 31, settled: one empty result (no compaction item, an empty or
    // null block) falls back and is not remembered; the second in a row is,
    // and no later compaction asks.
    let cases = [
        (Wire::Responses, "nothing usable"),
        (Wire::Anthropic, "empty or null"),
    ];
    for (wire, why) in cases {
        let fx = fx(wire, Some("auto"), NativeCompact::Empty);
        let o = fx.run(&["--json"], TWO_COMPACTIONS);
        let f = FellBack {
            why,
            lines: 2,
            calls: 2,
            remembered: true,
        };
        assert_fell_back(&fx, &o, &format!("{wire:?}"), &f);
        let err = said(&o);
        assert!(err.contains("asks the provider again"), "{wire:?}: {err}");
        // A later run does not ask again.
        let o = fx.run(&["-c"], "five\n/compact\n");
        assert_eq!(code(&o), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fx.fake.native_calls().len(), 2, "{wire:?}");
    }
}

#[test]
fn an_answer_that_breaks_off_is_retried_then_falls_back_and_is_not_remembered() {
    for wire in [Wire::Responses, Wire::Anthropic] {
        // One retry: a break is retried like other requests (two calls),
        // then the compaction falls back. A break is transient: the second
        // compaction asks again (two more calls), nothing is remembered.
        let fx = fx_tuned(wire, Some("auto"), NativeCompact::Breaks, |c| {
            c.set("retries", 1)
        });
        let o = fx.run(&["--json"], TWO_COMPACTIONS);
        let f = FellBack {
            why: "broke off",
            lines: 2,
            calls: 4,
            remembered: false,
        };
        assert_fell_back(&fx, &o, &format!("{wire:?}"), &f);
    }
}

#[test]
fn a_hanging_or_overloaded_endpoint_falls_back_each_time_and_is_not_remembered() {
    // A hang is bounded by the model's idle timeout; a 5xx/529 is retried
    // (here `retries = 0`). Both are transient: this compaction falls
    // back, the next one asks again, nothing goes to limits.json.
    let cases = [
        (Wire::Responses, NativeCompact::Hangs, "idle_timeout_secs"),
        (Wire::Anthropic, NativeCompact::Hangs, "idle_timeout_secs"),
        (Wire::Responses, NativeCompact::Status(500), "HTTP 500"),
        (Wire::Anthropic, NativeCompact::Status(529), "HTTP 529"),
    ];
    for (wire, serve, why) in cases {
        let fx = fx_tuned(wire, Some("auto"), serve, |c| c.set("idle_timeout_secs", 3));
        let o = fx.run(&["--json"], TWO_COMPACTIONS);
        let f = FellBack {
            why,
            lines: 2,
            calls: 2,
            remembered: false,
        };
        assert_fell_back(&fx, &o, &format!("{wire:?} {serve:?}"), &f);
    }
}

#[test]
fn a_refused_item_is_replaced_by_eonyx_own_summary_of_the_same_history_and_the_turn_goes_on() {
    for wire in [Wire::Responses, Wire::Anthropic] {
        let fx = fx(wire, Some("auto"), NativeCompact::RefusesItems);
        let o = fx.run(
            &["--json"],
            "one CODEWORD-ONE\ntwo\n/compact\nthree\n/compact\nfour\n",
        );
        assert_eq!(code(&o), Some(0), "{wire:?}: {}", stderr(&o));
        let err = said(&o);
        assert!(
            err.contains("refused the compacted part"),
            "{wire:?}: {err}"
        );
        // Refused once, then never sent again; the second compaction is
        // eonyx's own and does not ask the endpoint.
        assert_eq!(fx.fake.refusals(), 1, "{wire:?}");
        assert_eq!(fx.fake.native_calls().len(), 1, "{wire:?}");
        let summaries = summarizer_requests(&fx);
        assert_eq!(summaries.len(), 2, "{wire:?}");
        // The replacement summarized the history the item stood for.
        assert!(summaries[0].all_text().contains("CODEWORD-ONE"), "{wire:?}");
        let saved = compactions(&fx);
        assert_eq!(
            saved.len(),
            3,
            "{wire:?}: native, its replacement, the second"
        );
        assert!(saved[0].get("native").is_some());
        assert!(saved[1].get("native").is_none());
        assert_eq!(saved[1]["first_kept_seq"], saved[0]["first_kept_seq"]);
        let last = fx.agent_requests().pop().unwrap();
        assert!(carried(&last).is_empty(), "{wire:?}");
        assert!(
            last.system_text()
                .contains("# Summary of earlier conversation")
        );
        // Every turn got its answer.
        let events = json_lines(&o.stdout);
        assert_eq!(
            events
                .iter()
                .filter(|e| e["type"] == "turn_completed")
                .count(),
            4,
            "{wire:?}"
        );
    }
}
