//! `compact` against a scripted summarizer: facts, failures, cancellation,
//! mid-turn requests; and the loop breaker.

use super::*;

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
