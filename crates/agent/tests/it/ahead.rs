//! Summaries written ahead, through the agent's API as a frontend drives it
//! (docs/compaction.md#ahead-of-time-summaries): a job is due only past the
//! ahead point and once per boundary; its result is kept only for the
//! session and the base it was written for; a failed one is retried at the
//! next idle moment; the next compaction applies a kept one without asking
//! the summarizer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eonyx_agent::{Agent, AgentEvent, DraftJob, RewindOptions, SessionChoice};
use eonyx_core::provider::{
    CancellationToken, SUMMARIZER_INSTRUCTION_PREFIX, SUMMARIZER_SYSTEM_PREFIX,
};
use eonyx_core::record::{ParsedLine, Record};
use eonyx_core::{ChatRequest, CompactionMode, ProviderError};
use eonyx_tests::{FakeConfig, ScriptedProvider, Step, TestEnv};

/// The shared-prefix request (its last message) or the transcript one (its
/// system prompt).
pub(crate) fn is_summarizer(r: &ChatRequest) -> bool {
    r.system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX)
        || r.messages
            .last()
            .is_some_and(|m| m.content.text().starts_with(SUMMARIZER_INSTRUCTION_PREFIX))
}

/// Answers turns with "noted" and summaries with a fixed text; summaries
/// fail while `fail` is set.
fn provider(fail: Arc<AtomicBool>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::answering(move |r| {
        if !is_summarizer(r) {
            Step::text("noted")
        } else if fail.load(Ordering::SeqCst) {
            Step::Fail(ProviderError::Transient {
                message: "summarizer down".into(),
            })
        } else {
            Step::text("## Active goal\nchat\n## Critical context\nnone")
        }
    }))
}

pub(crate) fn env() -> TestEnv {
    let env = TestEnv::new().unwrap();
    env.write_config(
        &FakeConfig::openai("http://127.0.0.1:9/v1")
            .set("context_window", 4000)
            .merge_model_toml("compaction.threshold_percent = 60\ncompaction.keep_turns = 1")
            .unwrap(),
    )
    .unwrap();
    env
}

pub(crate) async fn open(env: &TestEnv, p: &Arc<ScriptedProvider>) -> Agent {
    let dirs = [
        env.home.as_str(),
        env.data_dir.as_str(),
        env.config_dir.as_str(),
    ];
    let opts = crate::options(env.project.clone(), dirs, p.clone());
    Agent::open(opts, SessionChoice::New).await.unwrap()
}

pub(crate) async fn turn(agent: &mut Agent, n: usize, events: &mut Vec<AgentEvent>) {
    let text = format!("turn {n}: {}", "words to remember ".repeat(30));
    let queue = agent.events();
    let cancel = CancellationToken::new();
    let work = agent.turn(&text, &cancel);
    queue.deliver(work, |e| events.push(e)).await.unwrap();
}

/// A new session whose summarizer never fails.
async fn opened() -> (TestEnv, Arc<ScriptedProvider>, Agent) {
    let env = env();
    let p = provider(Arc::new(AtomicBool::new(false)));
    let agent = open(&env, &p).await;
    (env, p, agent)
}

/// Turns until a summary ahead is due: its job and how many turns it took.
async fn turns_until_draft(agent: &mut Agent, events: &mut Vec<AgentEvent>) -> (DraftJob, usize) {
    for n in 1..=20 {
        turn(agent, n, events).await;
        if let Some(job) = agent.start_draft() {
            return (job, n);
        }
    }
    panic!("no summary ahead was due after 20 turns");
}

fn drafts(env: &TestEnv) -> usize {
    let dir = env.data_dir.join("sessions");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .map(|bytes| {
            bytes
                .split(|b| *b == b'\n')
                .filter(|l| {
                    matches!(Record::parse_line(l),
                    Ok(ParsedLine::Record(r)) if matches!(*r, Record::SummaryDraft(_)))
                })
                .count()
        })
        .sum()
}

