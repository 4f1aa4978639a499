//! Benchmarks of the compaction hot paths, each against a naive full rescan
//! measured in the same run. Prints `BENCH|measure|ours|baseline|ratio|goal`.
//!
//! `EONYX_BENCH_SCALE` (default 1) multiplies the history size.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use eonyx_compact::{ContextView, Estimator, RequestSize, plan, request_size};
use eonyx_core::{CompactionConfig, Message, MessageRecord, SystemPrompt, ToolCall, ToolDef};
use eonyx_tests::bench::{self, median_within};

fn line(measure: &str, ours: Duration, base: Duration, goal: &str) {
    println!("{}", bench::Line::timed(measure, ours, base, goal));
}

/// A history of `n` messages: user turns with tool exchanges and answers.
fn history(n: usize, result_chars: usize) -> Vec<MessageRecord> {
    let mut out = Vec::with_capacity(n);
    let mut seq = 0u64;
    let mut push = |out: &mut Vec<MessageRecord>, m: Message| {
        seq += 1;
        out.push(MessageRecord {
            seq,
            ts: "2026-07-05T09:15:00Z".into(),
            message: m,
        });
    };
    let mut i = 0;
    while out.len() < n {
        push(
            &mut out,
            Message::user(format!("request {i}: please look at this")),
        );
        for k in 0..3 {
            let id = format!("c{i}_{k}");
            let mut a = Message::assistant("");
            a.tool_calls.push(ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": format!("src/f{k}.rs")}),
            });
            push(&mut out, a);
            push(&mut out, Message::tool_result(id, "x".repeat(result_chars)));
        }
        push(&mut out, Message::assistant(format!("answer {i}: done")));
        i += 1;
    }
    out.truncate(n);
    out
}

fn main() {
    let s = bench::scale();
    let cfg = CompactionConfig::default();
    let est = Estimator::new(4.0, 4096);
    let system = SystemPrompt {
        stable: "base instructions ".repeat(500),
        suffix: "Current date (UTC): 2026-07-05".into(),
    };
    let tools: Vec<ToolDef> = (0..4)
        .map(|i| ToolDef {
            name: format!("tool{i}"),
            description: "does things ".repeat(20),
            parameters: serde_json::json!({"type": "object"}),
        })
        .collect();
    let budget = Duration::from_millis(1500);

    // Planning over a 100,000-message history (× scale).
    let n = 100_000 * s;
    let mut view = ContextView::new(&cfg, 16 * 1024);
    for r in history(n, 200) {
        view.push(r);
    }
    let ours = median_within(budget, || {
        plan(&view, &cfg, &est, 50_000).map(|p| p.compacted_len)
    });
    let base = median_within(budget, || request_size(&system, &view.messages(), &tools));
    line(
        &format!("plan over {n} messages (vs one full rescan)"),
        ours,
        base,
        "< 20 ms",
    );

    // Worst case: the whole 100,000-message history is one turn (a long
    // tool loop), so the plan scans it all for a mid-turn cut.
    let mut view = ContextView::new(&cfg, 16 * 1024);
    let mut one_turn = history(n, 200);
    for r in one_turn.iter_mut().skip(1) {
        if r.message.role == eonyx_core::Role::User {
            r.message = Message::assistant("progress note");
        }
    }
    for r in one_turn {
        view.push(r);
    }
    // A budget just under the whole turn: the scan walks almost all of it.
    let nearly_all = est.tokens_for(view.size()) - 1_000;
    let ours = median_within(budget, || {
        plan(&view, &cfg, &est, nearly_all).map(|p| p.mid_turn)
    });
    let base = median_within(budget, || request_size(&system, &view.messages(), &tools));
    line(
        &format!("plan a mid-turn cut in one {n}-message turn (vs one full rescan)"),
        ours,
        base,
        "< 20 ms",
    );

    // Estimating a ~100k-token request incrementally (view totals + the
    // fixed parts) vs re-scanning every message.
    let mut view = ContextView::new(&cfg, 16 * 1024);
    for r in history(2_000 * s, 1_500) {
        view.push(r);
    }
    let fixed = RequestSize::new(system.chars(), 0)
        + RequestSize::new(tools.iter().map(ToolDef::chars).sum(), 0);
    let messages = view.messages();
    let tokens = est.estimate(&(fixed + view.size()));
    let ours = median_within(budget, || est.estimate(&(fixed + black_box(&view).size())));
    let base = median_within(budget, || {
        est.estimate(&request_size(&system, black_box(&messages), &tools))
    });
    line(
        &format!(
            "estimate a {}k-token request (incremental vs rescan)",
            tokens / 1000
        ),
        ours,
        base,
        "< 1 ms",
    );
}
