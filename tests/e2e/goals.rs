//! Plans and goals through the real binary (issue 36; docs/goals.md, section
//! "Goals"; docs/compaction.md#what-is-pinned): the goal and the plan
//! survive compactions by a summarizer that keeps nothing, `run --goal`
//! continues by itself until achieved, blocked or out of budget, `run -c`
//! goes on with a paused goal, and bad input changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Stdio;
use std::time::Duration;

use eonyx_tests::{FORGETFUL_SUMMARY, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{json_lines, stderr, stdout};

const GOAL: &str = "Make CODEWORD-GOAL parse every fixture";

fn plan_call() -> Reply {
    Reply::plan(&[
        ("read the fixtures", "completed"),
        ("fix the CODEWORD-STEP tokenizer", "in_progress"),
        ("run the whole suite", "pending"),
    ])
}

/// A fixture whose goals have a budget of `max_turns` and whose
/// compactions keep only the last user turn.
fn goal_fx(max_turns: u32) -> Fx {
    Fx::with(|c| {
        c.merge_model_toml("compaction.keep_turns = 1")
            .unwrap()
            .merge_top_toml(&format!("[goals]\nmax_turns = {max_turns}"))
            .unwrap()
    })
}

fn goal_records(fx: &Fx) -> Vec<Value> {
    records(&fx.session())
        .into_iter()
        .filter(|r| r["type"] == "goal")
        .collect()
}

/// The continuation messages eonyx sent itself, in order.
fn continuations(requests: &[RecordedRequest]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for r in requests {
        for t in r.user_texts() {
            if t.starts_with("[eonyx: goal continuation") && !seen.contains(&t) {
                seen.push(t);
            }
        }
    }
    seen
}

#[test]
fn the_goal_and_the_plan_survive_two_compactions_by_a_summarizer_that_keeps_nothing() {
    let fx = goal_fx(2);
    fx.fake.set_forgetful_summarizer();
    // The goal's first turn makes a plan and ends without goal_update; the
    // two continuations say "ok" (the default reply): the budget runs out.
    fx.fake.push_all([plan_call(), Reply::text("on it")]);
    let input = format!("/goal {GOAL}\n/compact\nsomething else\n/compact\nwhere are we?\n");
    let o = fx.run(&["--json"], &input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));

    let events = json_lines(&o.stdout);
    let plan_events: Vec<&Value> = events.iter().filter(|e| e["type"] == "plan").collect();
    assert_eq!(plan_events.len(), 1, "{events:#?}");
    assert_eq!(plan_events[0]["steps"][1]["status"], "in_progress");
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "goal_continue")
            .count(),
        2
    );
    let compactions: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 2, "{events:#?}");

    // Both summaries were the forgetful one: nothing of the goal or plan.
    let summarizer: Vec<RecordedRequest> = fx
        .chats()
        .into_iter()
        .filter(RecordedRequest::is_summarizer)
        .collect();
    assert_eq!(summarizer.len(), 2);
    for s in &summarizer {
        // The summarizer was told the goal and plan are kept.
        assert!(
            s.all_text()
                .contains("eonyx keeps the current goal and plan verbatim above your summary"),
            "{}",
            s.all_text()
        );
    }
    let session = records(&fx.session());
    // `/goal` on a session with no message yet: its first record.
    assert_eq!(session[1]["type"], "goal");
    assert_eq!(session[1]["text"], GOAL);
    let saved: Vec<&Value> = session
        .iter()
        .filter(|r| r["type"] == "compaction")
        .collect();
    assert!(
        saved[1]["summary"]
            .as_str()
            .unwrap()
            .starts_with(FORGETFUL_SUMMARY)
    );

    // The last request: the goal and every step with its status, verbatim,
    // at the top of the summary section, though no message holds them.
    let last = fx.agent_requests().pop().unwrap();
    let system = last.system_text();
    let summary_at = system.find("# Summary of earlier conversation").unwrap();
    let section = &system[summary_at..];
    let pinned = format!(
        "# Summary of earlier conversation\n\n## Goal (kept verbatim by eonyx)\nStatus: budget_limited (2/2 continuation turns used)\n{GOAL}\n\n## Plan (kept verbatim by eonyx)\n- [completed] read the fixtures\n- [in_progress] fix the CODEWORD-STEP tokenizer\n- [pending] run the whole suite\n\n## Active goal\nnone"
    );
    assert!(section.starts_with(&pinned), "{section}");
    let messages = last.non_system_json();
    assert!(!messages.contains("CODEWORD-GOAL"), "{messages}");
    assert!(!messages.contains("CODEWORD-STEP"), "{messages}");

    // Nothing was added to the stable prefix: it is the first request's.
    let first = fx.agent_requests().remove(0);
    let first_system = first.system_text();
    let prefix = |s: &str| s[..s.find("Current date (UTC)").unwrap()].to_owned();
    assert_eq!(prefix(&first_system), prefix(&system));
}

