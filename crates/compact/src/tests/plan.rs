//! The plan: which turns are kept verbatim and where the cut falls.

use super::*;

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
