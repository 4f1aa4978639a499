//! A `task`'s child in an ACP session works as its parent does: the
//! client's file system (the editor's unsaved buffers), the client's MCP
//! servers from `session/new`, and the session's mode and questions, which
//! name the `task` call.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use eonyx_tests::mcp_server::test_mcp_bin;
use serde_json::json;

use crate::acp_util::{AcpClient, Answer};
use crate::agent::*;
use crate::tasks::{child_requests, parent_requests, task};

#[test]
fn acp_a_task_child_reads_through_the_client_and_calls_its_mcp_servers() {
    let fx = Fx::replying([
        Reply::tool_call("task", task("Read and echo.", "look", None)),
        Reply::tool_call("read_file", json!({"path": "notes.txt"})),
        Reply::tool_call("mcp__editor__echo", json!({"text": "from the child"})),
        Reply::text("the child read 777"),
        Reply::text("all done"),
    ]);
    fx.sb.write("work/notes.txt", "saved on disk: 111\n");
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({"fs": {"readTextFile": true, "writeTextFile": true}}));
    let servers = json!([{"name": "editor", "command": test_mcp_bin(), "args": [], "env": []}]);
    let s = c.new_session(&fx.sb.work, servers);
    let path = fx.sb.work.canonicalize().unwrap().join("notes.txt");
    let path = path.to_str().unwrap().to_owned();
    c.buffers
        .insert(path.clone(), "unsaved buffer: 777\n".to_owned());
    c.answers.push_back(Answer::AllowOnce);

    let r = c.prompt(&s, "look into it");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let child = child_requests(&fx);
    assert_eq!(child.len(), 3, "{:#?}", fx.chats());
    assert!(
        child[0]
            .tool_names()
            .contains(&"mcp__editor__echo".to_owned()),
        "the client's server: {:?}",
        child[0].tool_names()
    );
    // The buffer, read through the editor, not the disk.
    let read = child[1].tool_results().join("\n");
    assert!(read.contains("unsaved buffer: 777"), "{read}");
    assert!(
        c.seen
            .iter()
            .any(|m| m["method"] == "fs/read_text_file" && m["params"]["path"] == path.as_str()),
        "read through the client"
    );
    assert!(
        child[2]
            .tool_results()
            .join("\n")
            .contains("from the child"),
        "{:?}",
        child[2].tool_results()
    );
    // The MCP call was asked about once, naming the task's call.
    assert_eq!(c.asked.len(), 1);
    let task_call = c
        .updates_of(&s, "tool_call")
        .into_iter()
        .find(|u| u["kind"] == "think")
        .unwrap();
    let asked = &c.asked[0]["params"]["toolCall"];
    assert_eq!(asked["toolCallId"], task_call["toolCallId"]);
    assert!(asked["title"].as_str().unwrap().contains("look"), "{asked}");
    assert_eq!(parent_requests(&fx).len(), 2);
    assert_eq!(c.answer_text(&s), "all done");
    c.finish_ok();
}

#[test]
fn acp_read_only_mode_holds_for_a_task_child_whatever_the_flags_allow() {
    let fx = Fx::replying([
        Reply::tool_call("task", task("Make a file.", "make", None)),
        Reply::tool_call("shell", json!({"command": "touch made.txt"})),
        Reply::tool_call(
            "write_file",
            json!({"path": "written.txt", "content": "x\n"}),
        ),
        Reply::text("could not"),
        Reply::text("the child could not"),
    ]);
    let mut c = AcpClient::start(&fx, &["--allow-shell", "--allow-write"]);
    c.initialize(json!({}));
    let s = c.new_session(&fx.sb.work, json!([]));
    c.ok(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "read-only"}),
    );
    let r = c.prompt(&s, "make files");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(!fx.sb.work.join("made.txt").exists());
    assert!(!fx.sb.work.join("written.txt").exists());
    assert!(c.asked.is_empty(), "refused, not asked: {:?}", c.asked);
    let child = child_requests(&fx);
    assert_eq!(child.len(), 3, "{:#?}", fx.chats());
    for results in [child[1].tool_results(), child[2].tool_results()] {
        assert!(results.join("\n").contains("denied"), "{results:?}");
    }
    c.finish_ok();
}