#[test]
fn run_goal_continues_by_itself_until_the_budget_and_exits_1() {
    let fx = goal_fx(20);
    let o = fx
        .cmd(&["run", "--goal", GOAL, "--max-turns", "3"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("goal stopped: the budget of 3 continuation turns is used up"),
        "{err}"
    );

    // The goal text was the first message, then three continuations that
    // restate it with the budget left, then nothing more.
    let requests = fx.agent_requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].user_texts(), [GOAL]);
    let sent = continuations(&requests);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    for (i, c) in sent.iter().enumerate() {
        assert!(c.contains(&format!("\n\n{GOAL}\n\n")), "{c}");
        assert!(
            c.contains(&format!("{} continuation turn(s) left", 2 - i)),
            "{c}"
        );
    }
    // goal_update was offered while the goal was active.
    assert!(requests[0].tool_names().contains(&"goal_update".to_owned()));
    assert!(requests[0].tool_names().contains(&"plan".to_owned()));

    let goals = goal_records(&fx);
    let last = goals.last().unwrap();
    assert_eq!(last["status"], "budget_limited");
    assert_eq!(last["turns_used"], 3);
    assert_eq!(last["max_turns"], 3);
    assert_eq!(last["text"], GOAL);
    // `sessions show` marks the goal records.
    let id = session_id_of(&fx.session());
    let shown = fx.run(&["sessions", "show", &id], "");
    assert!(
        stdout(&shown).contains("goal budget_limited · 3/3 continuation turns"),
        "{}",
        stdout(&shown)
    );
}

#[test]
fn goal_update_achieved_ends_the_run_with_exit_0_and_sends_nothing_more() {
    let fx = goal_fx(20);
    fx.fake.push_all([
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "all 12 fixtures parse"}),
        ),
        Reply::text("done: every fixture parses"),
    ]);
    let o = fx
        .cmd(&["run", "--goal", GOAL, "--json", "start with the tokenizer"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("goal achieved: all 12 fixtures parse"),
        "{}",
        stderr(&o)
    );
    // The prompt was the first message; the turn's two steps, nothing after.
    let requests = fx.agent_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].user_texts(), ["start with the tokenizer"]);
    assert!(continuations(&requests).is_empty());
    // Once achieved, goal_update is no longer offered.
    assert!(!requests[1].tool_names().contains(&"goal_update".to_owned()));
    let events = json_lines(&o.stdout);
    let statuses: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "goal")
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["active", "achieved"]);
    assert_eq!(
        goal_records(&fx).last().unwrap()["evidence"],
        "all 12 fixtures parse"
    );
    // `/status` shows the goal and where it stands.
    let o = fx.run(&["-c", "--json"], "/status\n");
    let status = json_lines(&o.stdout)
        .into_iter()
        .find(|e| e["type"] == "status")
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    assert_eq!(status["goal"]["status"], "achieved");
    assert_eq!(status["goal"]["text"], GOAL);
    assert_eq!(status["goal"]["turns_used"], 0);
}

#[test]
fn goal_flags_are_checked_before_anything_is_sent() {
    let fx = goal_fx(20);
    for args in [
        &["run", "--max-turns", "3", "hello"][..],
        &["run", "--goal", "x", "--max-turns", "0"][..],
        &["run", "--goal", "  "][..],
    ] {
        let o = fx.cmd(args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(code(&o), Some(2), "{args:?}: {}", stderr(&o));
    }
    assert!(fx.chats().is_empty());
    // `/goal pause` with no goal is the command's own reason, as for any
    // other slash command in a batch: said, and the next line is sent.
    let o = fx.run(&[], "/goal pause\n/goal resume\n/goal clear\nhello after\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).matches("no goal is set").count(),
        3,
        "{}",
        stderr(&o)
    );
    assert_eq!(fx.chats().len(), 1);
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("hello after")
    );
}

