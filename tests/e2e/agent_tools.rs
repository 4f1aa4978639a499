//! Tool loops through the real binary: read_file with its call id, shell
//! approval, cut output, max steps, and the Anthropic tool loop's cache
//! breakpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use camino::Utf8Path;
use eonyx_tests::{FakeConfig, FakeServer, Reply};
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{Sandbox, stderr, stdout};

#[test]
fn read_file_tool_loop_sends_the_file_back_with_the_call_id() {
    let fx = Fx::with_notes("the secret number is 4242\n");
    fx.fake
        .push(read_notes().with_text("Reading."))
        .push(Reply::text("It is 4242."));
    let o = fx.run(&["run", "what is in notes.txt?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "It is 4242.\n");
    assert!(
        stderr(&o).contains("read_file"),
        "the tool call is shown on stderr: {}",
        stderr(&o)
    );

    let chats = fx.chats();
    assert_eq!(chats.len(), 2);
    let msgs = chats[1].messages();
    let assistant = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    let call = &assistant["tool_calls"][0];
    let call_id = call["id"].as_str().unwrap();
    assert_eq!(call["function"]["name"], "read_file");
    let tool = msgs.last().unwrap();
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], call_id);
    assert!(
        content(tool).contains("the secret number is 4242"),
        "{tool}"
    );

    let saved = messages(&fx.session());
    assert_eq!(roles(&saved), ["user", "assistant", "tool", "assistant"]);
    assert_eq!(saved[2]["tool_call_id"], call_id);
    assert_consistent(&fx.session());
}

#[test]
fn shell_is_denied_in_batch_and_allowed_with_the_flag() {
    let fx = Fx::new();
    let cmd = json!({"command": "touch created_by_shell.txt && echo made it"});
    fx.fake
        .push(Reply::tool_call("shell", cmd.clone()))
        .push(Reply::text("could not"));
    let o = fx.run(&[], "make the file\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "could not\n");
    assert!(
        !fx.sb.work.join("created_by_shell.txt").exists(),
        "the command ran"
    );
    let result = fx.chats()[1].messages().last().cloned().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(content(&result).contains("denied"), "{result}");
    assert!(content(&result).contains("--allow-shell"), "{result}");

    // `run` denies too.
    fx.fake
        .push(Reply::tool_call("shell", cmd.clone()))
        .push(Reply::text("still no"));
    let o = fx.run(&["run", "make it"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.sb.work.join("created_by_shell.txt").exists());

    fx.fake
        .push(Reply::tool_call("shell", cmd))
        .push(Reply::text("made"));
    let o = fx.run(&["--allow-shell"], "make the file\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "made\n");
    assert!(
        fx.sb.work.join("created_by_shell.txt").exists(),
        "runs in the project root"
    );
    let result = fx.chats()[5].messages().last().cloned().unwrap();
    let text = content(&result);
    assert!(text.starts_with("exit status: 0"), "{text}");
    assert!(text.contains("made it"), "{text}");
}

#[test]
fn big_tool_output_is_cut_for_the_model_and_kept_whole_in_the_session() {
    let fx = Fx::with(|c| {
        c.merge_top_toml("[tools]\noutput_cap_bytes = 2048\n")
            .unwrap()
    });
    let body: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    fx.sb.write("work/big.txt", &body);
    fx.sb
        .write("outside.txt", "private data outside the project\n");
    fx.fake
        .push(Reply::tool_calls([
            ("read_file", json!({"path": "big.txt"})),
            ("read_file", json!({"path": "../outside.txt"})),
        ]))
        .push(Reply::text("done"));
    let o = fx.run(&[], "read them\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "done\n");

    let sent = fx.chats()[1].messages();
    let tools: Vec<&Value> = sent.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 2);
    let big = content(tools[0]);
    assert!(big.len() < 4096, "not cut: {} bytes", big.len());
    assert!(big.contains("line 0"), "{big}");
    assert!(big.contains("truncated"), "the cut is visible: {big}");
    assert!(!big.contains("line 1999"));
    // Outside the project needs approval, which batch runs do not give.
    let outside = content(tools[1]);
    assert!(!outside.contains("private data"), "{outside}");
    assert!(outside.contains("denied"), "{outside}");

    let saved = messages(&fx.session());
    let saved_big = content(&saved[2]);
    assert!(
        saved_big.contains("line 1999"),
        "the session keeps it whole"
    );
    assert!(!saved_big.contains("truncated"));
}

#[test]
fn max_steps_ends_a_runaway_tool_loop_with_a_notice() {
    let fx = Fx::with(|c| c.top("max_steps", 3));
    fx.sb.write("work/a.txt", "a\n");
    fx.fake
        .set_default_reply(Reply::tool_call("read_file", json!({"path": "a.txt"})));
    let o = fx.run(&["run", "loop forever"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("max_steps"), "{}", stderr(&o));
    assert_eq!(fx.chats().len(), 3);
    let session = fx.session();
    assert_eq!(messages(&session).len(), 1 + 3 * 2);
    assert_consistent(&session);
}

/// `provider = "anthropic"`: a tool loop through the Messages API, with the
/// stable prefix carrying the cache breakpoint and the date line outside it.
#[test]
fn anthropic_tool_loop_marks_the_stable_prefix_for_caching() {
    let sb = Sandbox::new();
    sb.write("work/eonyx.json", "{}\n");
    sb.write("work/notes.txt", "the answer is 42\n");
    sb.write("work/AGENTS.md", "Be brief.\n");
    let fake = FakeServer::start();
    FakeConfig::anthropic(&fake.base_url())
        .set("retries", 0)
        .write(Utf8Path::from_path(&sb.config).unwrap())
        .unwrap();
    fake.push(read_notes());
    fake.push(Reply::text("It says 42."));

    let out = run_with_stdin(
        {
            let mut c = sb.eonyx();
            c.args(["run", "what do my notes say?"]);
            c
        },
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It says 42.\n");

    let reqs = fake.chat_requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.is_anthropic()));
    let blocks = reqs[0].system_blocks();
    assert_eq!(
        blocks.len(),
        2,
        "stable prefix and volatile suffix: {blocks:?}"
    );
    assert_eq!(blocks[0]["cache_control"]["type"], "ephemeral");
    assert!(
        blocks[0]["text"]
            .as_str()
            .unwrap()
            .contains("# Project context")
    );
    assert!(blocks[1].get("cache_control").is_none());
    assert!(
        blocks[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("Current date (UTC): ")
    );
    // The second request answers the tool_use with a tool_result block.
    let msgs = reqs[1].messages();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    let call_id = msgs[msgs.len() - 2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()["id"]
        .clone();
    assert_eq!(result["tool_use_id"], call_id);
    assert!(result.to_string().contains("the answer is 42"));
}
