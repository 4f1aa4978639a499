//! Tests of the view, the plan, the summarizer request and `compact`, with a
//! scripted provider.

use std::sync::{Arc, Mutex};

use eonyx_core::provider::SUMMARIZER_SYSTEM_PREFIX;
use eonyx_core::{
    ChatRequest, CompactionConfig, CompactionRecord, CompactionTrigger, Message, MessageRecord,
    Provider, ProviderError, Role, SystemPrompt, ToolCall, Usage,
};
use eonyx_tests::{ScriptedProvider, Step};
use serde_json::json;

use crate::*;

// ---------- helpers ----------

struct Hist {
    seq: u64,
    recs: Vec<MessageRecord>,
}

impl Hist {
    fn new() -> Self {
        Self {
            seq: 0,
            recs: Vec::new(),
        }
    }
    fn push(&mut self, m: Message) -> MessageRecord {
        self.seq += 1;
        let r = MessageRecord {
            seq: self.seq,
            ts: String::new(),
            message: m,
        };
        self.recs.push(r.clone());
        r
    }
    fn user(&mut self, t: &str) -> MessageRecord {
        self.push(Message::user(t))
    }
    fn say(&mut self, t: &str) -> MessageRecord {
        self.push(Message::assistant(t))
    }
    /// An assistant message with one call and its result.
    fn tool(&mut self, name: &str, args: serde_json::Value, out: &str) -> [MessageRecord; 2] {
        let id = format!("call{}", self.seq + 1);
        let mut a = Message::assistant("");
        a.tool_calls.push(ToolCall {
            id: id.clone(),
            name: name.into(),
            arguments: args,
        });
        [self.push(a), self.push(Message::tool_result(id, out))]
    }
}

fn cfg() -> CompactionConfig {
    CompactionConfig::default()
}

fn view_of(h: &Hist, c: &CompactionConfig, cap: u64) -> ContextView {
    let mut v = ContextView::new(c, cap);
    for r in &h.recs {
        v.push(r.clone());
    }
    v
}

fn texts(v: &ContextView) -> Vec<String> {
    v.messages().iter().map(|m| m.content.text()).collect()
}

fn collapsed(v: &ContextView) -> usize {
    texts(v)
        .iter()
        .filter(|t| t.starts_with("[tool result collapsed"))
        .count()
}

/// A provider that answers from a script and records the requests.
fn scripted(replies: Vec<Result<&str, ProviderError>>) -> ScriptedProvider {
    ScriptedProvider::new(replies.into_iter().map(|r| match r {
        Ok(text) => Step::text(text),
        Err(e) => Step::Fail(e),
    }))
}

/// A provider that never answers (and ignores its cancel token).
fn hang() -> ScriptedProvider {
    ScriptedProvider::answering(|_| Step::Hang).named("hang")
}

const SUMMARY: &str = "## Active goal\nship it\n## Constraints and preferences\nnone\n## Progress\nnone\n## Decisions\nnone\n## Changed files\nnone\n## Open tasks and next steps\nnone\n## Critical context\nnone";

async fn run_compact(
    p: &dyn Provider,
    v: &ContextView,
    plan: Plan,
    focus: Option<&str>,
    cancel: CancellationToken,
) -> Result<CompactionRecord, CompactError> {
    let e = Estimator::new(4.0, 4096);
    compact(
        p,
        "m",
        v,
        plan,
        &cfg(),
        focus,
        CompactionTrigger::Manual,
        &e,
        100_000,
        1000,
        None,
        &mut |_| {},
        cancel,
    )
    .await
}

// ---------- view: truncation, collapse, determinism ----------

#[test]
fn tool_output_over_the_cap_is_truncated_visibly() {
    let mut h = Hist::new();
    h.user("go");
    h.tool("read_file", json!({"path": "big.txt"}), &"é".repeat(600)); // 1200 bytes
    let v = view_of(&h, &cfg(), 1001);
    let t = texts(&v);
    let out = &t[2];
    assert!(out.starts_with(&"é".repeat(500)));
    assert!(!out.starts_with(&"é".repeat(501)));
    assert!(out.contains("200 of 1200 bytes cut"), "{out}");
    assert!(out.contains("the full output is kept in the session"));
    // The record itself is untouched.
    assert_eq!(v.records()[2].message.content.text().len(), 1200);
    // Size counts what is sent.
    assert_eq!(
        v.size(),
        request_size(&SystemPrompt::default(), &v.messages(), &[]) + RequestSize::new(0, 0)
            - RequestSize::new(SystemPrompt::default().chars(), 0)
    );
}

impl std::ops::Sub for RequestSize {
    type Output = RequestSize;
    fn sub(self, o: RequestSize) -> RequestSize {
        RequestSize::new(self.chars - o.chars, self.images - o.images)
    }
}

fn collapse_cfg(budget: u64, keep_recent: u32) -> CompactionConfig {
    CompactionConfig {
        tool_result_budget_chars: budget,
        keep_recent_results: keep_recent,
        ..cfg()
    }
}

/// `n` tool results of exactly `chars` characters each (as sent).
fn results(n: usize, chars: usize) -> Hist {
    let mut h = Hist::new();
    h.user("start");
    for i in 0..n {
        // The tool message's size includes its call id.
        let id_len = format!("call{}", h.seq + 1).len();
        h.tool(
            "read_file",
            json!({"path": format!("f{i}")}),
            &"x".repeat(chars - id_len),
        );
    }
    h
}

