//! `eonyx acp` tool calls as an editor sees them: `tool_call` and
//! `tool_call_update` (kind, title, locations, raw input, status,
//! content, diffs), `session/request_permission` answered each way,
//! the modes, prompts with files, resources and images, the client's
//! MCP servers, and `plan` updates (live and replayed by a load).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use eonyx_tests::mcp_server::test_mcp_bin;
use serde_json::{Value, json};

use crate::acp_util::{AcpClient, Answer, reloaded, started};
use crate::agent::*;

/// The `tool_call` and `tool_call_update`s of `session`, in order.
fn tool_updates(c: &AcpClient, session: &str) -> Vec<Value> {
    c.updates(session)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .collect()
}

#[test]
fn acp_tool_call_and_its_updates() {
    let fx = Fx::replying([
        Reply::tool_call("read_file", json!({"path": "notes.txt", "offset": 1}))
            .with_text("Reading."),
        Reply::text("It is 4242."),
    ]);
    fx.sb.write("work/notes.txt", "the secret number is 4242\n");
    let (mut c, s) = started(&fx);
    let r = c.prompt(&s, "what is in notes.txt?");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let calls = tool_updates(&c, &s);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call["sessionUpdate"], "tool_call");
    assert_eq!(call["kind"], "read");
    assert_eq!(call["title"], "Read notes.txt");
    assert_eq!(call["status"], "in_progress");
    assert_eq!(call["rawInput"]["path"], "notes.txt");
    let work = fx.sb.work.canonicalize().unwrap();
    assert_eq!(
        call["locations"][0]["path"],
        json!(work.join("notes.txt")),
        "{call}"
    );
    assert_eq!(call["locations"][0]["line"], 1);
    let done = &calls[1];
    assert_eq!(done["toolCallId"], call["toolCallId"]);
    assert_eq!(done["status"], "completed");
    assert!(
        done["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("the secret number is 4242"),
        "{done}"
    );
    // The call id is the session's own.
    let saved = messages(&fx.session());
    assert_eq!(saved[2]["tool_call_id"], call["toolCallId"]);
    assert_eq!(c.answer_text(&s), "Reading.It is 4242.");
}

#[test]
fn acp_permission_answered_each_way_and_always_lasts_the_session() {
    let shell = |file: &str| {
        Reply::tool_call(
            "shell",
            json!({"command": format!("touch {file} && echo made {file}")}),
        )
    };
    let fx = Fx::replying([
        shell("rejected.txt"),
        Reply::text("not made"),
        shell("once.txt"),
        Reply::text("made once"),
        shell("always1.txt"),
        Reply::text("made, always"),
        shell("always2.txt"),
        Reply::text("made again without asking"),
    ]);
    let (mut c, s) = started(&fx);
    c.answers
        .extend([Answer::RejectOnce, Answer::AllowOnce, Answer::AllowAlways]);

    c.prompt(&s, "make rejected.txt");
    assert!(!fx.sb.work.join("rejected.txt").exists());
    let asked = c.asked[0]["params"].clone();
    let kinds: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    let calls = tool_updates(&c, &s);
    assert_eq!(calls[0]["kind"], "execute");
    assert_eq!(
        asked["toolCall"]["toolCallId"], calls[0]["toolCallId"],
        "the question names the call"
    );
    assert!(
        asked["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("touch rejected.txt"),
        "{asked}"
    );
    // The call was announced before it was asked about.
    let pos = |pred: &dyn Fn(&Value) -> bool| c.seen.iter().position(pred).unwrap();
    assert!(
        pos(&|m| m["params"]["update"]["sessionUpdate"] == "tool_call")
            < pos(&|m| m["method"] == "session/request_permission")
    );
    assert_eq!(calls[1]["status"], "failed");

    c.prompt(&s, "make once.txt");
    assert!(fx.sb.work.join("once.txt").exists());
    c.prompt(&s, "make always1.txt");
    assert!(fx.sb.work.join("always1.txt").exists());
    c.prompt(&s, "make always2.txt");
    assert!(fx.sb.work.join("always2.txt").exists());
    assert_eq!(c.asked.len(), 3, "allow always: not asked again");

    // "Always" lasts for the session only.
    let other = c.new_session(&fx.sb.work, json!([]));
    fx.fake
        .push(shell("other.txt"))
        .push(Reply::text("asked again"));
    c.answers.push_back(Answer::RejectAlways);
    c.prompt(&other, "make other.txt");
    assert_eq!(c.asked.len(), 4);
    assert!(!fx.sb.work.join("other.txt").exists());
    fx.fake
        .push(shell("other2.txt"))
        .push(Reply::text("refused without asking"));
    c.prompt(&other, "make other2.txt");
    assert_eq!(c.asked.len(), 4, "reject always: not asked again");
    assert!(!fx.sb.work.join("other2.txt").exists());
    c.finish_ok();
}

#[test]
fn acp_edits_show_a_diff_and_the_modes_decide_what_is_asked() {
    let fx = Fx::replying([
        Reply::tool_call(
            "edit_file",
            json!({"path": "src.txt", "old_string": "one", "new_string": "uno"}),
        ),
        Reply::text("edited"),
    ]);
    fx.sb.write("work/src.txt", "one\ntwo\n");
    let (mut c, s) = started(&fx);
    c.answers.push_back(Answer::AllowOnce);
    c.prompt(&s, "translate one");
    assert_eq!(c.asked.len(), 1);
    let q = &c.asked[0]["params"]["toolCall"];
    assert_eq!(q["kind"], "edit", "{q}");
    assert!(
        q["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("+uno"),
        "{q}"
    );
    let calls = tool_updates(&c, &s);
    assert_eq!(calls[0]["kind"], "edit");
    assert_eq!(calls[0]["title"], "Edit src.txt");
    let diff = &calls[1]["content"][0];
    assert_eq!(diff["type"], "diff", "{diff}");
    assert_eq!(diff["oldText"], "one\ntwo\n");
    assert_eq!(diff["newText"], "uno\ntwo\n");
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("src.txt")).unwrap(),
        "uno\ntwo\n"
    );
    // The undo record is kept as in the REPL.
    let saved = messages(&fx.session());
    assert!(saved[2].get("undo").is_some(), "{}", saved[2]);

    // accept-edits: writes go through without a question.
    let r = c.ok(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "accept-edits"}),
    );
    assert!(r.is_object());
    let mode = c.wait_update(&s, "current_mode_update");
    assert_eq!(mode["currentModeId"], "accept-edits");
    fx.fake
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        ))
        .push(Reply::text("written"));
    c.prompt(&s, "write new.txt");
    assert_eq!(c.asked.len(), 1, "not asked in accept-edits");
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("new.txt")).unwrap(),
        "fresh\n"
    );

    // read-only: refused without a question.
    c.ok(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "read-only"}),
    );
    fx.fake
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "no.txt", "content": "x"}),
        ))
        .push(Reply::text("refused"));
    c.prompt(&s, "write no.txt");
    assert_eq!(c.asked.len(), 1);
    assert!(!fx.sb.work.join("no.txt").exists());

    let e = c.call(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "yolo"}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    c.finish_ok();
}

