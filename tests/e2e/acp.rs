//! `eonyx acp` driven as an editor drives it, against the fake provider:
//! initialize, a session with a streamed answer, bad input answered with
//! JSON-RPC errors while serving goes on, several sessions at once,
//! load with replay, cancel, stdin closing mid-turn, slash commands and
//! skills, a compaction. Tool calls, permissions, modes, prompts with
//! files and MCP servers are in `acp_tools.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::time::Duration;

use eonyx_tests::{FAKE_CONTEXT_WINDOW, Reply};
use serde_json::json;

use crate::acp_util::{AcpClient, reloaded, started};
use crate::agent::*;

#[test]
fn acp_initialize_new_session_and_a_streamed_answer() {
    let fx = Fx::replying([Reply::text("Hello from eonyx, streamed.")]);
    let mut c = AcpClient::start(&fx, &[]);
    let init = c.initialize(json!({}));
    assert_eq!(init["protocolVersion"], 1, "{init}");
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    assert_eq!(caps["promptCapabilities"]["image"], true, "{init}");
    assert_eq!(
        caps["promptCapabilities"]["embeddedContext"], true,
        "{init}"
    );
    assert_eq!(caps["mcpCapabilities"]["http"], true, "{init}");
    assert_eq!(init["agentInfo"]["name"], "eonyx", "{init}");

    let s = c.new_session(&fx.sb.work, json!([]));
    let reply = c.prompt(&s, "say hello");
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let meta = &reply["result"]["_meta"]["eonyx"];
    assert!(
        meta["ctx"].as_str().unwrap().starts_with("{ctx "),
        "{reply}"
    );
    assert_eq!(meta["contextWindow"], FAKE_CONTEXT_WINDOW, "{reply}");

    assert_eq!(c.answer_text(&s), "Hello from eonyx, streamed.");
    let usage = c.updates_of(&s, "usage_update");
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0]["size"], FAKE_CONTEXT_WINDOW);
    assert!(usage[0]["used"].as_u64().unwrap() > 0, "{usage:?}");
    // The commands arrived after the session existed.
    let commands = c.updates_of(&s, "available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in [
        "compact", "status", "context", "memory", "remember", "skills", "rename",
    ] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }

    let (code, stderr, rest) = c.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    // The session is an ordinary eonyx session with the client's id.
    let file = fx.session();
    assert_eq!(session_id_of(&file), s);
    assert_eq!(roles(&messages(&file)), ["user", "assistant"]);
    assert_eq!(fx.chats()[0].last_user_text().as_deref(), Some("say hello"));
}

#[test]
fn acp_malformed_input_gets_json_rpc_errors_and_serving_goes_on() {
    let fx = Fx::replying([Reply::text("still here")]);
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({}));

    c.send_line("this is not JSON");
    let e = c.next().unwrap();
    assert_eq!(e["error"]["code"], -32700, "{e}");

    let e = c.call("session/teleport", json!({}));
    assert_eq!(e["error"]["code"], -32601, "{e}");

    let e = c.call("session/new", json!({"cwd": 5, "mcpServers": []}));
    assert_eq!(e["error"]["code"], -32602, "{e}");

    let e = c.call(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("relative/dir"),
        "{e}"
    );

    let e = c.prompt("20260101T000000-abcdef12", "hello?");
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session 20260101T000000-abcdef12"),
        "{e}"
    );

    let e = c.call(
        "session/load",
        json!({"sessionId": "20260101T000000-abcdef12", "cwd": fx.sb.work, "mcpServers": []}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("20260101T000000-abcdef12"),
        "{e}"
    );
    assert!(
        fx.session_files().is_empty(),
        "a failed load made a session"
    );

    // Still serving.
    let s = c.new_session(&fx.sb.work, json!([]));
    let r = c.prompt(&s, "are you there?");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(c.answer_text(&s), "still here");
    c.finish_ok();
}

