//! Calling MCP tools through the real binary: approval in batch runs and
//! `eonyx run`, the output cap (whole in the session file), the server's
//! environment without provider keys, `isError`, the tool timeout, a
//! crash mid-call and the restart at the next turn, and deferred schemas
//! with `mcp_describe` / `mcp_call`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::mcp::{TEST_TOOLS, server, tool_results, with_servers, with_servers_and};
use crate::util::{stderr, stdout};

#[test]
fn mcp_calls_are_denied_in_batch_and_run_unless_allowed() {
    let fx = with_servers(&format!(
        "{}{}{}",
        server("ask", &[], ""),
        server("open", &[], "approval = \"allow\""),
        server("closed", &[], "approval = \"deny\"")
    ));
    let calls = || {
        Reply::tool_calls([
            ("mcp__ask__echo", json!({"text": "asked"})),
            ("mcp__open__echo", json!({"text": "allowed by config"})),
            ("mcp__closed__echo", json!({"text": "never"})),
        ])
    };
    fx.fake.push(calls()).push(Reply::text("batch done"));
    let o = fx.run(&[], "go\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let r = tool_results(&fx);
    assert!(content(&r[0]).starts_with("denied: MCP tool calls need approval; run eonyx with --allow-mcp or set approval = \"allow\" under [mcp_servers.ask]"), "{}", content(&r[0]));
    assert_eq!(r[0]["is_error"], true);
    assert_eq!(content(&r[1]), "allowed by config");
    assert!(
        content(&r[2]).contains("approval = \"deny\" for MCP server `closed`"),
        "{}",
        content(&r[2])
    );
    // What the model was sent says the same.
    let sent = fx.chats()[1].tool_results();
    assert!(sent[0].contains("--allow-mcp"), "{sent:?}");

    // `run` denies too; --allow-mcp allows "ask", never "deny".
    fx.fake.push(calls()).push(Reply::text("run done"));
    let o = fx.run(&["run", "--allow-mcp", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let sent = fx.chats()[3].tool_results();
    assert_eq!(sent[0], "asked");
    assert_eq!(sent[1], "allowed by config");
    assert!(sent[2].starts_with("denied:"), "{sent:?}");
}

#[test]
fn big_results_are_cut_for_the_model_and_kept_whole_in_the_session() {
    let fx = with_servers_and(&server("t", &[], ""), |c| {
        c.merge_top_toml("[tools]\noutput_cap_bytes = 2048\n")
            .unwrap()
    });
    fx.fake
        .push(Reply::tool_call("mcp__t__big", json!({"bytes": 60000})))
        .push(Reply::text("read it"));
    let o = fx.run(&["--allow-mcp"], "big\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let sent = &fx.chats()[1].tool_results()[0];
    assert!(sent.len() < 4096, "{} bytes sent", sent.len());
    assert!(sent.starts_with("line 0\n"), "{sent}");
    assert!(
        sent.contains("[output truncated:"),
        "the cut is visible: {sent}"
    );
    let saved = content(&tool_results(&fx)[0]);
    assert_eq!(saved.len(), 60000, "the session keeps it whole");
    assert!(!saved.contains("truncated"));
}

#[test]
fn a_stdio_server_never_sees_the_provider_keys_and_gets_its_env() {
    let fx = with_servers_and(&server("t", &[], "env = { FROM_CONFIG = \"yes\" }"), |c| {
        c.set("api_key_env", "CORP_LLM_TOKEN")
    });
    fx.fake
        .push(Reply::tool_calls([
            ("mcp__t__env", json!({})),
            // A server that echoes a key back: scrubbed before it is saved or sent.
            (
                "mcp__t__echo",
                json!({"text": "the key is sk-corp-0123456789abcdef"}),
            ),
        ]))
        .push(Reply::text("seen"));
    let mut cmd = fx.cmd(&["--allow-mcp"]);
    cmd.env("CORP_LLM_TOKEN", "sk-corp-0123456789abcdef")
        .env("OPENAI_API_KEY", "sk-openai-0123456789abcdef")
        .env("HARMLESS_VAR", "still-here");
    let o = run_with_stdin(cmd, "env\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let env = content(&tool_results(&fx)[0]);
    let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(names.contains(&"HARMLESS_VAR"), "{env}");
    assert!(names.contains(&"FROM_CONFIG"), "{env}");
    for key in ["CORP_LLM_TOKEN", "OPENAI_API_KEY"] {
        assert!(!names.contains(&key), "{key} reached the server: {env}");
    }
    assert!(!env.contains("sk-"), "{env}");
    assert!(
        !env.contains("[redacted"),
        "nothing needed scrubbing: {env}"
    );
    let echoed = content(&tool_results(&fx)[1]);
    assert_eq!(echoed, "the key is [redacted: CORP_LLM_TOKEN]");
    let sent = fx.chats()[1].tool_results();
    assert_eq!(sent[1], "the key is [redacted: CORP_LLM_TOKEN]");
}

#[test]
fn is_error_and_timeouts_are_error_results_that_say_which() {
    let fx = with_servers(&server("t", &[], "tool_timeout_secs = 1"));
    fx.fake
        .push(Reply::tool_calls([
            ("mcp__t__fail", json!({"message": "no such repo"})),
            ("mcp__t__hang", json!({})),
            ("mcp__t__mixed", json!({})),
            ("mcp__t__nope", json!({})),
        ]))
        .push(Reply::text("noted"));
    let o = fx.run(&["--allow-mcp"], "try\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let r = tool_results(&fx);
    assert_eq!(
        content(&r[0]),
        "error: MCP tool `fail` of server `t` reported an error (isError):\nno such repo"
    );
    assert_eq!(r[0]["is_error"], true);
    assert_eq!(
        content(&r[1]),
        "error: MCP tool `hang` of server `t` did not answer within 1s (tool_timeout_secs), so the call was cancelled"
    );
    assert_eq!(
        content(&r[2]),
        "before\n[image: image/png, 5 bytes, not shown]\n[resource: file:///r.txt]\ninside the resource"
    );
    assert!(
        content(&r[3])
            .starts_with("error: `mcp__t__nope` is not an MCP tool; available: mcp__t__big,"),
        "{}",
        content(&r[3])
    );
    // The hung call did not take the server down: a later call works.
    fx.fake
        .push(Reply::tool_call("mcp__t__echo", json!({"text": "alive"})))
        .push(Reply::text("ok"));
    let o = fx.run(&["--allow-mcp", "-c"], "again\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(content(tool_results(&fx).last().unwrap()), "alive");
}

#[test]
fn a_server_that_crashes_mid_call_is_an_error_result_and_restarts_at_the_next_turn() {
    let fx = with_servers(&server("t", &[], ""));
    fx.fake
        .push(Reply::tool_calls([
            ("mcp__t__crash", json!({})),
            ("mcp__t__echo", json!({"text": "too soon"})),
        ]))
        .push(Reply::text("it crashed"))
        .push(Reply::tool_call(
            "mcp__t__echo",
            json!({"text": "back again"}),
        ))
        .push(Reply::text("it is back"));
    let o = fx.run(&["--allow-mcp"], "crash it\nand now\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "it crashed\nit is back\n");
    let r = tool_results(&fx);
    let crash = content(&r[0]);
    assert!(crash.starts_with("error: MCP server `t` crashed during the call to `crash` (the process ended: exit status 3)"), "{crash}");
    assert!(
        crash.ends_with("it is restarted at the next turn"),
        "{crash}"
    );
    assert!(
        content(&r[1]).contains("crashed earlier"),
        "{}",
        content(&r[1])
    );
    assert!(
        stderr(&o).contains("MCP server `t` was restarted after it crashed"),
        "{}",
        stderr(&o)
    );
    assert_eq!(content(&r[2]), "back again");
    // The tools array stayed the same through the crash and the restart.
    let reqs = fx.agent_requests();
    let first = raw_array(&reqs[0].raw_body, "tools");
    assert!(
        reqs.iter()
            .all(|q| raw_array(&q.raw_body, "tools") == first)
    );
    assert_consistent(&fx.session());
}

/// Past `mcp.defer_above_tokens` the schemas stay out of the tools array:
/// `mcp_describe` and `mcp_call` after the built-ins, the tools listed in
/// the stable prefix, and a call through `mcp_call` works.
#[test]
fn past_the_limit_schemas_are_deferred_and_mcp_call_works() {
    let fx = with_servers_and(&server("t", &["--pad", "40"], ""), |c| {
        c.merge_top_toml("[mcp]\ndefer_above_tokens = 2000\n")
            .unwrap()
    });
    fx.fake
        .push(Reply::tool_call(
            "mcp_describe",
            json!({"tool": "mcp__t__echo"}),
        ))
        .push(Reply::tool_call(
            "mcp_call",
            json!({"tool": "mcp__t__echo", "arguments": {"text": "through mcp_call"}}),
        ))
        .push(Reply::tool_call(
            "mcp_call",
            json!({"tool": "mcp__t__missing"}),
        ))
        .push(Reply::text("done"));
    let o = fx.run(&[], "use it\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    let names = reqs[0].tool_names();
    assert_eq!(
        names[names.len() - 2..],
        ["mcp_describe".to_owned(), "mcp_call".to_owned()]
    );
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    let system = reqs[0].system_text();
    assert!(system.contains("\n# MCP tools\n"), "{system}");
    assert!(
        system.contains("\n- mcp__t__echo — Repeat the text.\n"),
        "{system}"
    );
    assert!(
        system.contains("- mcp__t__pad_039 — Padding tool number 39"),
        "{system}"
    );
    // The listing sits before the date line: in the cached stable prefix.
    assert!(system.find("# MCP tools").unwrap() < system.find("Current date (UTC)").unwrap());

    let r = tool_results(&fx);
    let describe = content(&r[0]);
    assert!(
        describe.starts_with("mcp__t__echo (tool `echo` of MCP server `t`)"),
        "{describe}"
    );
    assert!(describe.contains("\"text\""), "the schema: {describe}");
    // mcp_call asks like any MCP call: batch without the flag denies it…
    assert!(
        content(&r[1]).starts_with("denied: MCP tool calls need approval"),
        "{}",
        content(&r[1])
    );
    assert!(
        content(&r[2]).contains("is not an MCP tool"),
        "{}",
        content(&r[2])
    );

    // …and with it, the tool runs.
    fx.fake
        .push(Reply::tool_call(
            "mcp_call",
            json!({"tool": "mcp__t__echo", "arguments": {"text": "through mcp_call"}}),
        ))
        .push(Reply::text("done"));
    let o = fx.run(&["--allow-mcp", "-c"], "again\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(
        content(tool_results(&fx).last().unwrap()),
        "through mcp_call"
    );
    let reqs = fx.agent_requests();
    let first = raw_array(&reqs[0].raw_body, "tools");
    assert!(
        reqs.iter()
            .all(|q| raw_array(&q.raw_body, "tools") == first)
    );

    // `eonyx mcp` says it is deferred and what it costs.
    let o = fx.run(&["mcp", "--json"], "");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["deferred"], true);
    assert!(
        v["tokens"].as_u64().unwrap() < v["schema_tokens"].as_u64().unwrap() / 4,
        "{v}"
    );
    assert_eq!(
        v["servers"][0]["tools"].as_array().unwrap().len(),
        TEST_TOOLS.len() + 40
    );
}
