//! `session/cancel` that comes early, as editors send it: right behind the
//! prompt (before its turn started), for a prompt still waiting behind
//! another, and while a permission question is open. Each prompt ends
//! `cancelled`, and the session file keeps what the user wrote and a
//! result for every tool call. (A cancel mid-stream is in `acp.rs`.) And
//! prompts queued together are taken in the order they came.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::time::Duration;

use eonyx_tests::Reply;
use serde_json::json;

use crate::acp_util::{Answer, started};
use crate::agent::*;

/// The user messages' text in the session file.
fn user_texts(fx: &Fx) -> Vec<String> {
    messages(&fx.session())
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content)
        .collect()
}

#[test]
fn acp_cancel_right_behind_prompts_ends_them_cancelled_and_keeps_what_the_user_wrote() {
    // Whatever of the two prompts reaches the fake waits there.
    let fx = Fx::new();
    fx.fake.set_default_reply(
        Reply::text("this answer comes far too late").with_delay(Duration::from_secs(20)),
    );
    let (mut c, s) = started(&fx);
    // Two prompts and the cancel in one go, as an editor whose user typed
    // twice and pressed stop: the second waits for the first; neither
    // has necessarily started when the cancel arrives.
    let prompt = |text: &str| json!({"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": s, "prompt": [{"type": "text", "text": text}]}});
    let mut first = prompt("first question");
    first["id"] = json!(101);
    let mut second = prompt("second question");
    second["id"] = json!(102);
    let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": s}});
    c.send_line(&format!("{first}\n{second}\n{cancel}"));
    for id in [101, 102] {
        let r = c.wait(id);
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    }
    assert_consistent(&fx.session());
    assert_eq!(user_texts(&fx), ["first question", "second question"]);

    // The next turn sends them, then the new message.
    fx.fake.push(Reply::text("after the cancel"));
    let r = c.prompt(&s, "go on");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(c.answer_text(&s).ends_with("after the cancel"));
    let sent = fx.chats().last().unwrap().all_text();
    let at = |t: &str| {
        sent.find(t)
            .unwrap_or_else(|| panic!("{t} not sent: {sent}"))
    };
    assert!(at("first question") < at("second question"));
    assert!(at("second question") < at("go on"));
    c.finish_ok();
    assert_consistent(&fx.session());
    assert_eq!(
        user_texts(&fx),
        ["first question", "second question", "go on"]
    );
}

#[test]
fn acp_cancel_while_a_permission_question_is_open() {
    let fx = Fx::replying([
        Reply::tool_call("shell", json!({"command": "touch made.txt"})),
        Reply::text("after the cancel"),
    ]);
    let (mut c, s) = started(&fx);
    c.answers.push_back(Answer::Hold);
    let id = c.request(
        "session/prompt",
        json!({"sessionId": s, "prompt": [{"type": "text", "text": "make a file"}]}),
    );
    while c.held.is_empty() {
        c.next().expect("eonyx acp exited before asking");
    }
    c.notify("session/cancel", json!({"sessionId": s}));
    let r = c.wait(id);
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert!(!fx.sb.work.join("made.txt").exists());
    let updates = c.updates_of(&s, "tool_call_update");
    assert_eq!(updates.last().unwrap()["status"], "failed");
    // The client answers the open question `cancelled`, as the protocol
    // asks of it; the agent has moved on and keeps serving.
    let asked = c.held.remove(0);
    c.reply(&asked["id"], json!({"outcome": {"outcome": "cancelled"}}));

    let saved = messages(&fx.session());
    assert_eq!(roles(&saved), ["user", "assistant", "tool"]);
    assert_eq!(content(&saved[0]), "make a file");
    assert!(content(&saved[2]).contains("interrupted"), "{}", saved[2]);

    let r = c.prompt(&s, "go on");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(c.answer_text(&s).ends_with("after the cancel"));
    assert_eq!(c.asked.len(), 1, "asked once");
    c.finish_ok();
    assert_consistent(&fx.session());
    assert!(!fx.sb.work.join("made.txt").exists());
}

/// Prompts written in one go, as an editor queues them while a turn runs,
/// are taken in the order they came: each turn sends its own prompt after
/// the ones before it, and the session file keeps them in that order.
#[test]
fn acp_prompts_sent_together_are_taken_in_the_order_they_came() {
    let fx = Fx::new();
    fx.fake.set_default_reply(Reply::text("ok"));
    let (mut c, s) = started(&fx);
    let texts: Vec<String> = (1..=12).map(|n| format!("prompt number {n}")).collect();
    let lines: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            json!({"jsonrpc": "2.0", "id": 200 + i, "method": "session/prompt", "params": {"sessionId": s, "prompt": [{"type": "text", "text": text}]}}).to_string()
        })
        .collect();
    c.send_line(&lines.join("\n"));
    for i in 0..texts.len() {
        let r = c.wait(200 + i as u64);
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    }
    let sent: Vec<String> = fx
        .agent_requests()
        .iter()
        .map(|r| r.last_user_text().unwrap())
        .collect();
    assert_eq!(sent, texts);
    assert_eq!(user_texts(&fx), texts);
    c.finish_ok();
}
