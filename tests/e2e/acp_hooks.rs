//! A `PreToolUse` hook's `allow` in an ACP session (docs/hooks.md#answers,
//! docs/acp.md#modes): the user's yes without asking the client, within
//! what the session's mode still refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::acp_util::AcpClient;
use crate::hooks::{hook, hooked};

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
