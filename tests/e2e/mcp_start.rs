//! Starting MCP servers through the real binary: a server that hangs is
//! given up after its startup timeout while the run goes on, a required
//! one stops the run, an untrusted project cannot start one, commands that
//! need no model start none, a streamable-HTTP server with a bearer token,
//! and the REPL's y / n / always.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use eonyx_tests::mcp_server::{McpHttpServer, TestMcpOptions, test_mcp_bin};
use serde_json::{Value, json};

use crate::agent::*;
use crate::agent_repl::{prompt_count, start_new_repl};
use crate::mcp::{server, tool_results, with_servers};
use crate::util::{json_lines, stderr, stdout};

/// A fixture with the server `first` (a TOML table) and a server `fine`
/// that starts.
fn beside_a_fine_server(first: &str) -> Fx {
    with_servers(&format!("{first}{}", server("fine", &[], "")))
}

/// A command (for `sh -c`) that touches a file, then runs the test MCP
/// server: the file, and the command.
fn marking_server(fx: &Fx) -> (std::path::PathBuf, String) {
    let marker = fx.sb.root.join("server-started");
    let cmd = format!(
        "touch '{}'; exec '{}'",
        marker.display(),
        test_mcp_bin().display()
    );
    (marker, cmd)
}

#[test]
fn a_hanging_server_is_left_out_after_its_startup_timeout_and_the_run_goes_on() {
    let fx = beside_a_fine_server(&server(
        "slow",
        &["--hang-at-start"],
        "startup_timeout_secs = 1",
    ));
    fx.fake.push(Reply::text("answered anyway"));
    let o = fx.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "answered anyway\n");
    assert!(
        stderr(&o).contains("MCP server `slow` could not start: it did not start within 1s (startup_timeout_secs); going on without its tools"),
        "{}",
        stderr(&o)
    );
    let names = fx.chats()[0].tool_names();
    assert!(names.contains(&"mcp__fine__echo".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__slow")),
        "{names:?}"
    );

    // With --json the warning is a warning, and stdout stays JSON.
    fx.fake.push(Reply::text("again"));
    let o = fx.run(&["run", "--json", "hello"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        json_lines(&o.stdout)
            .iter()
            .any(|e| e["type"] == "turn_completed")
    );
}

#[test]
fn a_required_server_that_cannot_start_stops_the_run_with_exit_1() {
    let fx = beside_a_fine_server(&server("must", &["--fail-at-start"], "required = true"));
    let o = fx.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("MCP server `must` is required (required = true) but could not start: the MCP handshake failed"),
        "{err}"
    );
    assert!(
        err.contains("refusing to start (--fail-at-start)"),
        "its stderr: {err}"
    );
    assert!(
        err.contains("set required = false under [mcp_servers.must]"),
        "{err}"
    );
    assert!(fx.chats().is_empty(), "no model request");
    assert!(fx.session_files().is_empty(), "no session");

    let o = fx.run(&["run", "--json", "hello"], "");
    assert_eq!(code(&o), Some(1));
    let events = json_lines(&o.stdout);
    let e = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(e["class"], "mcp");
}

