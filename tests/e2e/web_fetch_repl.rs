//! `web_fetch`'s per-host approval in the REPL (tmux): y, n, and "always"
//! for this host, which holds for the rest of the session for that host
//! only (`127.0.0.1` and `localhost` are two hosts, even on one port).
//! Asserted on what the model received and what the local server saw.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{Reply, WebReply, WebServer};
use serde_json::json;

use crate::agent::*;
use crate::agent_repl::{prompt_count, start_new_repl};

fn fetch(url: &str) -> Reply {
    Reply::tool_call("web_fetch", json!({ "url": url }))
}

/// Every tool result of the agent's last request, in order.
fn tool_results(fx: &Fx) -> Vec<String> {
    let chats = fx.agent_requests();
    chats
        .last()
        .unwrap()
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(content)
        .collect()
}

#[test]
fn the_repl_asks_per_host_and_always_holds_for_that_host_only() {
    let web = WebServer::start(|r| WebReply::html(&format!("<h1>page {}</h1>", r.path)));
    let port = web.port();
    let fx = Fx::with(|c| {
        c.merge_top_toml(&format!(
            "[tools]\nweb_fetch_private_hosts = [\"127.0.0.1:{port}\", \"localhost:{port}\"]\n"
        ))
        .unwrap()
    });
    let ip = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let name = format!("http://localhost:{port}/e");
    fx.fake
        .push(fetch(&ip("/a")))
        .push(Reply::text("got a"))
        .push(fetch(&ip("/b")))
        .push(Reply::text("no b"))
        .push(fetch(&ip("/c")))
        .push(fetch(&ip("/d")))
        .push(Reply::text("got c and d"))
        .push(fetch(&name))
        .push(Reply::text("e answered"));
    let tmux = start_new_repl(&fx);
    let asked = |p: &str| p.matches("[a]lways: every page of").count();

    // y: fetched once.
    tmux.send("read a");
    let pane = tmux.wait_pane("the first question", |p| asked(p) == 1);
    assert!(pane.contains(&format!("fetch {}", ip("/a"))), "{pane}");
    assert!(
        pane.contains("every page of 127.0.0.1 this session"),
        "{pane}"
    );
    tmux.send_until("y", "the first answer", "got a", 2);
    let got = tool_results(&fx);
    assert!(got[0].starts_with("[web page "), "{got:?}");
    assert!(got[0].contains("# page /a"), "{got:?}");

    // n: denied, the server never asked.
    tmux.send("read b");
    tmux.wait_pane("the second question", |p| asked(p) == 2);
    tmux.send_until("n", "the second answer", "no b", 3);
    let got = tool_results(&fx);
    assert!(got[1].starts_with("denied"), "{got:?}");

    // always: /c is asked about, /d of the same host is not.
    tmux.send("read c and d");
    tmux.wait_pane("the third question", |p| asked(p) == 3);
    tmux.send("a");
    let pane = tmux.wait_pane("the third answer", |p| {
        p.contains("got c and d") && prompt_count(p) >= 4
    });
    assert_eq!(asked(&pane), 3, "{pane}");
    let got = tool_results(&fx);
    assert!(got[2].contains("# page /c"), "{got:?}");
    assert!(got[3].contains("# page /d"), "{got:?}");

    // Another host (the same server by name) is asked again.
    tmux.send("read e");
    let pane = tmux.wait_pane("the fourth question", |p| asked(p) == 4);
    assert!(
        pane.contains("every page of localhost this session"),
        "{pane}"
    );
    tmux.send_until("y", "the fourth answer", "e answered", 5);
    let got = tool_results(&fx);
    assert!(got[4].contains("# page /e"), "{got:?}");

    let paths: Vec<String> = web.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/a", "/c", "/d", "/e"]);
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}
