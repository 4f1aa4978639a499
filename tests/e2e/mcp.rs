//! MCP servers through the real binary, against the test MCP server
//! (`eonyx_tests::mcp_server`, the `eonyx-test-mcp` binary over stdio) and
//! the fake provider: `eonyx mcp`, the tools' names and order, one tools
//! array for every request of a run, a changed tool list applied at the
//! next compaction; and the helpers `mcp_calls.rs` and `mcp_start.rs`
//! share.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::mcp_server::test_mcp_bin;
use eonyx_tests::{FakeConfig, Reply};
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{stderr, stdout};

/// `[mcp_servers.NAME]` running the test server with `args`, plus `extra`
/// TOML lines for the table.
pub(crate) fn server(name: &str, args: &[&str], extra: &str) -> String {
    // A JSON string is a TOML basic string.
    let q = |s: &str| Value::String(s.to_owned()).to_string();
    let args: Vec<String> = args.iter().map(|a| q(a)).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\n{extra}\n",
        q(&test_mcp_bin().to_string_lossy()),
        args.join(", ")
    )
}

/// A fixture whose global config adds `servers` (TOML tables).
pub(crate) fn with_servers(servers: &str) -> Fx {
    with_servers_and(servers, |c| c)
}

/// [`with_servers`] with more config.
pub(crate) fn with_servers_and(servers: &str, more: impl FnOnce(FakeConfig) -> FakeConfig) -> Fx {
    let servers = servers.to_owned();
    Fx::with(move |c| more(c.merge_top_toml(&servers).unwrap()))
}

/// The tools the test server offers, sorted.
pub(crate) const TEST_TOOLS: [&str; 7] = ["big", "crash", "echo", "env", "fail", "hang", "mixed"];

/// The tool results of a session file, in order.
pub(crate) fn tool_results(fx: &Fx) -> Vec<Value> {
    messages(&fx.session())
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .collect()
}