/// A server in an untrusted project's `eonyx.json` never starts: its
/// command would leave a file behind.
#[test]
fn an_untrusted_project_cannot_start_a_server() {
    let fx = Fx::new();
    let (marker, cmd) = marking_server(&fx);
    let project = json!({"mcp_servers": {"proj": {"command": "sh", "args": ["-c", cmd]}}});
    fx.sb.write("work/eonyx.json", project.to_string());
    fx.fake.push(Reply::text("no tools for you"));
    let o = fx.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("ignoring `mcp_servers.proj.args`, `mcp_servers.proj.command` because the project is not trusted"), "{err}");
    assert!(err.contains("eonyx trust"), "{err}");
    assert!(!marker.exists(), "the project's server was started");
    assert!(
        !fx.chats()[0]
            .tool_names()
            .iter()
            .any(|n| n.starts_with("mcp__"))
    );
    let o = fx.run(&["mcp"], "");
    assert!(!marker.exists());
    assert!(
        stderr(&o).contains("no MCP servers configured"),
        "{}",
        stderr(&o)
    );

    // Trusted, it runs.
    let o = fx.run(&["trust"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    fx.fake.push(Reply::text("now with tools"));
    let o = fx.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(marker.exists(), "the trusted project's server started");
    assert!(
        fx.chats()[1]
            .tool_names()
            .contains(&"mcp__proj__echo".to_owned())
    );
}

/// Commands that need no model start no server.
#[test]
fn commands_that_need_no_model_start_no_server() {
    let fx = Fx::new();
    let (marker, cmd) = marking_server(&fx);
    let text = format!(
        "[mcp_servers.m]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
        Value::String(cmd)
    );
    std::fs::write(
        fx.sb.config.join("config.toml"),
        format!(
            "{}\n{text}",
            std::fs::read_to_string(fx.sb.config.join("config.toml")).unwrap()
        ),
    )
    .unwrap();
    for args in [&["sessions"][..], &["config"], &["skills"], &["memory"]] {
        let o = fx.run(args, "");
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
    }
    assert!(
        !marker.exists(),
        "a command without a model started the server"
    );
    // `eonyx context` counts the tools, so it does start them.
    let o = fx.run(&["context"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(marker.exists());
    assert!(
        stderr(&o).contains("; 7 MCP from 1 server, ~"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("fixed request size ~"),
        "{}",
        stderr(&o)
    );
    assert!(fx.chats().is_empty());
}

#[test]
fn a_streamable_http_server_gets_its_bearer_token_and_its_tools_are_called() {
    let http = McpHttpServer::start(TestMcpOptions::default());
    let fx = with_servers(&format!(
        "[mcp_servers.web]\nurl = \"{}\"\nbearer_token_env_var = \"WEB_MCP_TOKEN\"\nheaders = {{ X-Team = \"core\" }}\napproval = \"allow\"\n",
        http.url()
    ));
    fx.fake
        .push(Reply::tool_call(
            "mcp__web__echo",
            json!({"text": "over http"}),
        ))
        .push(Reply::text("done"));
    let mut cmd = fx.cmd(&["run", "call it"]);
    cmd.env("WEB_MCP_TOKEN", "tok-0123456789");
    let o = run_with_stdin(cmd, "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(content(&tool_results(&fx)[0]), "over http");
    let seen = http.request_headers();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|h| {
        h.contains(&("authorization".into(), "Bearer tok-0123456789".into()))
            && h.contains(&("x-team".into(), "core".into()))
    }));
}

#[test]
fn the_repl_asks_yes_no_always_for_mcp_tools() {
    let fx = with_servers(&server("t", &[], ""));
    let echo = |t: &str| Reply::tool_call("mcp__t__echo", json!({"text": t}));
    fx.fake
        .push(echo("refused"))
        .push(Reply::text("not called"))
        .push(echo("once"))
        .push(Reply::text("called once"))
        .push(Reply::tool_calls([
            ("mcp__t__echo", json!({"text": "always 1"})),
            ("mcp__t__echo", json!({"text": "always 2"})),
        ]))
        .push(Reply::text("called twice"));
    let tmux = start_new_repl(&fx);
    tmux.send("call it");
    let pane = tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 1);
    assert!(
        pane.contains(r#"allow: call mcp__t__echo (MCP server `t`) with {"text":"refused"}?"#),
        "{pane}"
    );
    tmux.send_until("n", "the answer", "not called", 2);
    tmux.send("again");
    tmux.wait_pane("the second question", |p| {
        p.matches("[a]lways").count() == 2
    });
    tmux.send_until("y", "the answer", "called once", 3);
    tmux.send("twice");
    tmux.wait_pane("the third question", |p| p.matches("[a]lways").count() == 3);
    tmux.send("a");
    let pane = tmux.wait_pane("the answer", |p| {
        p.contains("called twice") && prompt_count(p) >= 4
    });
    assert_eq!(
        pane.matches("[a]lways").count(),
        3,
        "always: not asked again: {pane}"
    );
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    let r: Vec<String> = tool_results(&fx).iter().map(content).collect();
    assert!(r[0].starts_with("denied:"), "{r:?}");
    assert_eq!(r[1..], ["once", "always 1", "always 2"]);
}

#[test]
fn ctrl_c_while_the_first_request_waits_for_a_server_stops_the_turn_not_the_repl() {
    let fx = beside_a_fine_server(&server(
        "slow",
        &["--hang-at-start"],
        // Far longer than the test: only Ctrl-C ends this wait.
        "startup_timeout_secs = 600",
    ));
    fx.fake.push(Reply::text("never asked"));
    let tmux = start_new_repl(&fx);
    tmux.send("hello");
    tmux.wait_pane("the notice naming the server", |p| {
        p.contains("waiting for MCP server `slow` to start")
    });
    tmux.keys(&["C-c"]);
    let pane = tmux.wait_pane("the interrupt", |p| {
        p.contains("interrupted") && prompt_count(p) >= 2
    });
    // Nothing went to the model: the tools array was not fixed yet.
    assert!(fx.chats().is_empty(), "{pane}");
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}
