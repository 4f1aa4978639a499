//! The view: truncation, collapse, determinism, and what is never sent.

use super::*;

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
    // (A record as docs/session-format.md shows one: the optional fields
    // left out.)
    let rec: CompactionRecord = serde_json::from_value(serde_json::json!({
        "seq": 99, "ts": "", "summary": "S", "first_kept_seq": h.recs[18].seq,
        "trigger": "auto", "tokens_before": 0, "tokens_after": 0,
    }))
    .unwrap();
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