#[test]
fn acp_prompt_with_a_file_link_an_embedded_resource_and_an_image_is_one_turn() {
    let fx = Fx::replying([Reply::text("seen all three")]);
    fx.sb.write("work/lib.rs", "fn answer() -> u32 { 42 }\n");
    // A 1x1 png.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let (mut c, s) = started(&fx);
    let link = format!("file://{}", fx.sb.work.join("lib.rs").display());
    let r = c.call(
        "session/prompt",
        json!({"sessionId": s, "prompt": [
            {"type": "text", "text": "explain "},
            {"type": "resource_link", "uri": link, "name": "lib.rs"},
            {"type": "resource", "resource": {"uri": "file:///buffer/unsaved.rs", "text": "let unsaved = 7;"}},
            {"type": "image", "mimeType": "image/png", "data": png},
        ]}),
    );
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let sent = fx.chats()[0].messages().last().cloned().unwrap();
    let text = content(&sent);
    assert!(text.starts_with("explain @"), "{text}");
    assert!(text.contains("fn answer() -> u32 { 42 }"), "{text}");
    assert!(text.contains("Attached: /buffer/unsaved.rs"), "{text}");
    assert!(text.contains("let unsaved = 7;"), "{text}");
    assert!(sent.to_string().contains(png), "the image is sent: {sent}");
    assert_eq!(
        messages(&fx.session()).len(),
        2,
        "one user message, one answer"
    );

    // A missing file is a clear error and nothing is sent.
    let r = c.call(
        "session/prompt",
        json!({"sessionId": s, "prompt": [
            {"type": "resource_link", "uri": "file:///nowhere/missing.rs", "name": "missing.rs"},
        ]}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing.rs"),
        "{r}"
    );
    assert_eq!(fx.chats().len(), 1);
    c.finish_ok();
}

#[test]
fn acp_mcp_servers_from_session_new_serve_that_session() {
    let fx = Fx::replying([
        Reply::tool_call("mcp__editor__echo", json!({"text": "hello over MCP"})),
        Reply::text("echoed"),
    ]);
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({}));
    let servers = json!([{
        "name": "editor",
        "command": test_mcp_bin(),
        "args": [],
        "env": [],
    }]);
    let s = c.new_session(&fx.sb.work, servers);
    c.answers.push_back(Answer::AllowOnce);
    let r = c.prompt(&s, "echo something");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let tools = fx.chats()[0].tool_names();
    assert!(tools.contains(&"mcp__editor__echo".to_owned()), "{tools:?}");
    assert_eq!(c.asked.len(), 1, "an MCP tool is asked about");
    let calls = tool_updates(&c, &s);
    assert_eq!(calls[0]["title"], "mcp__editor__echo");
    assert_eq!(calls[1]["status"], "completed", "{calls:?}");
    assert!(
        calls[1]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("hello over MCP"),
        "{calls:?}"
    );

    // Another session without servers does not get them.
    let other = c.new_session(&fx.sb.work, json!([]));
    fx.fake.push(Reply::text("plain"));
    c.prompt(&other, "hi");
    let tools = fx.chats().last().unwrap().tool_names();
    assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");
    c.finish_ok();
}

