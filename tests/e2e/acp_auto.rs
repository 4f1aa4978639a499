//! ACP's `auto` mode (docs/acp.md#modes) through the ACP test client:
//! writes in the project and sandboxed shell commands run without a
//! question; writes outside the project or to `eonyx.json`, and commands
//! that would run unconfined (`tools.sandbox = "off"`), are still asked;
//! `tools.shell = "deny"` and a `PreToolUse` hook's `deny` keep their force,
//! and so does a hook's `ask` (the client is asked).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::acp_util::{AcpClient, Answer};
use crate::agent::Fx;
use crate::hooks::{hook, hooked_with};

/// A session of `fx` switched to `auto`.
fn auto_session(fx: &Fx) -> (AcpClient, String) {
    let mut c = AcpClient::start(fx, &[]);
    c.initialize(json!({}));
    let r = c.ok("session/new", json!({"cwd": fx.sb.work, "mcpServers": []}));
    let s = r["sessionId"].as_str().unwrap().to_owned();
    let offered: Vec<&str> = r["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["ask", "accept-edits", "auto", "read-only"]);
    c.ok(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "auto"}),
    );
    assert_eq!(
        c.wait_update(&s, "current_mode_update")["currentModeId"],
        "auto"
    );
    (c, s)
}

/// The question the client was asked last, as its title says it.
fn last_question(c: &AcpClient) -> String {
    c.asked.last().unwrap()["params"]["toolCall"]["title"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn acp_auto_runs_project_writes_and_sandboxed_commands_unasked_and_asks_the_rest() {
    // Required: a machine where no backend works fails here loudly
    // instead of letting a command run unconfined.
    let fx = Fx::with(|c| {
        c.merge_top_toml("[tools]\nsandbox_required = true\n")
            .unwrap()
    });
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("far.txt");
    fx.fake
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "made.txt", "content": "made\n"}),
        ))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch ran.txt && echo ran"}),
        ))
        .push(Reply::text("both done"))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "eonyx.json", "content": "{\"tools\":{}}\n"}),
        ))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": outside_file, "content": "far\n"}),
        ))
        .push(Reply::text("asked twice"));
    let (mut c, s) = auto_session(&fx);

    let r = c.prompt(&s, "make a file and run a command");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(c.asked.is_empty(), "asked: {:?}", c.asked);
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("made.txt")).unwrap(),
        "made\n"
    );
    assert!(fx.sb.work.join("ran.txt").exists());

    // eonyx.json and a path outside the project: asked (and refused here).
    c.answers.extend([Answer::RejectOnce, Answer::RejectOnce]);
    c.prompt(&s, "change the project config and a far file");
    assert_eq!(c.asked.len(), 2, "asked: {:?}", c.asked);
    assert!(
        c.asked[0]["params"]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("eonyx.json"),
        "{:?}",
        c.asked[0]
    );
    assert!(
        last_question(&c).contains("outside the project"),
        "{:?}",
        c.asked
    );
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("eonyx.json")).unwrap(),
        "{}\n"
    );
    assert!(!outside_file.exists());
    c.finish_ok();
}

#[test]
fn acp_auto_asks_for_an_unsandboxed_command_and_keeps_denials() {
    // tools.sandbox = "off": the command would run unconfined, so it is asked.
    let fx = Fx::with(|c| c.merge_top_toml("[tools]\nsandbox = \"off\"\n").unwrap());
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch off.txt"}),
        ))
        .push(Reply::text("asked"));
    let (mut c, s) = auto_session(&fx);
    c.answers.push_back(Answer::AllowOnce);
    c.prompt(&s, "run it unconfined");
    assert_eq!(c.asked.len(), 1);
    assert!(last_question(&c).contains("touch off.txt"), "{:?}", c.asked);
    assert!(fx.sb.work.join("off.txt").exists());
    c.finish_ok();

    // tools.shell = "deny": refused, nobody asked.
    let fx = Fx::with(|c| c.merge_top_toml("[tools]\nshell = \"deny\"\n").unwrap());
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch no.txt"}),
        ))
        .push(Reply::text("refused"));
    let (mut c, s) = auto_session(&fx);
    c.prompt(&s, "try anyway");
    assert!(c.asked.is_empty(), "asked: {:?}", c.asked);
    assert!(!fx.sb.work.join("no.txt").exists());
    let results = fx.chats().last().unwrap().tool_results();
    assert!(results.join("\n").contains("denied"), "{results:?}");
    c.finish_ok();

    // A PreToolUse hook's deny: refused, nobody asked.
    const DENY: &str = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on this branch"}}'"#;
    let fx = hooked_with(&hook("PreToolUse", "shell", DENY), |c| c);
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch hooked.txt"}),
        ))
        .push(Reply::text("refused"));
    let (mut c, s) = auto_session(&fx);
    c.prompt(&s, "try with the hook");
    assert!(c.asked.is_empty(), "asked: {:?}", c.asked);
    assert!(!fx.sb.work.join("hooked.txt").exists());
    let results = fx.chats().last().unwrap().tool_results();
    assert!(
        results.join("\n").contains("not on this branch"),
        "{results:?}"
    );
    c.finish_ok();
}

