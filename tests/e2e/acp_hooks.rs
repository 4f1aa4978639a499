//! Hooks in ACP sessions: a `PreToolUse` hook's `allow` (docs/hooks.md#answers,
//! docs/acp.md#modes), the user's yes without asking the client, within
//! what the session's mode still refuses; and a session's `SessionStart`
//! and `SessionEnd`, run as in the REPL (docs/acp.md#hooks).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::acp_util::{AcpClient, reloaded, started};
use crate::agent::Fx;
use crate::hooks::{hook, hooked, script};

/// A hook that allows every call.
const ALLOW: &str =
    r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;

#[test]
fn acp_a_hook_allow_runs_a_command_unasked_but_not_in_read_only_mode() {
    let fx = hooked(&hook("PreToolUse", "", ALLOW));
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch asked.txt"}),
        ))
        .push(Reply::text("made"))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch refused.txt"}),
        ))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "refused-too.txt", "content": "x\n"}),
        ))
        .push(Reply::text("could not"));
    let mut c = AcpClient::start(&fx, &[]);
    c.initialize(json!({}));
    let s = c.new_session(&fx.sb.work, json!([]));

    // Ask mode: the hook's yes stands for the user's; the client is not asked.
    let r = c.prompt(&s, "make a file");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(fx.work_file("asked.txt").exists());
    assert!(c.asked.is_empty(), "asked: {:?}", c.asked);

    // Read-only: refused, whatever the hook says, and nobody is asked.
    c.ok(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "read-only"}),
    );
    let r = c.prompt(&s, "make two more");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(!fx.work_file("refused.txt").exists());
    assert!(!fx.work_file("refused-too.txt").exists());
    assert!(c.asked.is_empty(), "asked: {:?}", c.asked);
    let chats = fx.chats();
    let results = [
        chats[chats.len() - 2].tool_results(),
        chats[chats.len() - 1].tool_results(),
    ];
    for r in &results {
        assert!(r.join("\n").contains("denied"), "{results:?}");
    }
    c.finish_ok();
}

/// A project whose `event` hook appends its input to `NAME.log` (one JSON
/// line each) and prints `said` (context, for `SessionStart`).
fn logging(event: &str, said: &str) -> Fx {
    let fx = hooked(&hook(event, "", &script("log.sh")));
    fx.write_script(
        "log.sh",
        &format!(
            "input=$(cat)\nprintf '%s\\n' \"$input\" >> \"$EONYX_PROJECT_DIR/hooks.log\"\n{said}\n"
        ),
    );
    fx
}

/// The inputs the logging hook was given, in order.
fn inputs(fx: &Fx) -> Vec<Value> {
    std::fs::read_to_string(fx.work_file("hooks.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The text of the last user message sent to the model.
fn last_sent(fx: &Fx) -> String {
    fx.agent_requests()
        .last()
        .unwrap()
        .last_user_text()
        .unwrap()
}

#[test]
fn acp_sessions_run_session_start_on_new_and_load_and_its_context_reaches_the_first_prompt() {
    let fx = logging("SessionStart", "echo 'house rule: tabs, never spaces'");
    fx.fake
        .push_all([Reply::text("noted"), Reply::text("still noted")]);

    // session/new: `startup`, before the session is answered.
    let (mut c, s) = started(&fx);
    let log = inputs(&fx);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["hook_event_name"], "SessionStart");
    assert_eq!(log[0]["source"], "startup");
    assert_eq!(log[0]["session_id"], s.as_str());
    // Its context goes with the first prompt, as in the REPL.
    c.said(&s, "first");
    let sent = last_sent(&fx);
    assert!(sent.contains("first"), "{sent}");
    assert!(
        sent.contains("[context from the SessionStart hook (startup)]")
            && sent.contains("house rule: tabs, never spaces"),
        "{sent}"
    );
    c.finish_ok();

    // session/load: `resume`, its context with the next prompt.
    let (mut c, _, _) = reloaded(&fx, &s);
    let log = inputs(&fx);
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[1]["source"], "resume");
    assert_eq!(log[1]["session_id"], s.as_str());
    c.said(&s, "second");
    let sent = last_sent(&fx);
    assert!(
        sent.contains("[context from the SessionStart hook (resume)]")
            && sent.contains("house rule"),
        "{sent}"
    );
    c.finish_ok();
}

#[test]
fn acp_sessions_run_session_end_when_the_client_goes_and_when_a_load_reopens_them() {
    let fx = logging("SessionEnd", "");
    fx.fake.push(Reply::text("hello"));

    // Open and used: no end yet; stdin closing ends it (`other`).
    let (mut c, s) = started(&fx);
    c.said(&s, "hi");
    assert!(inputs(&fx).is_empty(), "{:?}", inputs(&fx));
    c.finish_ok();
    let log = inputs(&fx);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["hook_event_name"], "SessionEnd");
    assert_eq!(log[0]["reason"], "other");
    assert_eq!(log[0]["session_id"], s.as_str());

    // Loading a session the client already has open ends the open one
    // first (its agent lets the session go), then the reopened one ends
    // with the client.
    let (mut c, _, _) = reloaded(&fx, &s);
    assert_eq!(inputs(&fx).len(), 1);
    c.ok(
        "session/load",
        json!({"sessionId": s, "cwd": fx.sb.work, "mcpServers": []}),
    );
    let log = inputs(&fx);
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[1]["reason"], "other");
    c.finish_ok();
    let log = inputs(&fx);
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log.iter().all(|e| e["session_id"] == s.as_str()), "{log:?}");
}
