//! The shared-prefix summarizer (cache-aware compaction).

use super::*;

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
    let (cfg, est) = (cfg(), est());
    let input = CompactInput {
        model_name: "m",
        view: v,
        plan: &plan,
        cfg: &cfg,
        focus: None,
        trigger: CompactionTrigger::Auto,
        estimator: &est,
        window,
        system_chars: 1000,
        next: Some(&next),
        pinned: crate::Pinned::Nothing,
        said_note: None,
    };
    compact(p, input, &mut log, CancellationToken::new()).await
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
    // Answered: an unanswered last line would be left out (no cache holds it).
    h.say("noted");
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
    assert!(ins.contains("call no tool"));
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
    assert!(ins.contains("Merge in the \"# Summary of earlier conversation\" above"));
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
