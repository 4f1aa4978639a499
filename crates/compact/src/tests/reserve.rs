//! The summarizer's reserve (docs/compaction.md#the-summarizers-reserve):
//! at the trigger the shared-prefix request fits, and a cut summary never
//! costs a second full request.

use eonyx_core::{ChatResponse, FinishReason, StreamEvent};

use super::*;

/// A reply cut at the output cap.
fn cut(text: &str) -> Step {
    Step::Reply {
        events: vec![StreamEvent::TextDelta(text.to_owned())],
        response: Box::new(ChatResponse {
            message: Message::assistant(text),
            usage: None,
            finish_reason: Some(FinishReason::Length),
        }),
    }
}

/// The conversation's next request, as the agent builds it.
fn next_request(v: &ContextView) -> ChatRequest {
    let mut req = ChatRequest::new(
        "m",
        SystemPrompt {
            stable: "You are eonyx.\n\n# Project context: AGENTS.md\nUse tabs.".into(),
            suffix: "Current date (UTC): 2026-07-05".into(),
        },
        v.messages(),
    );
    req.tools = vec![eonyx_core::ToolDef {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object"}),
    }];
    req
}

/// Turns of ~160 words (the issue's batch) until the next request is
/// estimated at `tokens` or just past it; the last user line unanswered.
fn history_at(tokens: u64, e: &Estimator) -> Hist {
    let mut h = Hist::new();
    let line = "the quick brown fox jumps over the lazy dog ".repeat(18);
    let mut t = 0;
    loop {
        h.user(&format!("turn {t}: {line}"));
        let v = view_of(&h, &cfg(), 0);
        let next = next_request(&v);
        if e.estimate(&request_size(&next.system, &next.messages, &next.tools)) >= tokens {
            return h;
        }
        h.say(&format!("answer {t}: {}", "words ".repeat(40)));
        t += 1;
    }
}