#[test]
fn collapse_waits_until_the_budget_is_passed() {
    // keep_recent 2: with 5 results, 3 are counted: 3 × 1000 = 3000.
    let h = results(5, 1000);
    let v = view_of(&h, &collapse_cfg(3000, 2), 0);
    assert_eq!(v.collapsed_count(), 0, "at the budget exactly: no pass");
    let h = results(5, 1000);
    let v = view_of(&h, &collapse_cfg(2999, 2), 0);
    // One over: collapse oldest-first until ≤ 1499: two of the three go.
    assert_eq!(v.collapsed_count(), 2);
    assert_eq!(collapsed(&v), 2);
    let t = texts(&v);
    assert!(
        t[2].contains("`read_file` called with {\"path\":\"f0\"}"),
        "{}",
        t[2]
    );
    assert!(t[2].contains("returned 995 characters"), "{}", t[2]);
    assert!(t[2].contains("collapsed"));
    assert!(t[6].contains("xxxx"), "third result stays");
}

#[test]
fn collapse_for_room_frees_what_is_asked_and_spares_the_newest() {
    // Budget far away (no pass), keep_recent 2: 6 results, 4 collapsible.
    let h = results(6, 1000);
    let mut v = view_of(&h, &collapse_cfg(1_000_000, 2), 0);
    assert_eq!(v.collapsed_count(), 0);
    let before = v.size().chars;
    // Asking for 1500 characters takes the two oldest results.
    assert_eq!(v.collapse_for_room(1500), 2);
    assert!(before - v.size().chars >= 1500);
    // Asking for everything stops at the newest two, which stay whole.
    assert_eq!(v.collapse_for_room(usize::MAX), 2);
    assert_eq!(v.collapse_for_room(usize::MAX), 0);
    let t = texts(&v);
    assert_eq!(t.iter().filter(|m| m.contains("collapsed")).count(), 4);
    assert!(t[t.len() - 1].contains("xxxx") && t[t.len() - 3].contains("xxxx"));
    // prune = false: never collapses.
    let off = CompactionConfig {
        prune: false,
        ..collapse_cfg(1_000_000, 2)
    };
    let mut v = view_of(&h, &off, 0);
    assert_eq!(v.collapse_for_room(usize::MAX), 0);
}

#[test]
fn one_pass_halves_the_remainder() {
    // Budget 10_000, keep_recent 0, results of 1000: the pass runs when the
    // 11th result arrives and collapses until ≤ 5000 remain: 6 collapsed.
    let c = collapse_cfg(10_000, 0);
    let h = results(11, 1000);
    let mut v = ContextView::new(&c, 0);
    let mut passes = Vec::new();
    for r in &h.recs {
        if v.push(r.clone()).collapse_pass() {
            passes.push(v.records().len());
        }
    }
    assert_eq!(v.collapsed_count(), 6);
    assert_eq!(passes, vec![h.recs.len()]);
    // The next results do not trigger another pass until the budget is
    // passed again (5 more).
    let mut h2 = h;
    for i in 0..5 {
        let before = v.messages();
        let [a, b] = h2.tool("grep", json!({"pattern": i}), &"y".repeat(994));
        assert!(!v.push(a).collapse_pass());
        assert!(!v.push(b).collapse_pass());
        // Append-only between passes: the old request is a prefix.
        assert_eq!(v.messages()[..before.len()], before[..]);
    }
    let [a, b] = h2.tool("grep", json!({"pattern": "z"}), &"y".repeat(994));
    v.push(a);
    assert!(v.push(b).collapse_pass());
}

#[test]
fn recent_results_are_never_collapsed_nor_counted() {
    // keep_recent 3, budget 1: every result outside the newest 3 collapses;
    // the newest 3, however large, stay and do not count.
    let mut h = Hist::new();
    h.user("go");
    for i in 0..3 {
        h.tool("read_file", json!({"path": i}), &"z".repeat(50_000));
    }
    let v = view_of(&h, &collapse_cfg(1, 3), 0);
    assert_eq!(v.collapsed_count(), 0);
    h.tool("read_file", json!({"path": 3}), "small");
    let v = view_of(&h, &collapse_cfg(1, 3), 0);
    assert_eq!(v.collapsed_count(), 1);
    let t = texts(&v);
    assert!(t[2].starts_with("[tool result collapsed"));
    assert!(t[2].contains("50000 characters"));
    assert!(t.iter().filter(|t| t.len() == 50_000).count() == 2);
    assert_eq!(t.last().map(String::as_str), Some("small"));
    // Off switches: budget 0, prune false.
    let v = view_of(&h, &collapse_cfg(0, 0), 0);
    assert_eq!(v.collapsed_count(), 0);
    let mut c = collapse_cfg(1, 0);
    c.prune = false;
    assert_eq!(view_of(&h, &c, 0).collapsed_count(), 0);
}

