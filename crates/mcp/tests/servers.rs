//! [`eonyx_mcp::RmcpConnector`] against the real test MCP server
//! (`eonyx_tests::mcp_server`), over stdio and streamable HTTP: the one
//! test of the rmcp layer itself, so a new rmcp version is checked here.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::sync::Arc;

use eonyx_core::McpServerConfig;
use eonyx_core::config::{McpConfig, McpTransport};
use eonyx_core::paths::Env;
use eonyx_core::provider::CancellationToken;
use eonyx_mcp::{Connector, RmcpConnector, ServerState, Servers, Which};
use eonyx_tests::mcp_server::{McpHttpServer, TestMcpOptions, test_mcp_bin};
use serde_json::{Map, json};

fn stdio(name: &str, args: &[&str], env: &[(&str, &str)]) -> McpServerConfig {
    let mut s = McpServerConfig::with_defaults(name);
    s.transport = Some(McpTransport::Stdio {
        command: test_mcp_bin().to_string_lossy().into_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        cwd: None,
    });
    s.startup_timeout_secs = 20;
    s.tool_timeout_secs = 20;
    s
}

fn connector(hidden: &[&str], env: &[(&str, &str)]) -> Arc<dyn Connector> {
    let root = camino::Utf8PathBuf::from_path_buf(std::env::temp_dir()).unwrap();
    Arc::new(RmcpConnector::new(
        Env::from_pairs(env.iter().copied()),
        hidden.iter().map(|h| (*h).to_owned()).collect(),
        root,
    ))
}

fn args(v: serde_json::Value) -> Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_lists_calls_hides_keys_and_reports_a_crash() {
    // A variable every test process has stands in for a provider key.
    assert!(std::env::var_os("PATH").is_some());
    let mut cfg = McpConfig::default();
    cfg.servers
        .insert("t".into(), stdio("t", &[], &[("FROM_CONFIG", "yes")]));
    let mut servers = Servers::start(&cfg, connector(&["PATH"], &[]));
    assert!(servers.wait(Which::All).await.is_empty());
    let tools = servers.tools();
    let names: Vec<&str> = tools[0].1.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["big", "crash", "echo", "env", "fail", "hang", "mixed"]
    );

    let cancel = CancellationToken::new();
    let out = servers
        .call("t", "echo", args(json!({"text": "hi there"})), &cancel)
        .await
        .unwrap();
    assert_eq!((out.text.as_str(), out.is_error), ("hi there", false));

    let out = servers.call("t", "env", Map::new(), &cancel).await.unwrap();
    assert!(out.text.contains("FROM_CONFIG=yes"), "{}", out.text);
    assert!(
        !out.text.lines().any(|l| l.starts_with("PATH=")),
        "hidden: {}",
        out.text
    );

    let out = servers
        .call("t", "mixed", Map::new(), &cancel)
        .await
        .unwrap();
    assert_eq!(
        out.text,
        "before\n[image: image/png, 5 bytes, not shown]\n[resource: file:///r.txt]\ninside the resource"
    );

    let out = servers
        .call("t", "fail", args(json!({"message": "nope"})), &cancel)
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(out.text.ends_with("(isError):\nnope"), "{}", out.text);

    let out = servers
        .call("t", "crash", Map::new(), &cancel)
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.text
            .starts_with("error: MCP server `t` crashed during the call to `crash`"),
        "{}",
        out.text
    );
    assert!(out.text.contains("exit status 3"), "{}", out.text);
    assert_eq!(servers.statuses()[0].state.label(), "crashed");
    let notes = servers.restart_crashed().await;
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].text,
        "MCP server `t` was restarted after it crashed"
    );
    let out = servers
        .call("t", "echo", args(json!({"text": "back"})), &cancel)
        .await
        .unwrap();
    assert_eq!(out.text, "back");
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_says_why() {
    let mut cfg = McpConfig::default();
    cfg.servers
        .insert("bad".into(), stdio("bad", &["--fail-at-start"], &[]));
    let mut missing = McpServerConfig::with_defaults("missing");
    missing.transport = Some(McpTransport::Stdio {
        command: "eonyx-no-such-mcp-server".into(),
        args: vec![],
        env: Default::default(),
        cwd: None,
    });
    cfg.servers.insert("missing".into(), missing);
    let mut servers = Servers::start(&cfg, connector(&[], &[]));
    let w: Vec<String> = servers
        .wait(Which::All)
        .await
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("MCP server `bad` could not start: the MCP handshake failed"),
        "{}",
        w[0]
    );
    assert!(
        w[0].contains("refusing to start (--fail-at-start)"),
        "the stderr tail: {}",
        w[0]
    );
    assert!(
        w[1].contains("cannot run `eonyx-no-such-mcp-server`"),
        "{}",
        w[1]
    );
    assert!(w[1].contains("is it installed and on PATH?"), "{}", w[1]);
    assert!(matches!(
        servers.statuses()[0].state,
        ServerState::Failed(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_gets_the_bearer_token_and_headers() {
    let http = McpHttpServer::start(TestMcpOptions::default());
    let mut s = McpServerConfig::with_defaults("web");
    s.transport = Some(McpTransport::Http {
        url: http.url(),
        headers: [("X-Team".to_owned(), "core".to_owned())].into(),
        bearer_token_env_var: Some("WEB_TOKEN".into()),
    });
    let mut cfg = McpConfig::default();
    cfg.servers.insert("web".into(), s);
    let mut servers = Servers::start(&cfg, connector(&[], &[("WEB_TOKEN", "tok-123")]));
    assert!(servers.wait(Which::All).await.is_empty());
    assert_eq!(servers.tools()[0].1.len(), 7);
    let out = servers
        .call(
            "web",
            "echo",
            args(json!({"text": "over http"})),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "over http");
    let seen = http.request_headers();
    assert!(!seen.is_empty());
    for h in &seen {
        assert!(
            h.contains(&("authorization".into(), "Bearer tok-123".into())),
            "{h:?}"
        );
        assert!(h.contains(&("x-team".into(), "core".into())), "{h:?}");
    }
    servers.shutdown().await;

    // Without the token variable: a start failure naming it.
    let mut servers = Servers::start(&cfg, connector(&[], &[]));
    let w = servers.wait(Which::All).await;
    assert!(
        w[0].text
            .contains("$WEB_TOKEN (its bearer_token_env_var) is not set"),
        "{w:?}"
    );
}