async fn compact_at(
    p: &dyn Provider,
    h: &Hist,
    c: &CompactionConfig,
    window: u64,
    debug: &mut Vec<String>,
) -> CompactionRecord {
    let e = est();
    let v = view_of(h, c, 0);
    let pl = plan(&v, c, &e, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let next = next_request(&v);
    let mut log = |m: String| debug.push(m);
    let input = CompactInput {
        model_name: "m",
        view: &v,
        plan: &pl,
        cfg: c,
        focus: None,
        trigger: CompactionTrigger::Auto,
        estimator: &e,
        window,
        system_chars: 100,
        next: Some(&next),
        pinned: crate::Pinned::Nothing,
        said_note: None,
    };
    compact(p, input, &mut log, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// One scripted summary for `h` compacted at `window`, which must take the
/// shared prefix: the requests sent and the debug lines.
async fn shared_at(
    h: &Hist,
    c: &CompactionConfig,
    window: u64,
) -> (Vec<eonyx_core::ChatRequest>, Vec<String>) {
    let p = scripted(vec![Ok(SUMMARY)]);
    let mut debug = Vec::new();
    let rec = compact_at(&p, h, c, window, &mut debug).await;
    assert_eq!(
        rec.mode,
        Some(eonyx_core::CompactionMode::SharedPrefix),
        "window {window}: {debug:?}"
    );
    (p.requests(), debug)
}

fn issue_cfg() -> CompactionConfig {
    CompactionConfig {
        threshold_percent: 80.0,
        buffer_tokens: 256,
        keep_turns: 3,
        ..cfg()
    }
}

#[tokio::test]
async fn at_the_trigger_of_a_small_window_the_summary_is_asked_on_the_shared_prefix() {
    let c = issue_cfg();
    for window in [2048u64, 4096] {
        let t = trigger(
            &c,
            &Limits {
                context_window: Some(window),
                max_input_tokens: None,
                max_output_tokens: Some(64),
            },
        );
        let at = t.tokens.unwrap_or(0);
        let h = history_at(at, &est());
        let (reqs, _) = shared_at(&h, &c, window).await;
        assert_eq!(reqs.len(), 1, "trigger {at}");
        // The summary gets at least the reserve's lower bound.
        let max = u64::from(reqs[0].max_tokens.unwrap_or(0));
        assert!(
            max >= min_shared_budget(&c, window),
            "window {window}: {max}"
        );
    }
}

#[tokio::test]
async fn the_newest_unanswered_line_is_left_out_of_the_shared_request() {
    let c = issue_cfg();
    let e = est();
    let h = history_at(1500, &e);
    let v = view_of(&h, &c, 0);
    let next = next_request(&v);
    let full = e.estimate(&request_size(&next.system, &next.messages, &next.tools));
    let pl = plan(&v, &c, &e, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let records = v.records();
    let cut = |unsent| SharedCut {
        first_kept: records.get(pl.compacted_len),
        kept: records.len() - pl.compacted_len,
        unsent,
    };
    let fits = |unsent, window| {
        shared_prefix_request(&next, cut(unsent), false, None, &c, window, &e).is_some()
    };
    // The (unanswered, kept) last line is left out: no cache holds it. At
    // the smallest window where the request fits that way, it would not
    // fit with the line.
    let window = (full..full + 3000)
        .find(|w| fits(1, *w))
        .unwrap_or_else(|| panic!("no window fits from {full}"));
    assert!(!fits(0, window));
    // The same shape with room to spare.
    for window in [window, 100_000] {
        let (reqs, debug) = shared_at(&h, &c, window).await;
        let r = &reqs[0];
        // The conversation up to its last answer, then the instruction.
        assert_eq!(r.messages.len(), next.messages.len());
        assert_eq!(
            r.messages[..next.messages.len() - 1],
            next.messages[..next.messages.len() - 1]
        );
        assert_eq!(r.cache_breakpoint, Some(next.messages.len() - 1));
        let ins = r
            .messages
            .last()
            .map(|m| m.content.text())
            .unwrap_or_default();
        assert!(ins.starts_with(eonyx_core::provider::SUMMARIZER_INSTRUCTION_PREFIX));
        assert!(debug.is_empty(), "{debug:?}");
    }
}

#[tokio::test]
async fn a_cut_transcript_summary_is_kept_with_its_note_and_not_asked_again() {
    let h = session(5, 1, 10);
    let v = view_of(&h, &cfg(), 0);
    let pl = plan(&v, &cfg(), &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let p = ScriptedProvider::new(vec![
        cut("## Active goal\nship it\n## Progress\nhalf"),
        Step::text(SUMMARY),
    ]);
    let rec = run_compact(&p, &v, pl, None, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.mode, Some(eonyx_core::CompactionMode::Transcript));
    assert_eq!(
        p.requests().len(),
        1,
        "a second transcript request was sent"
    );
    assert!(
        rec.summary
            .starts_with("## Active goal\nship it\n## Progress\nhalf")
    );
    assert!(rec.summary.contains(CUT_SUMMARY_NOTE), "{}", rec.summary);
}

#[tokio::test]
async fn a_cut_shared_summary_is_kept_with_its_note_and_not_asked_again() {
    let c = issue_cfg();
    let h = history_at(2000, &est());
    let p = ScriptedProvider::new(vec![cut("## Active goal\nhal"), Step::text(SUMMARY)]);
    let rec = compact_at(&p, &h, &c, 100_000, &mut Vec::new()).await;
    assert_eq!(rec.mode, Some(eonyx_core::CompactionMode::SharedPrefix));
    assert_eq!(p.requests().len(), 1, "the summary was asked for again");
    assert!(
        rec.summary.starts_with("## Active goal\nhal"),
        "{}",
        rec.summary
    );
    assert!(rec.summary.contains(CUT_SUMMARY_NOTE), "{}", rec.summary);
}

#[tokio::test]
async fn tool_results_are_never_left_out_of_the_shared_request() {
    // The conversation ends with a call and its (unsent) result: leaving
    // the result out would send a call without its result.
    let c = issue_cfg();
    let e = est();
    let mut h = history_at(1500, &e);
    h.say("let me look");
    h.tool("read_file", json!({"path": "a.rs"}), &"x".repeat(900));
    let v = view_of(&h, &c, 0);
    let next = next_request(&v);
    let pl = plan(&v, &c, &e, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let records = v.records();
    let cut = SharedCut {
        first_kept: records.get(pl.compacted_len),
        kept: records.len() - pl.compacted_len,
        unsent: 1,
    };
    for window in 1500..4500 {
        if let Some(r) = shared_prefix_request(&next, cut, false, None, &c, window, &e) {
            assert_eq!(r.messages.len(), next.messages.len() + 1, "window {window}");
            return;
        }
    }
    panic!("no window fits");
}
