//! Ahead-of-time summaries: a draft written in the background, applied
//! later to a view that has grown, holds what a synchronous compaction with
//! the same boundary would hold.

use super::*;

/// The config these tests plan with: one turn kept.
fn keep_one_turn() -> CompactionConfig {
    CompactionConfig {
        keep_turns: 1,
        ..cfg()
    }
}

/// A draft of `plan` over `v` for a 100,000-token window and a
/// 1,000-character system prompt, nothing pinned.
fn draft_input(
    v: &ContextView,
    plan: &Plan,
    cfg: &CompactionConfig,
    est: &Estimator,
) -> DraftInput {
    DraftInput {
        model_name: "m".into(),
        view: v.clone(),
        plan: plan.clone(),
        cfg: cfg.clone(),
        estimator: est.clone(),
        window: 100_000,
        system_chars: 1000,
        next: None,
        base_seq: None,
        pinned: crate::Pinned::Nothing,
        said_note: None,
    }
}

fn input<'a>(
    v: &'a ContextView,
    plan: &'a Plan,
    cfg: &'a CompactionConfig,
    est: &'a Estimator,
) -> CompactInput<'a> {
    CompactInput {
        model_name: "m",
        view: v,
        plan,
        cfg,
        focus: None,
        trigger: CompactionTrigger::Auto,
        estimator: est,
        window: 100_000,
        system_chars: 1000,
        next: None,
        pinned: crate::Pinned::Nothing,
        said_note: None,
    }
}

/// Two turns with file, command and task facts, then a third being kept.
fn history() -> Hist {
    let mut h = Hist::new();
    h.user("first: read the notes");
    h.tool("read_file", json!({"path": "notes.txt"}), "CODEWORD");
    h.tool(
        "shell",
        json!({"command": "make test"}),
        "exit status: 2\nboom",
    );
    h.say("read them");
    h.user("second: fix it");
    h.tool(
        "write_file",
        json!({"path": "src/lib.rs", "content": "x"}),
        &eonyx_core::tool::file_changed_line("src/lib.rs", 1, 0),
    );
    h.tool("grep", json!({"pattern": "TODO", "path": "src"}), "none");
    h.tool(
        "task",
        json!({"prompt": "p", "description": "check the callers", "profile": "explore"}),
        "task session 20260705T091500-1a2b3c4d · profile explore · 2 steps\n\nnone left",
    );
    h.say("fixed");
    h.user("third: kept");
    h.say("ok");
    h
}

#[tokio::test]
async fn an_applied_draft_has_the_facts_and_boundary_of_a_synchronous_compaction() {
    let c = keep_one_turn();
    let e = est();
    let mut h = history();
    let v = view_of(&h, &c, 0);
    let pl = plan(&v, &c, &e, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pl.first_kept_seq, 15);

    // The draft, written in the background from an owned copy.
    let p: Arc<dyn Provider> = Arc::new(scripted(vec![Ok(SUMMARY)]));
    let job = write_draft(p, draft_input(&v, &pl, &c, &e), CancellationToken::new());
    let mut draft = job.await.result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(draft.first_kept_seq, 15);
    assert_eq!(draft.base_seq, None);
    assert!(draft.summary.starts_with(SUMMARY), "{}", draft.summary);
    assert!(draft.summary.contains("`make test` → exit status: 2"));
    assert!(draft.tokens > 0);
    draft.seq = 17;

    // Meanwhile the conversation went on: two more turns.
    h.seq += 1; // the draft's own seq
    h.user("fourth: read more");
    h.tool("read_file", json!({"path": "later.txt"}), "later");
    h.say("read");
    h.user("fifth");
    let grown = view_of(&h, &c, 0);
    let now = plan(&grown, &c, &e, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert!(now.first_kept_seq > draft.first_kept_seq);

    let at = draft_applies(&draft, &grown, None, now.first_kept_seq)
        .unwrap_or_else(|| panic!("the draft applies"));
    assert_eq!(at.first_kept_seq, 15);
    let applied =
        record_from_draft(&draft, input(&grown, &at, &c, &e)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied.mode, Some(eonyx_core::CompactionMode::Ahead));
    assert_eq!(applied.draft_seq, Some(17));
    assert_eq!(applied.first_kept_seq, 15);

    // A synchronous compaction of the grown view with the same boundary.
    let sync_p = scripted(vec![Ok(SUMMARY)]);
    let sync = compact(
        &sync_p,
        input(&grown, &at, &c, &e),
        &mut |_| {},
        CancellationToken::new(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied.facts, sync.facts);
    assert_eq!(applied.summary, sync.summary);
    assert_eq!(applied.tokens_before, sync.tokens_before);
    assert_eq!(applied.tokens_after, sync.tokens_after);
    assert_eq!(applied.facts, draft.facts);
    let facts = Facts::from_value(applied.facts.as_ref());
    assert_eq!(facts.read, vec!["notes.txt"]);
    assert_eq!(facts.written, vec!["src/lib.rs"]);
    assert_eq!(facts.tasks.len(), 1);
    assert_eq!(facts.tasks[0].description, "check the callers");
    // The turns after the draft's boundary stay verbatim.
    let mut after = grown.clone();
    after.apply(&applied);
    let kept: Vec<String> = after
        .messages()
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.text())
        .collect();
    assert_eq!(kept, ["third: kept", "fourth: read more", "fifth"]);
}

#[test]
fn a_draft_applies_only_on_its_base_and_at_or_before_the_boundary() {
    let c = cfg();
    let h = history();
    let v = view_of(&h, &c, 0);
    let draft = SummaryDraftRecord {
        seq: 15,
        ts: String::new(),
        summary: "s".into(),
        first_kept_seq: 7,
        base_seq: None,
        facts: None,
        mode: None,
        tokens_before: 0,
        tokens_after: 0,
        tokens: 1,
    };
    assert!(draft_applies(&draft, &v, None, 13).is_some());
    assert!(draft_applies(&draft, &v, None, 7).is_some());
    // Today's boundary is earlier than the draft's.
    assert!(draft_applies(&draft, &v, None, 6).is_none());
    // Another compaction came in between.
    assert!(draft_applies(&draft, &v, Some(14), 13).is_none());
    // Not at a user message, or nothing before it, or not in the view.
    for seq in [2, 1, 40] {
        let d = SummaryDraftRecord {
            first_kept_seq: seq,
            ..draft.clone()
        };
        assert!(draft_applies(&d, &v, None, 50).is_none(), "{seq}");
    }
}

#[tokio::test]
async fn a_cancelled_or_failed_draft_gives_no_record() {
    let c = keep_one_turn();
    let h = history();
    let v = view_of(&h, &c, 0);
    let pl = plan(&v, &c, &est(), u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let input = || draft_input(&v, &pl, &c, &est());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = write_draft(Arc::new(hang()), input(), cancel).await;
    assert!(
        matches!(out.result, Err(CompactError::Cancelled)),
        "{out:?}"
    );
    let failing: Arc<dyn Provider> = Arc::new(scripted(vec![Err(ProviderError::Transient {
        message: "down".into(),
    })]));
    let out = write_draft(failing, input(), CancellationToken::new()).await;
    assert!(
        matches!(out.result, Err(CompactError::Summarizer(_))),
        "{out:?}"
    );
}
