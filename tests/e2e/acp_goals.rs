//! Goals, plans and the model in an ACP session
//! (docs/acp.md#goals-plans-and-the-model): `/goal TEXT` runs its first turn
//! and continues by itself until the model reports the goal achieved;
//! `/goal`, `/plan` and `/model` answer in text; a session's goal and model
//! are those of its file.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::acp_util::started;
use crate::agent::*;

const GOAL: &str = "Make CODEWORD-ACPGOAL parse every fixture";

#[test]
fn acp_goal_continues_until_achieved_and_the_commands_answer() {
    let fx = Fx::with(|c| c.merge_top_toml("[goals]\nmax_turns = 5").unwrap());
    fx.fake.push_all([
        // The goal's first turn: a plan, then an answer without goal_update.
        Reply::plan(&[
            ("read the fixtures", "completed"),
            ("fix the tokenizer", "in_progress"),
        ]),
        Reply::text("the tokenizer is half done"),
        // The continuation eonyx writes: the model reports the goal achieved.
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "all 12 fixtures parse"}),
        ),
        Reply::text("done"),
    ]);
    let (mut c, s) = started(&fx);

    let r = c.prompt(&s, &format!("/goal {GOAL}"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let requests = fx.chats();
    assert_eq!(requests.len(), 4, "two turns of two steps each");
    // The goal's text is the first message; the continuation restates it.
    assert_eq!(requests[0].user_texts(), [GOAL]);
    let continuation = requests[2].last_user_text().unwrap();
    assert!(
        continuation.starts_with("[eonyx: goal continuation") && continuation.contains(GOAL),
        "{continuation}"
    );
    assert!(requests[2].tool_names().contains(&"goal_update".to_owned()));
    // The client sees the continuation as a user message.
    let shown: Vec<String> = c
        .updates_of(&s, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(shown, std::slice::from_ref(&continuation));
    assert!(c.answer_text(&s).contains("the tokenizer is half done"));
    assert_eq!(c.updates_of(&s, "plan").len(), 1);
    // Set, the continuation counted, achieved: in the session file.
    let goals: Vec<serde_json::Value> = records(&fx.session())
        .into_iter()
        .filter(|r| r["type"] == "goal")
        .collect();
    let statuses: Vec<&str> = goals
        .iter()
        .map(|g| g["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["active", "active", "achieved"], "{goals:?}");
    assert_eq!(goals[1]["turns_used"], 1);

    // The commands are advertised.
    let offered = c.updates_of(&s, "available_commands_update");
    let names: Vec<&str> = offered[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for name in ["goal", "plan", "model"] {
        assert!(names.contains(&name), "{names:?}");
    }

    // `/goal`, `/plan` and `/model` answer without calling the model.
    c.forget_seen();
    let r = c.prompt(&s, "/goal");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let text = c.answer_text(&s);
    assert!(text.contains(GOAL) && text.contains("achieved"), "{text}");
    c.forget_seen();
    c.prompt(&s, "/plan");
    let plan = c.updates_of(&s, "plan");
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0]["entries"][1]["content"], "fix the tokenizer");
    assert_eq!(plan[0]["entries"][1]["status"], "in_progress");
    assert!(c.answer_text(&s).contains("1/2"), "{}", c.answer_text(&s));
    c.forget_seen();
    c.prompt(&s, "/model");
    let text = c.answer_text(&s);
    assert!(text.starts_with("model "), "{text}");
    assert!(text.contains("models: "), "{text}");
    c.forget_seen();
    // A command's own reason is its reply (docs/acp.md#slash-commands).
    c.forget_seen();
    let r = c.prompt(&s, "/model no-such-model");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let text = c.answer_text(&s);
    assert!(text.contains("no-such-model"), "{text}");
    assert_eq!(fx.chats().len(), 4, "no command called the model");

    c.finish_ok();
}

#[test]
fn acp_cancel_during_a_goal_continuation_ends_cancelled_and_pauses_the_goal() {
    let fx = Fx::new();
    fx.fake.push(Reply::text("the first step is done"));
    // The continuation's answer would come far too late.
    fx.fake
        .set_default_reply(Reply::text("too late").with_delay(std::time::Duration::from_secs(20)));
    let (mut c, s) = started(&fx);
    let id = c.request(
        "session/prompt",
        json!({"sessionId": s, "prompt": [{"type": "text", "text": format!("/goal {GOAL}")}]}),
    );
    // The continuation is shown, and its turn waits on the model.
    c.wait_update(&s, "user_message_chunk");
    c.notify("session/cancel", json!({"sessionId": s}));
    let r = c.wait(id);
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert_consistent(&fx.session());
    let goals: Vec<serde_json::Value> = records(&fx.session())
        .into_iter()
        .filter(|r| r["type"] == "goal")
        .collect();
    let last = goals.last().unwrap();
    assert_eq!(last["status"], "paused", "{goals:?}");
    assert!(
        last["reason"].as_str().unwrap().contains("cancel"),
        "{last}"
    );
    c.finish_ok();
}
