//! [`Servers`] against scripted in-process servers, in tokio's paused time
//! (so timeouts are exact and instant).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use eonyx_core::McpServerConfig;
use eonyx_core::config::{McpConfig, McpTransport};
use eonyx_core::provider::{BoxFuture, CancellationToken};
use serde_json::{Map, Value, json};

use super::*;
use crate::client::{CallOutput, Connector, McpClient, McpError, McpTool};

/// How a scripted server behaves.
#[derive(Clone, Default)]
struct Script {
    /// Never finishes its start.
    hang_at_start: bool,
    fail_at_start: Option<String>,
    tools: Vec<&'static str>,
}

struct FakeClient {
    tools: Mutex<Vec<&'static str>>,
    alive: AtomicBool,
    changed: AtomicBool,
}

impl McpClient for FakeClient {
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<McpTool>, McpError>> {
        Box::pin(async move {
            Ok(self
                .tools
                .lock()
                .unwrap()
                .iter()
                .map(|n| McpTool {
                    name: (*n).into(),
                    description: String::new(),
                    input_schema: json!({"type": "object"}),
                })
                .collect())
        })
    }

    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
        Box::pin(async move {
            match tool {
                "hang" => std::future::pending().await,
                "crash" => {
                    self.alive.store(false, Ordering::SeqCst);
                    Err(McpError::Closed {
                        detail: " (the process ended: exit status 3)".into(),
                    })
                }
                "fail" => Ok(CallOutput {
                    text: "bad input".into(),
                    is_error: true,
                }),
                _ => Ok(CallOutput {
                    text: format!("{tool} {}", Value::Object(arguments)),
                    is_error: false,
                }),
            }
        })
    }

    fn take_tools_changed(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst)
    }

    fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    fn end_detail(&self) -> String {
        String::new()
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

#[derive(Default)]
struct FakeConnector {
    scripts: Mutex<std::collections::HashMap<String, Script>>,
    starts: AtomicU32,
    clients: Mutex<Vec<Arc<FakeClient>>>,
}

impl Connector for FakeConnector {
    fn connect<'a>(
        &'a self,
        server: &'a McpServerConfig,
    ) -> BoxFuture<'a, Result<Arc<dyn McpClient>, McpError>> {
        Box::pin(async move {
            self.starts.fetch_add(1, Ordering::SeqCst);
            let script = self.scripts.lock().unwrap()[&server.name].clone();
            if script.hang_at_start {
                std::future::pending::<()>().await;
            }
            if let Some(why) = script.fail_at_start {
                return Err(McpError::Start(why));
            }
            let c = Arc::new(FakeClient {
                tools: Mutex::new(script.tools),
                alive: AtomicBool::new(true),
                changed: AtomicBool::new(false),
            });
            self.clients.lock().unwrap().push(c.clone());
            Ok(c as Arc<dyn McpClient>)
        })
    }
}

fn config(servers: &[(&str, bool)]) -> McpConfig {
    let mut c = McpConfig::default();
    for (name, required) in servers {
        let mut s = McpServerConfig::with_defaults(*name);
        s.transport = Some(McpTransport::Stdio {
            command: "x".into(),
            args: vec![],
            env: Default::default(),
            cwd: None,
        });
        s.required = *required;
        s.startup_timeout_secs = 5;
        s.tool_timeout_secs = 7;
        c.servers.insert((*name).into(), s);
    }
    c
}

fn connector(scripts: &[(&str, Script)]) -> Arc<FakeConnector> {
    let c = FakeConnector::default();
    for (n, s) in scripts {
        c.scripts.lock().unwrap().insert((*n).into(), s.clone());
    }
    Arc::new(c)
}

fn texts(notes: Vec<StartNote>) -> Vec<String> {
    notes.into_iter().map(|n| n.text).collect()
}