#[test]
fn collapse_is_deterministic_under_replay_and_resume() {
    let c = collapse_cfg(4000, 2);
    let mut h = Hist::new();
    for t in 0..12 {
        h.user(&format!("turn {t}"));
        h.tool(
            "shell",
            json!({"command": format!("ls {t}")}),
            &"o".repeat(700 + t * 37),
        );
        h.say(&format!("done {t}"));
    }
    let a = view_of(&h, &c, 500);
    let b = ContextView::from_effective(&c, 500, None, h.recs.clone());
    assert!(a.collapsed_count() > 0);
    assert_eq!(a.messages(), b.messages());
    assert_eq!(a.size(), b.size());

    // After a compaction, the live view equals the resumed one.
    let rec = CompactionRecord {
        seq: 99,
        ts: String::new(),
        summary: "S".into(),
        first_kept_seq: h.recs[18].seq,
        trigger: CompactionTrigger::Auto,
        tokens_before: 0,
        tokens_after: 0,
        mid_turn: false,
        focus: None,
        facts: None,
        mode: None,
        skills: Vec::new(),
    };
    let mut live = a.clone();
    live.apply(&rec);
    let resumed = ContextView::from_effective(&c, 500, Some(&rec), h.recs.clone());
    assert_eq!(live.messages(), resumed.messages());
    assert_eq!(live.size(), resumed.size());
    assert_eq!(live.summary(), Some("S"));
    assert_eq!(live.records()[0].seq, h.recs[18].seq);
    assert_eq!(live.last_seq(), h.seq);
}

#[test]
fn tool_results_without_their_call_are_not_sent() {
    let mut h = Hist::new();
    h.push(Message::tool_result("gone", "orphan"));
    h.user("hi");
    let v = view_of(&h, &cfg(), 0);
    assert_eq!(texts(&v), vec!["hi"]);
    assert_eq!(v.size().chars, 2);
}

#[test]
fn usage_is_not_sent() {
    let mut h = Hist::new();
    let mut m = Message::assistant("a");
    m.usage = Some(Usage::default());
    h.push(m);
    let v = view_of(&h, &cfg(), 0);
    assert_eq!(v.messages()[0].usage, None);
}

// ---------- plan ----------

/// `turns` user turns, each with `tools` tool exchanges and a final answer.
fn session(turns: usize, tools: usize, out: usize) -> Hist {
    let mut h = Hist::new();
    for t in 0..turns {
        h.user(&format!("request {t}"));
        for i in 0..tools {
            h.tool(
                "read_file",
                json!({"path": format!("t{t}_{i}")}),
                &"r".repeat(out),
            );
        }
        h.say(&format!("answer {t}"));
    }
    h
}

fn est() -> Estimator {
    Estimator::new(4.0, 4096)
}

#[test]
fn plan_keeps_the_last_turns_verbatim() {
    let h = session(6, 2, 100);
    let v = view_of(&h, &cfg(), 0);
    let p = plan(&v, &cfg(), &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert!(!p.mid_turn);
    let kept = &v.records()[p.compacted_len..];
    assert_eq!(kept[0].message.content.text(), "request 3");
    assert_eq!(
        kept.iter().filter(|r| r.message.role == Role::User).count(),
        3
    );
    assert_eq!(p.first_kept_seq, kept[0].seq);
    assert_eq!(p.compacted(&v).len(), 18);
    // Nothing left to compact when only keep_turns turns remain.
    let h = session(3, 1, 10);
    let v = view_of(&h, &cfg(), 0);
    assert_eq!(
        plan(&v, &cfg(), &est(), u64::MAX),
        Err(PlanError::NothingToCompact)
    );
}

#[test]
fn keep_tokens_caps_the_tail_but_never_below_one_turn() {
    // Each turn ≈ 2 × (100 + ids) + small text ≈ 60 tokens at 4 chars/token.
    let h = session(6, 2, 100);
    let v = view_of(&h, &cfg(), 0);
    let turn_tokens = {
        let e = est();
        let recs = v.records();
        let start = recs.len() - 6;
        e.tokens_for(recs[start..].iter().fold(RequestSize::default(), |s, r| {
            s + RequestSize::of_message(&r.message)
        }))
    };
    let mut c = cfg();
    c.keep_tokens = turn_tokens * 2; // room for two turns, not three
    let p = plan(&v, &c, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        v.records()[p.compacted_len].message.content.text(),
        "request 4"
    );
    c.keep_tokens = 1; // smaller than any turn: still one turn kept
    let p = plan(&v, &c, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        v.records()[p.compacted_len].message.content.text(),
        "request 5"
    );
    assert!(!p.mid_turn);
}

#[test]
fn boundaries_never_split_tool_exchanges() {
    // Irregular histories; for every target the kept part starts at a user
    // message or right after a complete exchange, never with a tool result.
    let mut h = Hist::new();
    let mut x: u64 = 7;
    let mut rnd = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    for t in 0..40 {
        h.user(&format!("u{t}"));
        for _ in 0..rnd(4) {
            // Parallel calls: one assistant message, several results.
            let calls = 1 + rnd(3);
            let mut a = Message::assistant("");
            let base = h.seq;
            for c in 0..calls {
                a.tool_calls.push(ToolCall {
                    id: format!("c{base}_{c}"),
                    name: "grep".into(),
                    arguments: json!({"pattern": c}),
                });
            }
            h.push(a);
            for c in 0..calls {
                let out = "g".repeat(rnd(3000) as usize);
                h.push(Message::tool_result(format!("c{base}_{c}"), out));
            }
        }
        if rnd(2) == 0 {
            h.say("ok");
        }
    }
    let v = view_of(&h, &cfg(), 0);
    for target in [0u64, 10, 100, 300, 1000, 3000, 10_000, u64::MAX] {
        let Ok(p) = plan(&v, &cfg(), &est(), target) else {
            continue;
        };
        let recs = v.records();
        assert!(p.compacted_len > 0);
        if let Some(first) = recs.get(p.compacted_len) {
            assert_ne!(first.message.role, Role::Tool, "target {target}");
            if first.message.role != Role::User {
                assert!(p.mid_turn);
            }
        }
        // Every kept result's call is kept too.
        let kept = &recs[p.compacted_len..];
        for r in kept.iter().filter(|r| r.message.role == Role::Tool) {
            let id = r.message.tool_call_id.as_deref().unwrap_or("");
            assert!(
                kept.iter()
                    .any(|a| a.message.tool_calls.iter().any(|c| c.id == id))
            );
        }
    }
}

#[test]
fn an_oversized_current_turn_is_cut_after_a_complete_exchange() {
    let mut h = session(2, 0, 0);
    h.user("long task");
    for i in 0..10 {
        h.tool("read_file", json!({"path": i}), &"q".repeat(2000));
    }
    let v = view_of(&h, &cfg(), 0);
    // Budget ≈ 3 exchanges at 4 chars/token.
    let p = plan(&v, &cfg(), &est(), 1600).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.mid_turn);
    let kept = &v.records()[p.compacted_len..];
    assert_eq!(kept[0].message.role, Role::Assistant);
    assert_eq!(kept.len(), 6, "three complete exchanges fit");
    // A budget too small for any exchange compacts the whole turn.
    let p = plan(&v, &cfg(), &est(), 10).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.mid_turn);
    assert_eq!(p.compacted_len, v.records().len());
    assert_eq!(p.first_kept_seq, v.last_seq() + 1);
}