#[tokio::test]
async fn a_draft_is_due_past_the_ahead_point_once_per_boundary_and_applied_without_a_summarizer() {
    let env = env();
    let fail = Arc::new(AtomicBool::new(false));
    let p = provider(fail.clone());
    let mut agent = open(&env, &p).await;
    let ahead = agent.trigger().ahead.unwrap();
    let mut events = Vec::new();
    let mut n = 0;
    // Below the ahead point nothing is due.
    let job = loop {
        n += 1;
        turn(&mut agent, n, &mut events).await;
        let estimate = agent.context_status().estimate;
        match agent.start_draft() {
            Some(job) => {
                assert!(estimate >= ahead, "{estimate} < {ahead}");
                break job;
            }
            None => assert!(estimate < ahead, "nothing due at {estimate} >= {ahead}"),
        }
        assert!(n < 20);
    };

    // A failed summary changes nothing and is due again at once.
    fail.store(true, Ordering::SeqCst);
    agent.finish_draft(job.await);
    events.extend(agent.events().take());
    assert!(!agent.draft_ready());
    assert_eq!(drafts(&env), 0);
    fail.store(false, Ordering::SeqCst);
    let job = agent.start_draft().expect("retried");
    let boundary = job.first_kept_seq();
    agent.finish_draft(job.await);
    events.extend(agent.events().take());
    assert!(agent.draft_ready());
    assert!(agent.context_status().summary_ready);
    assert_eq!(drafts(&env), 1);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::SummaryDraft(d) if d.first_kept_seq == boundary))
    );
    // Not again for the same boundary.
    assert!(agent.start_draft().is_none());

    // Turns until the trigger: the compaction takes the draft.
    let asked = p.requests().iter().filter(|r| is_summarizer(r)).count();
    let record = loop {
        n += 1;
        let mut evs = Vec::new();
        turn(&mut agent, n, &mut evs).await;
        if let Some(rec) = evs.into_iter().find_map(|e| match e {
            AgentEvent::Compacted(rec) => Some(*rec),
            _ => None,
        }) {
            break rec;
        }
        // Each idle moment with a later boundary gets a new draft.
        if let Some(job) = agent.start_draft() {
            assert!(job.first_kept_seq() > boundary);
            job.cancel();
        }
        assert!(n < 40);
    };
    assert_eq!(record.mode, Some(CompactionMode::Ahead));
    assert_eq!(record.first_kept_seq, boundary);
    assert!(record.draft_seq.is_some());
    assert_eq!(
        p.requests().iter().filter(|r| is_summarizer(r)).count(),
        asked,
        "the compaction asked the summarizer"
    );
    assert!(!agent.draft_ready());
}

#[tokio::test]
async fn a_draft_for_another_session_or_an_older_base_is_dropped() {
    let (env, _p, mut agent) = opened().await;
    let mut events = Vec::new();
    let (job, _) = turns_until_draft(&mut agent, &mut events).await;
    let done = job.await;
    agent.new_session().unwrap();
    agent.finish_draft(done);
    events.extend(agent.events().take());
    assert!(!agent.draft_ready());
    assert_eq!(drafts(&env), 0);

    // Compacted meanwhile (`/compact`): the draft's base is gone.
    let (job, _) = turns_until_draft(&mut agent, &mut events).await;
    let done = job.await;
    let queue = agent.events();
    let cancel = CancellationToken::new();
    let compact = agent.compact_now(Some("the words"), &cancel);
    queue.deliver(compact, |e| events.push(e)).await.unwrap();
    agent.finish_draft(done);
    events.extend(agent.events().take());
    assert!(!agent.draft_ready());
    assert_eq!(drafts(&env), 0);
}