#[test]
fn acp_sessions_run_side_by_side_and_a_slow_one_blocks_no_other() {
    // The first request's answer is held until the second request
    // arrived: if session A blocked session B, B's request never would.
    let fx = Fx::replying([
        Reply::text("slow answer for A").hold_until(2),
        Reply::text("quick answer for B"),
    ]);
    let (mut c, a) = started(&fx);
    let b = c.new_session(&fx.sb.work, json!([]));
    assert_ne!(a, b);
    let id_a = c.request(
        "session/prompt",
        json!({"sessionId": a, "prompt": [{"type": "text", "text": "A"}]}),
    );
    wait_for("A's request at the fake", Duration::from_secs(30), || {
        fx.chats().len() == 1
    });
    let id_b = c.request(
        "session/prompt",
        json!({"sessionId": b, "prompt": [{"type": "text", "text": "B"}]}),
    );
    let r = c.wait(id_a);
    assert_eq!(
        fx.chats().len(),
        2,
        "B's request reached the fake while A's turn was still running"
    );
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let r = c.wait(id_b);
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(c.answer_text(&a), "slow answer for A");
    assert_eq!(c.answer_text(&b), "quick answer for B");
    c.finish_ok();
    assert_eq!(fx.session_files().len(), 2);
}

#[test]
fn acp_load_replays_the_history_and_continues_the_same_file() {
    let fx = Fx::replying([
        Reply::tool_call("read_file", json!({"path": "notes.txt"})).with_text("Let me look."),
        Reply::text("It says 4242."),
        Reply::text("Still 4242."),
    ]);
    fx.sb.write("work/notes.txt", "the number is 4242\n");
    let (mut c, s) = started(&fx);
    c.prompt(&s, "what is in notes.txt?");
    c.finish_ok();

    let (mut c, r, kinds) = reloaded(&fx, &s);
    assert!(r.get("modes").is_some(), "{r}");
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ],
        "replayed before the load was answered"
    );
    let updates = c.updates(&s);
    assert_eq!(updates[0]["content"]["text"], "what is in notes.txt?");
    assert_eq!(updates[2]["kind"], "read");
    assert_eq!(updates[3]["status"], "completed");
    assert_eq!(updates[4]["content"]["text"], "It says 4242.");

    let r = c.prompt(&s, "and now?");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    c.finish_ok();
    // One file, continued; the model saw the whole conversation.
    let file = fx.session();
    assert_eq!(
        roles(&messages(&file)),
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let last = fx.chats().last().cloned().unwrap();
    assert!(
        last.all_text().contains("the number is 4242"),
        "history sent"
    );
}

#[test]
fn acp_cancel_stops_the_turn_and_the_session_file_is_complete() {
    let fx = Fx::replying([
        Reply::text("this answer comes far too late").with_delay(Duration::from_secs(20)),
        Reply::text("after the cancel"),
    ]);
    let (mut c, s) = started(&fx);
    let id = c.request(
        "session/prompt",
        json!({"sessionId": s, "prompt": [{"type": "text", "text": "take your time"}]}),
    );
    wait_for("the request at the fake", Duration::from_secs(30), || {
        fx.chats().len() == 1
    });
    c.notify("session/cancel", json!({"sessionId": s}));
    let r = c.wait(id);
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert_consistent(&fx.session());

    let r = c.prompt(&s, "go on");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(c.answer_text(&s).ends_with("after the cancel"));
    c.finish_ok();
    assert_consistent(&fx.session());
}

#[test]
fn acp_stdin_closing_mid_turn_ends_cleanly_with_the_file_complete() {
    let fx = Fx::replying([
        Reply::tool_call("read_file", json!({"path": "a.txt"})),
        Reply::text("never sent").with_delay(Duration::from_secs(20)),
    ]);
    fx.sb.write("work/a.txt", "a\n");
    let (mut c, s) = started(&fx);
    c.request(
        "session/prompt",
        json!({"sessionId": s, "prompt": [{"type": "text", "text": "read a"}]}),
    );
    wait_for(
        "the second request at the fake",
        Duration::from_secs(30),
        || fx.chats().len() == 2,
    );
    c.finish_ok();
    assert_consistent(&fx.session());
    assert_eq!(
        roles(&messages(&fx.session())),
        ["user", "assistant", "tool"]
    );
}