// ---------- summary request ----------

#[test]
fn summary_request_is_structured_and_bounded() {
    let mut h = Hist::new();
    h.user("Please fix the parser; never touch Cargo.lock.");
    h.tool(
        "read_file",
        json!({"path": "src/parse.rs"}),
        &"p".repeat(50_000),
    );
    h.say("Fixed.");
    let r = summary_request(None, &h.recs, None, &cfg(), "m1", 200_000, &est());
    assert!(r.system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX));
    assert!(r.temperature.is_some_and(|t| t <= 0.2));
    assert_eq!(r.max_tokens, Some(4096));
    assert!(r.tools.is_empty());
    assert_eq!(r.model, "m1");
    assert_eq!(r.messages.len(), 1);
    let u = r.messages[0].content.text();
    assert!(u.contains("never touch Cargo.lock"));
    assert!(u.contains("no previous summary"));
    assert!(u.contains("characters of this tool result cut for the summary"));
    for s in SECTIONS {
        assert!(r.system.text().contains(&format!("## {s}")));
    }
    // A small window: the request plus the answer fit in it.
    let r = summary_request(None, &h.recs, None, &cfg(), "m1", 2048, &est());
    let size = request_size(&r.system, &r.messages, &[]);
    let total = est().tokens_for(size) + u64::from(r.max_tokens.unwrap_or(0));
    assert!(total <= 2048, "{total}");
}

#[test]
fn incremental_summary_prompt_merges_the_previous_one() {
    let mut h = Hist::new();
    h.user("now use tabs");
    let prev = format!("{SUMMARY}\n\n{FACTS_HEADING}\nstuff");
    let r = summary_request(
        Some(&prev),
        &h.recs,
        Some("the parser"),
        &cfg(),
        "m",
        100_000,
        &est(),
    );
    let u = r.messages[0].content.text();
    assert!(u.contains("<previous-summary>\n## Active goal\nship it"));
    assert!(u.contains("Newer information wins"));
    assert!(!u.contains(FACTS_HEADING), "facts are merged mechanically");
    assert!(u.contains("focus on: the parser"));
}

#[test]
fn summary_request_snapshot() {
    let mut h = Hist::new();
    h.user("Rename `foo` to `bar` in src/lib.rs. Keep the public API.");
    h.tool(
        "grep",
        json!({"pattern": "foo", "path": "src"}),
        "src/lib.rs:3: fn foo()",
    );
    h.tool(
        "shell",
        json!({"command": "cargo test"}),
        "exit status: 0\nok",
    );
    h.say("Renamed; tests pass.");
    let r = summary_request(
        Some("## Active goal\nearlier goal"),
        &h.recs,
        Some("API"),
        &cfg(),
        "m",
        100_000,
        &est(),
    );
    insta::assert_snapshot!(format!(
        "model: {}\ntemperature: {:?}\nmax_tokens: {:?}\ntools: {}\n--- system ---\n{}\n--- user ---\n{}",
        r.model,
        r.temperature,
        r.max_tokens,
        r.tools.len(),
        r.system.text(),
        r.messages[0].content.text()
    ));
}

// ---------- compact ----------