#[tokio::test]
async fn a_draft_that_leaves_the_request_past_the_trigger_is_followed_by_an_ordinary_compaction() {
    let (_env, p, mut agent) = opened().await;
    let mut events = Vec::new();
    let (job, _) = turns_until_draft(&mut agent, &mut events).await;
    agent.finish_draft(job.await);
    events.extend(agent.events().take());
    assert!(agent.draft_ready());
    // A long message: the turns the draft keeps plus this one are still
    // past the trigger.
    let asked = p.requests().iter().filter(|r| is_summarizer(r)).count();
    // (370: sized so the shared-prefix request still leaves room for the
    // summary with every built-in tool defined, `plan` included.)
    let long = format!("the long one: {}", "many more words ".repeat(370));
    let mut evs = Vec::new();
    let queue = agent.events();
    let cancel = CancellationToken::new();
    let work = agent.turn(&long, &cancel);
    queue.deliver(work, |e| evs.push(e)).await.unwrap();
    let records: Vec<_> = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Compacted(rec) => Some(rec),
            _ => None,
        })
        .collect();
    let modes: Vec<Option<CompactionMode>> = records.iter().map(|r| r.mode).collect();
    assert_eq!(
        modes,
        [
            Some(CompactionMode::Ahead),
            Some(CompactionMode::SharedPrefix)
        ]
    );
    assert_eq!(
        p.requests().iter().filter(|r| is_summarizer(r)).count(),
        asked + 1
    );
    // The ordinary compaction moved the boundary on and shrank the request
    // again. (It cannot bring it under the trigger here: the long message
    // alone, kept verbatim as the newest turn, is past it.)
    assert!(records[1].first_kept_seq > records[0].first_kept_seq);
    assert!(records[1].tokens_after < records[0].tokens_after);
}

#[tokio::test]
async fn a_rewind_keeps_a_draft_whose_boundary_it_kept_and_drops_one_it_left_out() {
    let (_env, _p, mut agent) = opened().await;
    let mut events = Vec::new();
    let (job, n) = turns_until_draft(&mut agent, &mut events).await;
    agent.finish_draft(job.await);
    events.extend(agent.events().take());
    assert!(agent.draft_ready());
    // One more turn (still under the trigger), then rewound: the draft and
    // its boundary are before the rewind target, so it still applies.
    let mut evs = Vec::new();
    turn(&mut agent, n + 1, &mut evs).await;
    assert!(!evs.iter().any(|e| matches!(e, AgentEvent::Compacted(_))));
    let rewind = |turns| RewindOptions {
        turns,
        keep_files: false,
    };
    let plan = agent.plan_rewind(rewind(1)).unwrap();
    agent.rewind(&plan).unwrap();
    assert!(agent.draft_ready());
    // Back past the turn the draft keeps as its boundary: that message is
    // no longer in the view, so the draft no longer applies.
    let plan = agent.plan_rewind(rewind(1)).unwrap();
    agent.rewind(&plan).unwrap();
    assert!(!agent.draft_ready());
}

#[tokio::test]
async fn a_rewind_to_before_a_compaction_brings_its_draft_back_for_the_next_one() {
    let (_env, p, mut agent) = opened().await;
    let mut events = Vec::new();
    let (job, mut n) = turns_until_draft(&mut agent, &mut events).await;
    agent.finish_draft(job.await);
    events.extend(agent.events().take());
    let compacted = |evs: &[AgentEvent]| {
        evs.iter()
            .filter_map(|e| match e {
                AgentEvent::Compacted(rec) => rec.mode,
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // The turns go on without another draft until the trigger applies it.
    loop {
        n += 1;
        let mut evs = Vec::new();
        turn(&mut agent, n, &mut evs).await;
        match compacted(&evs)[..] {
            [] => assert!(n < 20),
            [CompactionMode::Ahead] => break,
            ref other => panic!("{other:?}"),
        }
    }
    assert!(!agent.draft_ready());
    let asked = p.requests().iter().filter(|r| is_summarizer(r)).count();
    // Rewinding the turn that compacted: the compaction is no longer in
    // force, so the draft it applied fits again.
    let plan = agent
        .plan_rewind(RewindOptions {
            turns: 1,
            keep_files: false,
        })
        .unwrap();
    agent.rewind(&plan).unwrap();
    assert!(agent.draft_ready());
    let mut evs = Vec::new();
    turn(&mut agent, n + 1, &mut evs).await;
    assert_eq!(compacted(&evs), [CompactionMode::Ahead]);
    assert_eq!(
        p.requests().iter().filter(|r| is_summarizer(r)).count(),
        asked
    );
}