#[test]
fn acp_slash_commands_skills_and_a_compaction() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.sb.write(
        "work/.agents/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Ship the shop.\n---\n\n1. Run the tests.\n",
    );
    fx.fake
        .set_summarizer(|_| Reply::text("SUMMARY: alpha then beta."));
    fx.fake
        .push_all([Reply::text("A"), Reply::text("B"), Reply::text("deploying")]);
    let (mut c, s) = started(&fx);
    let commands = c.wait_update(&s, "available_commands_update");
    assert!(
        commands["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "deploy" && c["description"].as_str().unwrap().contains("Ship")),
        "{commands:?}"
    );
    c.prompt(&s, "alpha");
    c.prompt(&s, "beta");
    c.forget_seen();

    let r = c.prompt(&s, "/compact");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let shown = c.answer_text(&s);
    assert!(shown.contains("compacted (manual)"), "{shown}");
    let comp: Vec<_> = records(&fx.session())
        .into_iter()
        .filter(|r| r["type"] == "compaction")
        .collect();
    assert_eq!(comp.len(), 1);
    c.forget_seen();

    let r = c.prompt(&s, "/status");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let shown = c.answer_text(&s);
    assert!(shown.contains("compactions: 1"), "{shown}");
    assert!(shown.contains(&s), "{shown}");

    c.prompt(&s, "/deploy to staging");
    let sent = fx.chats().last().unwrap().last_user_text().unwrap();
    assert!(sent.contains("Follow the skill `deploy`"), "{sent}");
    assert!(sent.contains("to staging"), "{sent}");
    c.finish_ok();
    assert_eq!(fx.chats().iter().filter(|r| r.is_summarizer()).count(), 1);
}

#[test]
fn acp_compaction_is_a_compaction_update_for_clients_that_announce_it() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.fake
        .set_summarizer(|_| Reply::text("SUMMARY: one, two."));
    fx.fake.push_all([Reply::text("1"), Reply::text("2")]);
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({"session": {"compaction": {}}}));
    let s = c.new_session(&fx.sb.work, json!([]));
    c.prompt(&s, "one");
    c.prompt(&s, "two");
    c.prompt(&s, "/compact");
    let updates = c.updates_of(&s, "compaction_update");
    let statuses: Vec<&str> = updates
        .iter()
        .map(|u| u["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"], "{updates:?}");
    assert_eq!(updates[0]["compactionId"], updates[1]["compactionId"]);
    assert!(
        updates[1]["summary"][0]["text"]
            .as_str()
            .unwrap()
            .contains("SUMMARY: one, two."),
        "{updates:?}"
    );
    assert!(!c.answer_text(&s).contains("compacted"));
    c.finish_ok();
}

#[test]
fn acp_list_resume_and_fork_map_to_the_store() {
    let fx = Fx::replying([
        Reply::text("first answer"),
        Reply::text("resumed answer"),
        Reply::text("forked answer"),
    ]);
    let (mut c, s) = started(&fx);
    c.prompt(&s, "first question");
    let listed = c.ok("session/list", json!({"cwd": fx.sb.work}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [s.as_str()], "{listed}");
    assert!(listed["sessions"][0]["updatedAt"].is_string(), "{listed}");
    c.finish_ok();

    // Resume: no replay, the same file goes on.
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({}));
    c.ok(
        "session/resume",
        json!({"sessionId": s, "cwd": fx.sb.work, "mcpServers": []}),
    );
    assert!(c.updates_of(&s, "user_message_chunk").is_empty());
    c.prompt(&s, "second question");
    assert_eq!(messages(&fx.session()).len(), 4);

    // Fork: a new session with the history; the original is untouched.
    let forked = c.ok(
        "session/fork",
        json!({"sessionId": s, "cwd": fx.sb.work, "mcpServers": []}),
    );
    let f = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(f, s);
    c.prompt(&f, "third question");
    let last = fx.chats().last().cloned().unwrap();
    assert!(
        last.all_text().contains("second question"),
        "the fork has the history"
    );
    c.finish_ok();
    let files = fx.session_files();
    assert_eq!(files.len(), 2);
    let original = files.iter().find(|p| session_id_of(p) == s).unwrap();
    assert_eq!(messages(original).len(), 4, "the original is untouched");
}