fn ok(tools: &[&'static str]) -> Script {
    Script {
        tools: tools.to_vec(),
        ..Script::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_hanging_or_failing_server_is_left_out_with_a_warning_naming_it() {
    let conn = connector(&[
        ("good", ok(&["b", "a"])),
        (
            "slow",
            Script {
                hang_at_start: true,
                ..Script::default()
            },
        ),
        (
            "broken",
            Script {
                fail_at_start: Some("cannot run `nope`".into()),
                ..Script::default()
            },
        ),
    ]);
    let mut cfg = config(&[("good", false), ("slow", false), ("broken", false)]);
    cfg.servers.get_mut("good").unwrap().disabled_tools = vec!["b".into()];
    let mut s = Servers::start(&cfg, conn.clone());
    let started = tokio::time::Instant::now();
    let warnings = texts(s.wait(Which::All).await);
    // The wait ends at the slow server's own deadline, not later.
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(
        warnings,
        [
            "MCP server `broken` could not start: cannot run `nope`; going on without its tools",
            "MCP server `slow` could not start: it did not start within 5s (startup_timeout_secs); going on without its tools",
        ]
    );
    let tools = s.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].0, "good");
    assert_eq!(tools[0].1.len(), 1, "b is disabled");
    let st = s.statuses();
    let labels: Vec<(&str, &str, usize, usize)> = st
        .iter()
        .map(|x| (x.name.as_str(), x.state.label(), x.tools, x.hidden))
        .collect();
    assert_eq!(
        labels,
        [
            ("broken", "failed", 0, 0),
            ("good", "ready", 1, 1),
            ("slow", "failed", 0, 0)
        ]
    );
    assert!(s.required_failures().is_empty());
}

#[tokio::test(start_paused = true)]
async fn required_servers_are_waited_for_first_and_their_failure_is_reported() {
    let conn = connector(&[
        (
            "must",
            Script {
                fail_at_start: Some("boom".into()),
                ..Script::default()
            },
        ),
        ("later", ok(&["t"])),
    ]);
    let mut s = Servers::start(&config(&[("must", true), ("later", false)]), conn);
    let w = s.wait(Which::Required).await;
    assert_eq!(w.len(), 1);
    assert!(w[0].failed);
    assert_eq!(s.required_failures(), [("must".into(), "boom".into())]);
    // The other one was not waited for yet.
    assert_eq!(s.statuses()[0].state, ServerState::Starting);
    assert!(s.wait(Which::All).await.is_empty());
    assert_eq!(s.statuses()[0].state, ServerState::Ready);
}

#[tokio::test(start_paused = true)]
async fn calls_time_out_report_is_error_and_a_crash_restarts_once() {
    let conn = connector(&[("srv", ok(&["echo", "hang", "crash", "fail"]))]);
    let mut s = Servers::start(&config(&[("srv", false)]), conn.clone());
    s.wait(Which::All).await;
    let cancel = CancellationToken::new();
    let args = |v: Value| v.as_object().cloned().unwrap();

    let out = s
        .call("srv", "echo", args(json!({"x": 1})), &cancel)
        .await
        .unwrap();
    assert_eq!(out.text, r#"echo {"x":1}"#);
    assert!(!out.is_error);

    let out = s.call("srv", "fail", Map::new(), &cancel).await.unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "error: MCP tool `fail` of server `srv` reported an error (isError):\nbad input"
    );

    let started = tokio::time::Instant::now();
    let out = s.call("srv", "hang", Map::new(), &cancel).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(7));
    assert_eq!(
        out.text,
        "error: MCP tool `hang` of server `srv` did not answer within 7s (tool_timeout_secs), so the call was cancelled"
    );

    let out = s.call("srv", "crash", Map::new(), &cancel).await.unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "error: MCP server `srv` crashed during the call to `crash` (the process ended: exit status 3); it is restarted at the next turn"
    );
    assert_eq!(s.statuses()[0].state.label(), "crashed");
    let out = s.call("srv", "echo", Map::new(), &cancel).await.unwrap();
    assert!(out.text.contains("crashed earlier"), "{}", out.text);
    assert!(
        out.text.contains("restarted at the next turn"),
        "{}",
        out.text
    );

    let notes = s.restart_crashed().await;
    assert_eq!(
        texts(notes.clone()),
        ["MCP server `srv` was restarted after it crashed"]
    );
    assert!(!notes[0].failed);
    assert_eq!(conn.starts.load(Ordering::SeqCst), 2);
    assert!(s.statuses()[0].restarted);
    let out = s.call("srv", "echo", Map::new(), &cancel).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    // A second crash: no second restart.
    let out = s.call("srv", "crash", Map::new(), &cancel).await.unwrap();
    assert!(
        out.text
            .ends_with("it was restarted once already, so it stays down for this session"),
        "{}",
        out.text
    );
    assert!(s.restart_crashed().await.is_empty());
    assert_eq!(conn.starts.load(Ordering::SeqCst), 2);
    assert_eq!(s.statuses()[0].state.label(), "failed");

    // Cancelled: no result at all.
    let mut s = Servers::start(
        &config(&[("srv", false)]),
        connector(&[("srv", ok(&["hang"]))]),
    );
    s.wait(Which::All).await;
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        c2.cancel();
    });
    assert_eq!(
        s.call("srv", "hang", Map::new(), &cancel).await,
        Err(Interrupted)
    );
}

#[tokio::test(start_paused = true)]
async fn a_changed_tool_list_is_read_again_only_when_refreshed() {
    let conn = connector(&[("srv", ok(&["a"]))]);
    let mut s = Servers::start(&config(&[("srv", false)]), conn.clone());
    s.wait(Which::All).await;
    assert!(!s.refresh().await, "nothing changed");
    let client = conn.clients.lock().unwrap()[0].clone();
    client.changed.store(true, Ordering::SeqCst);
    // Said changed, but lists the same tools: nothing to rebuild.
    assert!(!s.refresh().await);
    assert!(!client.changed.load(Ordering::SeqCst), "the flag was taken");
    // A new tool is only seen once the server says so and a refresh asks.
    client.tools.lock().unwrap().push("b");
    assert!(!s.refresh().await);
    assert_eq!(s.tools()[0].1.len(), 1);
    client.changed.store(true, Ordering::SeqCst);
    assert!(s.refresh().await);
    let names: Vec<String> = s.tools()[0].1.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn a_wait_dropped_early_keeps_what_it_learnt_for_the_next() {
    let conn = connector(&[
        (
            "broken",
            Script {
                fail_at_start: Some("cannot run `nope`".into()),
                ..Script::default()
            },
        ),
        (
            "slow",
            Script {
                hang_at_start: true,
                ..Script::default()
            },
        ),
    ]);
    let mut s = Servers::start(&config(&[("broken", false), ("slow", false)]), conn);
    // Ctrl-C after one second: the wait is dropped after `broken` failed,
    // while it waits for `slow`.
    assert!(
        tokio::time::timeout(Duration::from_secs(1), s.wait(Which::All))
            .await
            .is_err()
    );
    assert_eq!(s.pending(), ["slow"]);
    assert_eq!(s.statuses()[1].state, ServerState::Starting);
    // The next wait still ends at the slow server's own deadline, and the
    // warning about `broken` is not lost.
    let notes = s.wait(Which::All).await;
    assert_eq!(
        texts(notes.clone()),
        [
            "MCP server `broken` could not start: cannot run `nope`; going on without its tools",
            "MCP server `slow` could not start: it did not start within 5s (startup_timeout_secs); going on without its tools",
        ]
    );
    assert!(notes.iter().all(|n| n.failed));
    assert!(s.pending().is_empty());
}