#[test]
fn acp_file_tools_use_the_clients_file_system_when_offered() {
    let fx = Fx::replying([
        Reply::tool_call("read_file", json!({"path": "notes.txt"})),
        Reply::text("the buffer says 777"),
        Reply::tool_call(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "777", "new_string": "778"}),
        ),
        Reply::text("edited the buffer"),
    ]);
    fx.sb.write("work/notes.txt", "saved on disk: 111\n");
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({"fs": {"readTextFile": true, "writeTextFile": true}}));
    let s = c.new_session(&fx.sb.work, json!([]));
    let path = fx.sb.work.canonicalize().unwrap().join("notes.txt");
    let path = path.to_str().unwrap().to_owned();
    // The editor holds an unsaved change.
    c.buffers
        .insert(path.clone(), "unsaved buffer: 777\n".to_owned());

    c.prompt(&s, "what is in notes.txt?");
    let result = fx.chats()[1].tool_results().join("\n");
    assert!(result.contains("unsaved buffer: 777"), "{result}");
    assert!(!result.contains("111"), "{result}");

    c.answers.push_back(Answer::AllowOnce);
    c.prompt(&s, "make it 778");
    assert_eq!(
        c.writes,
        [(path.clone(), "unsaved buffer: 778\n".to_owned())],
        "written through the editor"
    );
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("notes.txt")).unwrap(),
        "saved on disk: 111\n",
        "the disk is the editor's to save"
    );
    // The question showed the diff of the buffer; the update a diff too.
    let q = &c.asked[0]["params"]["toolCall"];
    assert!(
        q["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("+unsaved buffer: 778"),
        "{q}"
    );
    let diff = tool_updates(&c, &s)
        .into_iter()
        .find_map(|u| (u["content"][0]["type"] == "diff").then(|| u["content"][0].clone()))
        .unwrap();
    assert_eq!(diff["oldText"], "unsaved buffer: 777\n");
    assert_eq!(diff["newText"], "unsaved buffer: 778\n");
    // The undo record keeps what the buffer held, as for the disk.
    let saved = messages(&fx.session());
    let tool = saved.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(tool.get("undo").is_some(), "{tool}");
    c.finish_ok();
}

#[test]
fn acp_plan_update_carries_every_step_and_a_refused_plan_sends_none() {
    let fx = Fx::replying([
        Reply::plan(&[
            ("read the code", "completed"),
            ("fix the bug", "in_progress"),
            ("run the tests", "pending"),
        ]),
        // Two steps in progress: refused, the plan stays as it was.
        Reply::plan(&[("a", "in_progress"), ("b", "in_progress")]),
        Reply::text("planned"),
    ]);
    let (mut c, s) = started(&fx);
    let r = c.prompt(&s, "make a plan");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let plans: Vec<Value> = c
        .updates(&s)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1, "{plans:?}");
    let entries = plans[0]["entries"].as_array().unwrap();
    let got: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("read the code", "completed"),
            ("fix the bug", "in_progress"),
            ("run the tests", "pending")
        ]
    );
    assert!(
        entries.iter().all(|e| e["priority"] == "medium"),
        "{entries:?}"
    );
}

#[test]
fn acp_load_replays_each_plan_where_it_was_set() {
    let fx = Fx::replying([
        Reply::plan(&[("read the code", "in_progress"), ("fix the bug", "pending")]),
        Reply::plan(&[
            ("read the code", "completed"),
            ("fix the bug", "in_progress"),
        ]),
        Reply::text("on it"),
    ]);
    let (mut c, s) = started(&fx);
    c.prompt(&s, "make a plan");
    let live: Vec<Value> = c.updates_of(&s, "plan");
    assert_eq!(live.len(), 2);
    c.finish_ok();

    let (c, _, kinds) = reloaded(&fx, &s);
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "plan",
            "tool_call",
            "tool_call_update",
            "plan",
            "agent_message_chunk",
        ]
    );
    // The same plans as the live session sent: the client ends with the
    // current one.
    assert_eq!(c.updates_of(&s, "plan"), live);
    let last = &live[1]["entries"];
    assert_eq!(last[0]["status"], "completed");
    assert_eq!(last[1]["status"], "in_progress");
    c.finish_ok();
}

#[test]
fn acp_shows_web_fetch_as_a_fetch_tool_call() {
    // A loopback address nobody listed: refused before any connection.
    let url = "http://127.0.0.1:9/docs";
    let fx = Fx::replying([
        Reply::tool_call("web_fetch", json!({ "url": url })),
        Reply::text("Could not read it."),
    ]);
    let (mut c, s) = started(&fx);
    let r = c.prompt(&s, "read the docs page");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let calls = tool_updates(&c, &s);
    let call = &calls[0];
    assert_eq!(call["sessionUpdate"], "tool_call");
    assert_eq!(call["kind"], "fetch", "{call}");
    assert_eq!(call["title"], format!("Fetch {url}"));
    assert_eq!(call["rawInput"]["url"], url);
    let done = calls.last().unwrap();
    assert_eq!(done["status"], "failed", "{done}");
}