#[test]
fn acp_auto_asks_what_an_ask_rule_names_and_refuses_what_a_deny_rule_names() {
    // Sandboxed commands run unasked in `auto`, but a permission rule in the
    // `ask` list still brings the question to the client, and one in the
    // `deny` list refuses without asking.
    let fx = Fx::with(|c| {
        c.merge_top_toml(
            "[tools]\nsandbox_required = true\n[permissions]\nask = [\"shell(touch asked.txt)\"]\ndeny = [\"shell(touch denied.txt)\"]\n",
        )
        .unwrap()
    });
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch asked.txt"}),
        ))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch denied.txt"}),
        ))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch free.txt"}),
        ))
        .push(Reply::text("done"));
    let (mut c, s) = auto_session(&fx);
    c.answers.push_back(Answer::AllowOnce);
    let r = c.prompt(&s, "run three commands");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(c.asked.len(), 1, "asked: {:?}", c.asked);
    assert!(
        last_question(&c).contains("touch asked.txt"),
        "{:?}",
        c.asked
    );
    assert!(fx.sb.work.join("asked.txt").exists());
    assert!(!fx.sb.work.join("denied.txt").exists());
    assert!(fx.sb.work.join("free.txt").exists());
    let results = fx.chats().last().unwrap().tool_results();
    assert!(
        results.join("\n").contains("shell(touch denied.txt)"),
        "{results:?}"
    );
    c.finish_ok();
}

#[test]
fn acp_auto_asks_the_client_what_a_pre_tool_use_hook_said_ask_about() {
    // A sandboxed command and a project write would run unasked in `auto`;
    // a PreToolUse hook's `ask` about them brings the question to the
    // client, which here allows the command and rejects the write. A call
    // the hook says nothing about still runs unasked.
    const ASK: &str = r#"grep -q "keep[.]txt" && exit 0; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check first"}}'"#;
    let fx = hooked_with(&hook("PreToolUse", "shell|write_file", ASK), |c| {
        c.merge_top_toml("[tools]\nsandbox_required = true\n")
            .unwrap()
    });
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch hook-asked.txt"}),
        ))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "hook-asked-write.txt", "content": "no\n"}),
        ))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch keep.txt"}),
        ))
        .push(Reply::text("done"));
    let (mut c, s) = auto_session(&fx);
    c.answers.extend([Answer::AllowOnce, Answer::RejectOnce]);
    let r = c.prompt(&s, "run a command and write a file");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(c.asked.len(), 2, "asked: {:?}", c.asked);
    assert!(
        c.asked[0]["params"]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("touch hook-asked.txt"),
        "{:?}",
        c.asked[0]
    );
    assert!(
        last_question(&c).contains("hook-asked-write.txt"),
        "{:?}",
        c.asked
    );
    assert!(fx.sb.work.join("hook-asked.txt").exists());
    assert!(!fx.sb.work.join("hook-asked-write.txt").exists());
    assert!(fx.sb.work.join("keep.txt").exists());
    let results = fx.chats().last().unwrap().tool_results();
    assert!(results.join("\n").contains("denied"), "{results:?}");
    c.finish_ok();
}
