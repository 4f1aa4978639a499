//! Goals and plans through the agent's API (docs/compaction.md#what-is-pinned):
//! a compaction that applies a summary written ahead pins the goal and the
//! plan like any other, and the summarizer that wrote the draft was told
//! they are kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use eonyx_agent::AgentEvent;
use eonyx_core::provider::CancellationToken;
use eonyx_core::{CompactionMode, Role};
use eonyx_tests::{ScriptedProvider, Step};
use serde_json::json;

use crate::ahead::{env, is_summarizer, open, turn};

/// Answers "PLAN-NOW" with a `plan` call, summaries with a text that keeps
/// nothing, everything else with "noted".
fn provider() -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::answering(|r| {
        let last = r.messages.last();
        if is_summarizer(r) {
            Step::text("## Active goal\nnone\n## Critical context\nnone")
        } else if last
            .is_some_and(|m| m.role == Role::User && m.content.text().contains("PLAN-NOW"))
        {
            Step::tool_calls(&[(
                "plan",
                json!({"steps": [
                    {"step": "STEP-ONE", "status": "completed"},
                    {"step": "STEP-TWO", "status": "in_progress"}
                ]}),
            )])
        } else {
            Step::text("noted")
        }
    }))
}

#[tokio::test]
async fn a_compaction_from_a_summary_written_ahead_pins_the_goal_and_the_plan() {
    let env = env();
    let p = provider();
    let mut agent = open(&env, &p).await;
    let mut events = Vec::new();
    agent
        .goals()
        .set("GOAL-TEXT ship the parser", Some(5))
        .unwrap();
    let queue = agent.events();
    let cancel = CancellationToken::new();
    let work = agent.turn("PLAN-NOW", &cancel);
    queue.deliver(work, |e| events.push(e)).await.unwrap();
    assert_eq!(
        agent.plan().unwrap().progress(),
        "1/2 completed, in progress: STEP-TWO"
    );
    let mut n = 0;
    let job = loop {
        n += 1;
        turn(&mut agent, n, &mut events).await;
        if let Some(job) = agent.start_draft() {
            break job;
        }
        assert!(n < 20);
    };
    agent.finish_draft(job.await);
    events.extend(agent.events().take());
    assert!(agent.draft_ready());
    // The draft's summarizer was told the goal and plan are kept.
    let asked: Vec<_> = p.requests().into_iter().filter(is_summarizer).collect();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .messages
            .last()
            .unwrap()
            .content
            .text()
            .contains(eonyx_core::goal::PINNED_NOTE)
    );
    // Turns until the trigger fires and the draft is applied.
    let mut applied = None;
    for _ in 0..20 {
        n += 1;
        let mut evs = Vec::new();
        turn(&mut agent, n, &mut evs).await;
        applied = evs.into_iter().find_map(|e| match e {
            AgentEvent::Compacted(rec) => Some(*rec),
            _ => None,
        });
        if applied.is_some() {
            break;
        }
    }
    let rec = applied.expect("a compaction");
    assert_eq!(rec.mode, Some(CompactionMode::Ahead));
    let goal = rec.goal.as_ref().unwrap();
    assert_eq!(goal.text, "GOAL-TEXT ship the parser");
    assert_eq!(rec.plan.as_ref().unwrap().steps.len(), 2);
    // The plan call was compacted away, yet the plan is still the same,
    // and the next request starts its summary section with both.
    assert!(
        !agent
            .effective_request()
            .1
            .iter()
            .any(|m| m.content.text().contains("PLAN-NOW"))
    );
    assert_eq!(
        agent.plan().unwrap().progress(),
        "1/2 completed, in progress: STEP-TWO"
    );
    let system = agent.system_prompt().suffix;
    let pinned = "# Summary of earlier conversation\n\n## Goal (kept verbatim by eonyx)\nStatus: active (0/5 continuation turns used)\nGOAL-TEXT ship the parser\n\n## Plan (kept verbatim by eonyx)\n- [completed] STEP-ONE\n- [in_progress] STEP-TWO\n\n## Active goal\nnone";
    assert!(system.contains(pinned), "{system}");
}