#[test]
fn ctrl_c_pauses_the_goal_and_run_c_goes_on_until_it_is_achieved() {
    let fx = goal_fx(20);
    fx.fake
        .push(Reply::text("thinking hard").with_delay(Duration::from_secs(8)));
    let child = fx
        .cmd(&["run", "--goal", GOAL])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the first request", Duration::from_secs(20), || {
        fx.chats().len() == 1
    });
    let (o, _) = ctrl_c(child);
    assert_eq!(code(&o), Some(130), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("goal paused: interrupted"),
        "{}",
        stderr(&o)
    );
    assert_eq!(goal_records(&fx).last().unwrap()["status"], "paused");

    // `run -c` resumes it: the prompt, a continuation, then achieved.
    fx.fake.push_all([
        Reply::text("back at it"),
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "suite green"}),
        ),
        Reply::text("finished"),
    ]);
    let o = fx.run(&["run", "-c", "go on"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let statuses: Vec<String> = goal_records(&fx)
        .iter()
        .map(|g| g["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        statuses,
        ["active", "paused", "active", "active", "achieved"],
        "set, Ctrl-C, run -c, one continuation, achieved"
    );
    let requests = fx.agent_requests();
    let sent = continuations(&requests);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert!(sent[0].contains(GOAL));
}

#[test]
fn rewind_brings_back_the_earlier_plan() {
    let fx = goal_fx(20);
    fx.fake.push_all([
        Reply::plan(&[("first plan step", "in_progress")]),
        Reply::text("planned"),
        Reply::plan(&[
            ("first plan step", "completed"),
            ("second plan step", "in_progress"),
        ]),
        Reply::text("replanned"),
    ]);
    let o = fx.run(&[], "make a plan\nmove on\n/plan\n/rewind\n/plan\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    // `/plan` on stdout, before and after the rewind.
    let second = "plan (1/2 completed, in progress: second plan step):\n  [x] first plan step\n  [>] second plan step";
    let first = "plan (0/1 completed, in progress: first plan step):\n  [>] first plan step";
    let a = out.find(second).unwrap_or_else(|| panic!("{out}"));
    let b = out.rfind(first).unwrap_or_else(|| panic!("{out}"));
    assert!(a < b, "{out}");
    // The checklist was drawn on stderr after each change.
    assert!(
        stderr(&o).contains("[>] second plan step"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_plans_and_goal_updates_are_error_results_and_change_nothing() {
    let fx = goal_fx(20);
    fx.fake.push_all([
        plan_call(),
        Reply::tool_calls([
            (
                "plan",
                json!({"steps": [
                    {"step": "a", "status": "in_progress"},
                    {"step": "b", "status": "in_progress"}
                ]}),
            ),
            ("plan", json!({"steps": [{"step": "a", "status": "done"}]})),
            ("plan", json!({"steps": []})),
            (
                "goal_update",
                json!({"status": "achieved", "evidence": "none needed"}),
            ),
        ]),
        Reply::text("ok then"),
    ]);
    let o = fx.run(&["run", "--json", "plan it"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let results = fx.agent_requests().pop().unwrap().tool_results();
    assert_eq!(results.len(), 5, "{results:#?}");
    assert!(
        results[1].contains("at most one step may be in progress"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("unknown status \"done\""),
        "{}",
        results[2]
    );
    assert!(results[3].contains("`steps` is empty"), "{}", results[3]);
    assert!(results[4].contains("no goal is active"), "{}", results[4]);
    // One plan event (the good call); the plan is still the first one.
    let events = json_lines(&o.stdout);
    assert_eq!(events.iter().filter(|e| e["type"] == "plan").count(), 1);
    let o = fx.run(&["-c"], "/plan\n");
    assert!(
        stdout(&o).contains("[>] fix the CODEWORD-STEP tokenizer"),
        "{}",
        stdout(&o)
    );
    // No goal: goal_update was never offered, and no goal record exists.
    assert!(
        !fx.agent_requests()[0]
            .tool_names()
            .contains(&"goal_update".to_owned())
    );
    assert!(goal_records(&fx).is_empty());
}

#[test]
fn a_task_child_gets_the_plan_tool_and_never_the_goal() {
    let fx = goal_fx(20);
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            json!({"prompt": "look around", "description": "explore", "profile": "explore"}),
        ),
        // The child: it tries goal_update, then answers.
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "child says so"}),
        ),
        Reply::text("child report"),
        // The parent, after the task.
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "parent checked"}),
        ),
        Reply::text("all done"),
    ]);
    let o = fx.run(&["run", "--goal", GOAL], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let requests = fx.agent_requests();
    // Request 1: the parent; 2 and 3: the child.
    let child = &requests[1];
    assert!(
        child.tool_names().contains(&"plan".to_owned()),
        "{:?}",
        child.tool_names()
    );
    assert!(!child.tool_names().contains(&"goal_update".to_owned()));
    let child_results = requests[2].tool_results();
    assert!(
        child_results[0].contains("no goal is active"),
        "{child_results:?}"
    );
    // The child's session file has no goal record; the parent's goal was
    // achieved by the parent's own call.
    let files = fx.session_files();
    assert_eq!(files.len(), 2);
    let goals_in = |p: &std::path::Path| {
        records(p)
            .into_iter()
            .filter(|r| r["type"] == "goal")
            .count()
    };
    let with_goals: Vec<usize> = files.iter().map(|f| goals_in(f)).collect();
    assert!(with_goals.contains(&0), "{with_goals:?}");
    assert!(
        stderr(&o).contains("goal achieved: parent checked"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_repl_continues_visibly_draws_the_plan_and_ctrl_c_pauses_the_goal() {
    let fx = goal_fx(20);
    fx.fake.push_all([
        plan_call(),
        Reply::text("planned"),
        // The first continuation waits: Ctrl-C stops it.
        Reply::text("too late").with_delay(Duration::from_secs(20)),
    ]);
    let tmux = crate::agent_repl::start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the prompt", |p| crate::agent_repl::prompt_count(p) >= 1);
    tmux.send(&format!("/goal {GOAL}"));
    let pane = tmux.wait_pane("the continuation", |p| {
        p.contains("goal: continuing by itself (1 of 20")
    });
    // The checklist was drawn when the plan changed, and the goal was set.
    assert!(
        pane.contains("[>] fix the CODEWORD-STEP tokenizer"),
        "{pane}"
    );
    assert!(pane.contains("[x] read the fixtures"), "{pane}");
    assert!(pane.contains(&format!("goal set: {GOAL}")), "{pane}");
    wait_for(
        "the continuation's request",
        Duration::from_secs(20),
        || fx.agent_requests().len() == 3,
    );
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the pause", |p| {
        p.contains("goal paused: interrupted (Ctrl-C)") && crate::agent_repl::prompt_count(p) >= 2
    });
    tmux.send("/goal");
    tmux.wait_pane("the goal's status", |p| {
        p.contains("status: paused, 1/20 continuation turns used")
    });
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_eq!(goal_records(&fx).last().unwrap()["status"], "paused");
}

#[test]
fn a_bare_goal_keyword_changes_the_goal_and_quoted_text_sets_one() {
    // docs/repl.md#slash-commands: `/goal pause` is the keyword, `/goal
    // "pause the deploy"` and `/goal "pause"` are goal texts. Each goal has
    // one continuation, then its budget is used up.
    let fx = goal_fx(1);
    let o = fx.run(
        &[],
        "/goal \"pause the deploy\"\n/goal pause\n/goal \"pause\"\n/goal pause\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let mut texts: Vec<String> = goal_records(&fx)
        .iter()
        .map(|r| r["text"].as_str().unwrap().to_owned())
        .collect();
    texts.dedup();
    assert_eq!(texts, ["pause the deploy", "pause"]);
    // Each `/goal pause` found the goal out of budget: nothing to pause.
    assert_eq!(
        stderr(&o).matches("nothing to pause").count(),
        2,
        "{}",
        stderr(&o)
    );
    let firsts: Vec<String> = fx
        .agent_requests()
        .iter()
        .flat_map(|r| r.user_texts())
        .filter(|t| !t.starts_with("[eonyx: goal continuation"))
        .fold(Vec::new(), |mut seen, t| {
            if !seen.contains(&t) {
                seen.push(t);
            }
            seen
        });
    assert_eq!(firsts, ["pause the deploy", "pause"]);
}