#[test]
fn eonyx_mcp_lists_state_tools_and_tokens() {
    let fx = with_servers(&format!(
        "{}{}",
        server("test", &[], "disabled_tools = [\"crash\"]"),
        server("off", &[], "enabled = false")
    ));
    let o = fx.run(&["mcp"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("SERVER  TRANSPORT  STATE"), "{out}");
    let off = lines.next().unwrap();
    assert!(off.starts_with("off     stdio      disabled"), "{out}");
    let test = lines.next().unwrap();
    assert!(test.starts_with("test    stdio      ready"), "{out}");
    assert!(test.contains("6 (+1 off)"), "{out}");
    assert!(out.contains("\ntest:\n  mcp__test__big "), "{out}");
    assert!(!out.contains("mcp__test__crash"), "disabled: {out}");
    assert!(
        stderr(&o).contains("MCP: 6 tools, ~"),
        "the total on stderr: {}",
        stderr(&o)
    );

    let o = fx.run(&["mcp", "--json"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let s = &v["servers"][1];
    assert_eq!(s["name"], "test");
    assert_eq!(s["state"], "ready");
    assert_eq!(s["tools"].as_array().unwrap().len(), 6);
    assert_eq!(s["tools"][0]["name"], "mcp__test__big");
    assert_eq!(s["tools"][0]["tool"], "big");
    let per_tool: u64 = s["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tokens"].as_u64().unwrap())
        .sum();
    assert!(per_tool > 0);
    assert_eq!(s["tokens"].as_u64(), Some(per_tool));
    assert_eq!(v["tokens"].as_u64(), Some(per_tool));
    assert_eq!(v["deferred"], false);
    assert_eq!(v["servers"][0]["state"], "disabled");
    // No model was asked.
    assert!(fx.chats().is_empty());
}

/// Built-ins first, then the MCP tools sorted by name; and every request
/// of a run (tool loops, several turns) sends the same tools array, byte
/// for byte.
#[test]
fn mcp_tools_follow_the_built_ins_sorted_and_the_tools_array_never_changes() {
    let fx = with_servers(&format!(
        "{}{}",
        server("zeta", &[], ""),
        server("alpha-v2", &[], "")
    ));
    fx.fake
        .push(Reply::tool_call(
            "mcp__zeta__echo",
            json!({"text": "first"}),
        ))
        .push(Reply::tool_call("list_dir", json!({})))
        .push(Reply::text("one"))
        .push(Reply::tool_calls([
            ("mcp__alpha-v2__echo", json!({"text": "second"})),
            ("mcp__zeta__fail", json!({"message": "x"})),
        ]))
        .push(Reply::text("two"))
        .push(Reply::text("three"));
    let o = fx.run(&["--allow-mcp"], "a\nb\nc\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "one\ntwo\nthree\n");

    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 6);
    let names = reqs[0].tool_names();
    let first_mcp = names.iter().position(|n| n.starts_with("mcp__")).unwrap();
    let builtin = &names[..first_mcp];
    assert_eq!(builtin[0], "read_file");
    assert!(builtin.iter().all(|n| !n.starts_with("mcp")), "{names:?}");
    let mut expected: Vec<String> = TEST_TOOLS
        .iter()
        .map(|t| format!("mcp__alpha-v2__{t}"))
        .collect();
    expected.extend(TEST_TOOLS.iter().map(|t| format!("mcp__zeta__{t}")));
    assert_eq!(&names[first_mcp..], expected.as_slice());
    let first = raw_array(&reqs[0].raw_body, "tools");
    for r in &reqs[1..] {
        assert_eq!(
            raw_array(&r.raw_body, "tools"),
            first,
            "the tools array changed"
        );
    }
    // The calls reached the right servers.
    let results = tool_results(&fx);
    assert_eq!(content(&results[0]), "first");
    assert_eq!(content(&results[2]), "second");
    assert_consistent(&fx.session());
}

/// A server's `tools/list_changed` does not touch the tools array of the
/// requests that follow; the new list is sent from the first request after
/// the next compaction.
#[test]
fn a_changed_tool_list_applies_at_the_next_compaction() {
    let fx = with_servers_and(&server("t", &["--change-tools"], ""), |c| {
        c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap()
    });
    fx.fake
        .set_summarizer(|_| Reply::text("SUMMARY: the user asked twice."));
    fx.fake
        .push(Reply::tool_call("mcp__t__echo", json!({"text": "x"})))
        .push(Reply::text("one"))
        .push(Reply::text("two"))
        .push(Reply::text("three"));
    let o = fx.run(&["--allow-mcp"], "a\nb\n/compact\nc\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 4);
    let has_new = |i: usize| {
        reqs[i]
            .tool_names()
            .contains(&"mcp__t__added_later".to_owned())
    };
    // The call made the server change its list; the next requests keep the old one.
    assert!(!has_new(0) && !has_new(1) && !has_new(2));
    assert_eq!(
        raw_array(&reqs[0].raw_body, "tools"),
        raw_array(&reqs[2].raw_body, "tools")
    );
    assert!(
        has_new(3),
        "after the compaction: {:?}",
        reqs[3].tool_names()
    );
    assert!(
        stderr(&o).contains("the MCP tools changed (7 before, 8 now)"),
        "{}",
        stderr(&o)
    );
}

/// `/status` (batch, `--json`) has each server's state and what their
/// tools cost.
#[test]
fn status_shows_the_mcp_servers() {
    let fx = with_servers(&format!(
        "{}{}",
        server("t", &[], ""),
        server("broken", &["--fail-at-start"], "")
    ));
    fx.fake.push(Reply::text("hi"));
    let o = fx.run(&["--json"], "hello\n/status\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let events = crate::util::json_lines(&o.stdout);
    let st = events.iter().find(|e| e["type"] == "status").unwrap();
    let servers = st["mcp_servers"].as_array().unwrap();
    assert_eq!(servers[0]["name"], "broken");
    assert_eq!(servers[0]["state"], "failed");
    assert!(
        servers[0]["reason"].as_str().unwrap().contains("handshake"),
        "{st}"
    );
    assert_eq!(servers[1]["name"], "t");
    assert_eq!(servers[1]["state"], "ready");
    assert_eq!(servers[1]["tools"], 7);
    assert!(st["mcp_tokens"].as_u64().unwrap() > 0);
    assert_eq!(st["mcp_deferred"], false);
    // The warning about the broken one was an event too.
    assert!(events.iter().any(|e| {
        e["type"] == "warning"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("MCP server `broken` could not start")
    }));
}