#[tokio::test]
async fn facts_merge_across_two_compactions() {
    let c = cfg();
    let mut h = Hist::new();
    h.user("one");
    h.tool("read_file", json!({"path": "a.rs"}), "A");
    h.tool("shell", json!({"command": "make"}), "exit status: 2\nerror");
    for t in 0..3 {
        h.user(&format!("pad {t}"));
    }
    let mut v = view_of(&h, &c, 0);
    let p = scripted(vec![Ok(SUMMARY), Ok("## Active goal\nsecond")]);
    let pl = plan(&v, &c, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let rec = run_compact(&p, &v, pl, None, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(rec.summary.starts_with("## Active goal\nship it"));
    assert!(rec.summary.contains("- `a.rs`"));
    assert!(rec.summary.contains("`make` → exit status: 2"));
    assert_eq!(rec.trigger, CompactionTrigger::Manual);
    assert_eq!((rec.seq, rec.ts.as_str()), (0, ""));
    assert!(rec.tokens_after < rec.tokens_before || rec.tokens_before < 600);
    let mut rec = rec;
    rec.seq = h.seq + 1;
    h.seq += 1;
    v.apply(&rec);

    // Second round: new calls; old facts survive, newer status wins.
    for r in [
        h.tool("read_file", json!({"path": "b.rs"}), "B"),
        h.tool("shell", json!({"command": "make"}), "exit status: 0"),
    ] {
        for x in r {
            v.push(x);
        }
    }
    for t in 0..3 {
        v.push(h.user(&format!("more {t}")));
    }
    let pl = plan(&v, &c, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let rec2 = run_compact(&p, &v, pl, Some("files"), CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(rec2.summary.starts_with("## Active goal\nsecond"));
    assert!(
        rec2.summary.contains("- `a.rs`\n- `b.rs`"),
        "{}",
        rec2.summary
    );
    assert!(rec2.summary.contains("`make` → exit status: 0"));
    assert!(!rec2.summary.contains("exit status: 2"));
    assert_eq!(rec2.summary.matches(FACTS_HEADING).count(), 1);
    assert_eq!(rec2.focus.as_deref(), Some("files"));
    // The second summarizer call saw the first summary without its facts.
    let reqs = p.requests();
    let u = reqs[1].messages[0].content.text();
    assert!(u.contains("ship it") && !u.contains(FACTS_HEADING));
    let f = Facts::from_value(rec2.facts.as_ref());
    assert_eq!(f.read, vec!["a.rs", "b.rs"]);
}

#[tokio::test]
async fn summarizer_failures_return_errors_and_change_nothing() {
    let h = session(5, 1, 10);
    let v = view_of(&h, &cfg(), 0);
    let before = v.messages();
    let pl = || plan(&v, &cfg(), &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let p = scripted(vec![
        Err(ProviderError::Rejected {
            status: 400,
            message: "bad".into(),
        }),
        Ok("   "),
        Err(ProviderError::Cancelled),
    ]);
    let e = run_compact(&p, &v, pl(), None, CancellationToken::new()).await;
    assert!(matches!(
        e,
        Err(CompactError::Summarizer(ProviderError::Rejected { .. }))
    ));
    let msg = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("unchanged") && msg.contains("bad"), "{msg}");
    let e = run_compact(&p, &v, pl(), None, CancellationToken::new()).await;
    assert!(matches!(e, Err(CompactError::EmptySummary)));
    let e = run_compact(&p, &v, pl(), None, CancellationToken::new()).await;
    assert!(matches!(e, Err(CompactError::Cancelled)));
    assert_eq!(v.messages(), before);
}

#[tokio::test]
async fn cancellation_stops_a_hanging_summarizer() {
    let h = session(5, 1, 10);
    let v = view_of(&h, &cfg(), 0);
    let pl = plan(&v, &cfg(), &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let canceller = async move {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        c2.cancel();
    };
    let hang = hang();
    let (r, ()) = tokio::join!(run_compact(&hang, &v, pl.clone(), None, cancel), canceller);
    assert!(matches!(r, Err(CompactError::Cancelled)));
    // Already cancelled: no call at all.
    let p = scripted(vec![Ok(SUMMARY)]);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let r = run_compact(&p, &v, pl, None, cancel).await;
    assert!(matches!(r, Err(CompactError::Cancelled)));
    assert!(p.requests().is_empty());
}

#[tokio::test]
async fn mid_turn_compaction_repeats_the_turn_request() {
    let mut h = session(1, 0, 0);
    h.user("migrate every module to the new API");
    for i in 0..6 {
        h.tool(
            "read_file",
            json!({"path": format!("m{i}.rs")}),
            &"q".repeat(2000),
        );
    }
    let mut v = view_of(&h, &cfg(), 0);
    let pl = plan(&v, &cfg(), &est(), 1100).unwrap_or_else(|e| panic!("{e}"));
    assert!(pl.mid_turn);
    let p = scripted(vec![Ok(SUMMARY)]);
    let rec = run_compact(&p, &v, pl, None, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(rec.mid_turn);
    v.apply(&rec);
    let m = v.messages();
    assert_eq!(m[0].role, Role::User);
    assert!(
        m[0].content
            .text()
            .contains("migrate every module to the new API")
    );
    assert_eq!(m[1].role, Role::Assistant);
    assert_eq!(
        v.size(),
        request_size(&SystemPrompt::default(), &m, &[]) - RequestSize::new(2, 0)
    );
}

// ---------- loop breaker ----------

#[test]
fn auto_guard_stops_after_max_consecutive_useless_compactions() {
    let mut g = AutoGuard::new(3);
    assert!(g.allowed());
    assert_eq!(g.after_compaction(900, 1000), None);
    assert_eq!(g.after_compaction(1000, 1000), None);
    assert_eq!(g.after_compaction(1200, 1000), None);
    assert_eq!(g.after_compaction(500, 1000), None, "success resets");
    assert_eq!(g.after_compaction(1000, 1000), None);
    assert_eq!(g.after_compaction(1000, 1000), None);
    let msg = g.after_compaction(1100, 1000);
    assert!(msg.is_some_and(|m| m.contains("automatic compaction is off")));
    assert!(!g.allowed());
    assert_eq!(g.after_compaction(1100, 1000), None, "said once");
    g.reset();
    assert!(g.allowed());
}

// ---------- the 60-turn simulation ----------

/// A model whose tokenizer counts 3 characters per token plus 4 tokens per
/// message; the summarizer echoes the code words it saw.
struct SimModel;

impl SimModel {
    fn count(r: &ChatRequest) -> u64 {
        let s = request_size(&r.system, &r.messages, &r.tools);
        (s.chars as u64).div_ceil(3) + 4 * r.messages.len() as u64
    }

    /// The model for a `window`; the largest request it answered goes
    /// into `max_seen`.
    fn provider(window: u64, max_seen: Arc<Mutex<u64>>) -> ScriptedProvider {
        ScriptedProvider::answering(move |request| {
            let n = Self::count(request);
            if n > window {
                return Step::overflow(Some(n), Some(window));
            }
            if let Ok(mut m) = max_seen.lock() {
                *m = (*m).max(n);
            }
            let text = if request.system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX) {
                let t = request.messages[0].content.text();
                let mut words: Vec<&str> = t
                    .split_whitespace()
                    .filter(|w| w.starts_with("CW"))
                    .collect();
                words.dedup();
                let last: Vec<&str> = words.iter().rev().take(5).rev().copied().collect();
                format!(
                    "## Active goal\nkeep going\n## Critical context\ncode words: {}",
                    last.join(" ")
                )
            } else {
                "ok".to_owned()
            };
            Step::text(text).usage(Usage {
                prompt_tokens: n,
                completion_tokens: 10,
                cached_tokens: 0,
            })
        })
        .named("sim")
        .unrecorded()
    }
}

#[tokio::test]
async fn sixty_turns_stay_inside_the_window_and_trigger_at_the_threshold() {
    let window = 8000;
    let c = CompactionConfig {
        threshold_percent: 65.0,
        ..cfg()
    };
    let limits = Limits {
        context_window: Some(window),
        max_input_tokens: None,
        max_output_tokens: Some(500),
    };
    let trig = trigger(&c, &limits);
    let t = trig.tokens.unwrap_or(0);
    assert_eq!(t, 5200);
    let max_seen = Arc::new(Mutex::new(0));
    let model = SimModel::provider(window, max_seen.clone());
    let mut e = Estimator::new(c.chars_per_token, c.image_tokens);
    let mut v = ContextView::new(&c, 16 * 1024);
    let mut guard = AutoGuard::new(c.max_consecutive);
    let mut h = Hist::new();
    let base = "You are eonyx, a coding agent. ".repeat(20);
    let system = |v: &ContextView| SystemPrompt {
        stable: base.clone(),
        suffix: match v.summary() {
            Some(s) => format!(
                "Current date (UTC): 2026-07-05\n\n# Summary of earlier conversation\n\n{s}"
            ),
            None => "Current date (UTC): 2026-07-05".into(),
        },
    };
    let mut at_trigger = Vec::new();
    let mut compactions = 0;
    for turn in 0..60 {
        v.push(h.user(&format!(
            "Turn {turn}: look at module {} and report. Remember code word CW{turn}. {}",
            turn % 5,
            "Details follow. ".repeat(5)
        )));
        for step in 0..2 {
            let sys = system(&v);
            let size = RequestSize::new(sys.chars(), 0) + v.size();
            if guard.allowed() && e.estimate(&size) > t {
                let req = ChatRequest::new("m", sys.clone(), v.messages());
                if e.calibrated() {
                    at_trigger.push(SimModel::count(&req) as f64 * 100.0 / window as f64);
                }
                let overhead = e.tokens_for(RequestSize::new(base.len() + 40, 0));
                let budget = tail_budget(request_target(&trig), overhead, &c, window);
                let pl = plan(&v, &c, &e, budget).unwrap_or_else(|err| panic!("{err}"));
                // The newest code word that is being compacted away.
                let newest_cw = pl
                    .compacted(&v)
                    .iter()
                    .rev()
                    .find(|r| r.message.role == Role::User)
                    .and_then(|r| {
                        r.message
                            .content
                            .text()
                            .split_whitespace()
                            .find(|w| w.starts_with("CW"))
                            .map(str::to_owned)
                    });
                let mut rec = compact(
                    &model,
                    "m",
                    &v,
                    pl,
                    &c,
                    None,
                    CompactionTrigger::Auto,
                    &e,
                    window,
                    sys.chars(),
                    None,
                    &mut |_| {},
                    CancellationToken::new(),
                )
                .await
                .unwrap_or_else(|err| panic!("turn {turn}: {err}"));
                h.seq += 1;
                rec.seq = h.seq;
                v.apply(&rec);
                compactions += 1;
                let after = e.estimate(&(RequestSize::new(system(&v).chars(), 0) + v.size()));
                assert!(
                    guard.after_compaction(after, t).is_none(),
                    "turn {turn}: {after}"
                );
                // Retention: what was compacted reaches the next request
                // through the summary.
                if let Some(cw) = newest_cw {
                    assert!(rec.summary.contains(&cw), "turn {turn}: {cw} lost");
                }
            }
            let sys = system(&v);
            let req = ChatRequest::new("m", sys.clone(), v.messages());
            let sent = RequestSize::new(sys.chars(), 0) + v.size();
            let resp = model
                .send(&req, &mut |_| {})
                .await
                .unwrap_or_else(|err| panic!("turn {turn}: {err}"));
            e.observe(&sent, resp.usage.map(|u| u.prompt_tokens).unwrap_or(0));
            if step == 0 {
                for r in h.tool(
                    "read_file",
                    json!({"path": format!("src/module_{}.rs", turn % 5)}),
                    &format!("// module {}\n{}", turn % 5, "fn item() {}\n".repeat(50)),
                ) {
                    v.push(r);
                }
            } else {
                v.push(h.say(&format!(
                    "Module {} looks fine. {}",
                    turn % 5,
                    "Notes. ".repeat(15)
                )));
            }
        }
    }
    let max_seen = max_seen.lock().map(|m| *m).unwrap_or(u64::MAX);
    assert!(max_seen <= window, "{max_seen}");
    assert!(compactions >= 4, "{compactions}");
    assert!(!at_trigger.is_empty());
    for pct in &at_trigger {
        assert!((pct - 65.0).abs() <= 5.0, "{at_trigger:?}");
    }
    // The estimator learned the sim's ~3 chars/token (plus message overhead).
    assert!(e.ratio() < 3.2 && e.ratio() > 2.4, "{}", e.ratio());
}

// ---------- shared-prefix summarizer (cache-aware compaction) ----------

/// The request the conversation would send next, as the agent builds it.
fn next_request(v: &ContextView) -> ChatRequest {
    let mut req = ChatRequest::new(
        "m",
        SystemPrompt {
            stable: "You are eonyx.\n\n# Project context: AGENTS.md\nUse tabs.".into(),
            suffix: match v.summary() {
                Some(s) => format!(
                    "Current date (UTC): 2026-07-05\n\n# Summary of earlier conversation\n\n{s}"
                ),
                None => "Current date (UTC): 2026-07-05".into(),
            },
        },
        v.messages(),
    );
    req.tools = vec![eonyx_core::ToolDef {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object"}),
    }];
    req.temperature = Some(0.7);
    req.max_tokens = Some(300);
    req.cache_key = Some("sess".into());
    req
}

async fn run_shared(
    p: &dyn Provider,
    v: &ContextView,
    plan: Plan,
    window: u64,
    debug: &mut Vec<String>,
) -> Result<CompactionRecord, CompactError> {
    let next = next_request(v);
    let mut log = |m: String| debug.push(m);
    compact(
        p,
        "m",
        v,
        plan,
        &cfg(),
        None,
        CompactionTrigger::Auto,
        &est(),
        window,
        1000,
        Some(&next),
        &mut log,
        CancellationToken::new(),
    )
    .await
}

#[tokio::test]
async fn shared_prefix_request_is_the_next_request_plus_one_instruction() {
    let c = cfg();
    let mut h = Hist::new();
    h.user("one");
    h.tool("read_file", json!({"path": "a.rs"}), "A");
    h.tool("shell", json!({"command": "make"}), "exit status: 2\nerror");
    h.user("keep me: the second turn");
    h.say("ok");
    h.user("third");
    let mut v = view_of(&h, &c, 0);
    let c1 = CompactionConfig {
        keep_turns: 2,
        ..cfg()
    };
    let pl = plan(&v, &c1, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let p = scripted(vec![Ok(SUMMARY), Ok("## Active goal\nsecond")]);
    let mut debug = Vec::new();
    let rec = run_shared(&p, &v, pl, 100_000, &mut debug)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.mode, Some(eonyx_core::CompactionMode::SharedPrefix));
    assert!(debug.is_empty(), "{debug:?}");
    let next = next_request(&v);
    let reqs = p.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    // Same system prompt, tools and messages; one user message more.
    assert_eq!(r.system, next.system);
    assert_eq!(r.tools, next.tools);
    assert_eq!(r.messages[..next.messages.len()], next.messages[..]);
    assert_eq!(r.messages.len(), next.messages.len() + 1);
    assert_eq!(r.cache_key.as_deref(), Some("sess"));
    assert_eq!(r.cache_breakpoint, Some(next.messages.len()));
    assert!(r.no_tool_calls);
    assert_eq!(r.temperature, Some(SUMMARY_TEMPERATURE));
    assert_eq!(
        r.max_tokens,
        Some(summary_max_tokens(&cfg(), 100_000) as u32)
    );
    let ins = r
        .messages
        .last()
        .map(|m| m.content.text())
        .unwrap_or_default();
    assert_eq!(r.messages.last().map(|m| m.role), Some(Role::User));
    assert!(ins.starts_with(eonyx_core::provider::SUMMARIZER_INSTRUCTION_PREFIX));
    // It names the first kept message and asks for every section.
    assert!(
        ins.contains("message #6 that begins \"keep me: the second turn\""),
        "{ins}"
    );
    for s in SECTIONS {
        assert!(ins.contains(&format!("## {s}\n")), "{s}");
    }
    assert!(ins.contains("first summary"));
    assert!(ins.contains("do not call any tool"));
    assert!(ins.contains(&format!(
        "At most {} tokens",
        summary_max_tokens(&cfg(), 100_000)
    )));
    // Exact facts are still gathered mechanically.
    assert!(rec.summary.contains("- `a.rs`"), "{}", rec.summary);
    assert!(rec.summary.contains("`make` → exit status: 2"));

    // Second round: the instruction asks to merge with the summary above.
    let mut rec = rec;
    rec.seq = h.seq + 1;
    h.seq += 1;
    v.apply(&rec);
    for t in 0..3 {
        v.push(h.user(&format!("more {t}")));
    }
    let pl = plan(&v, &c1, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let rec2 = run_shared(&p, &v, pl, 100_000, &mut debug)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec2.mode, Some(eonyx_core::CompactionMode::SharedPrefix));
    let r2 = &p.requests()[1];
    assert!(r2.system.suffix.contains("ship it"));
    let ins = r2
        .messages
        .last()
        .map(|m| m.content.text())
        .unwrap_or_default();
    assert!(ins.contains("Merge the \"# Summary of earlier conversation\" above"));
    assert!(rec2.summary.contains("- `a.rs`"), "{}", rec2.summary);
}

#[tokio::test]
async fn shared_prefix_failures_fall_back_to_the_transcript_summarizer() {
    let h = session(5, 1, 10);
    let v = view_of(&h, &cfg(), 0);
    let pl = || plan(&v, &cfg(), &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    for (first, why) in [
        (
            Step::tool_calls(&[("read_file", json!({"path": "x"}))]),
            "called a tool",
        ),
        (Step::text("  "), "no text"),
        (
            Step::Fail(ProviderError::Rejected {
                status: 400,
                message: "unknown field tool_choice".into(),
            }),
            "unknown field tool_choice",
        ),
    ] {
        let p = ScriptedProvider::new(vec![first, Step::text(SUMMARY)]);
        let mut debug = Vec::new();
        let rec = run_shared(&p, &v, pl(), 100_000, &mut debug)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rec.mode, Some(eonyx_core::CompactionMode::Transcript));
        assert!(rec.summary.starts_with("## Active goal\nship it"));
        let reqs = p.requests();
        assert_eq!(reqs.len(), 2);
        assert!(!reqs[0].system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX));
        assert!(reqs[1].system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX));
        assert_eq!(debug.len(), 1, "{debug:?}");
        assert!(
            debug[0].contains(why) && debug[0].contains("transcript"),
            "{debug:?}"
        );
    }
}

#[tokio::test]
async fn a_request_without_room_for_the_summary_uses_the_transcript() {
    let mut h = Hist::new();
    for t in 0..40 {
        h.user(&format!("turn {t} {}", "w".repeat(2000)));
        h.say("ok");
    }
    let v = view_of(&h, &cfg(), 0);
    let next_tokens = est().estimate(&request_size(
        &next_request(&v).system,
        &v.messages(),
        &next_request(&v).tools,
    ));
    let pl = || plan(&v, &cfg(), &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    // Room for well under half the summary budget: transcript, said why.
    let window = next_tokens + 700;
    let p = scripted(vec![Ok(SUMMARY)]);
    let mut debug = Vec::new();
    let rec = run_shared(&p, &v, pl(), window, &mut debug)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.mode, Some(eonyx_core::CompactionMode::Transcript));
    assert_eq!(p.requests().len(), 1);
    assert!(debug[0].contains("too little"), "{debug:?}");
    // Room for most of it: shared prefix, max_tokens is the room left.
    let window = next_tokens + 700 + 3000;
    let p = scripted(vec![Ok(SUMMARY)]);
    let rec = run_shared(&p, &v, pl(), window, &mut debug)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.mode, Some(eonyx_core::CompactionMode::SharedPrefix));
    let max = u64::from(p.requests()[0].max_tokens.unwrap_or(0));
    assert!(
        max < summary_max_tokens(&cfg(), window) && max > 2048,
        "{max}"
    );
}

#[test]
fn skill_results_are_never_truncated_nor_collapsed() {
    // keep_recent 0, budget 1: every other result collapses; a cap of 100
    // bytes cuts every other result.
    let mut h = Hist::new();
    h.user("deploy");
    let body = "STEP ".repeat(100);
    h.tool("skill", json!({"name": "deploy"}), &body);
    h.tool("read_file", json!({"path": "a"}), &"x".repeat(500));
    h.tool("read_file", json!({"path": "b"}), &"y".repeat(500));
    let mut v = view_of(&h, &collapse_cfg(1, 0), 100);
    v.collapse_for_room(usize::MAX);
    let t = texts(&v);
    assert_eq!(t[2], body, "the skill body is sent whole");
    assert!(t[4].starts_with("[tool result collapsed"), "{}", t[4]);
    assert!(t[6].starts_with("[tool result collapsed"), "{}", t[6]);
    // The same holds for a view rebuilt from the records (resume).
    assert_eq!(
        view_of(&h, &collapse_cfg(1, 0), 100).messages()[2]
            .content
            .text(),
        body
    );
}
