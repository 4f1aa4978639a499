//! `web_fetch` where the name and the proxy variables lie (issue 56,
//! docs/tools.md#web-fetch): every connection goes to a checked, pinned
//! address or to the proxy eonyx chose. The DNS cases run inside a user,
//! network and mount namespace (`unshare -rnm`) that has only its own
//! loopback, with `/etc/resolv.conf` bound to a fake DNS server on its
//! 127.0.0.1:53 that fails the first lookup of a name and answers
//! `127.0.0.1` after: nothing can leave the machine, and a connection to
//! the refused page is counted.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::net::UdpSocket;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, TestEnv, WebReply, WebServer};
use serde_json::json;

use crate::compaction::BIN;
use crate::util::{input_lines, spawn_with_stdin, stderr};
use crate::web_fetch::model;

/// Set in the copy of the test binary that runs inside the namespace.
const INSIDE: &str = "EONYX_TEST_INSIDE_NETNS";

const PROXY_VARS: [&str; 9] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "REQUEST_METHOD",
];

fn env_with(model: &FakeServer, tools: &str) -> TestEnv {
    let env = TestEnv::new().unwrap();
    let config = FakeConfig::openai(&model.base_url())
        .set("retries", 0)
        .merge_top_toml(&format!("[tools]\nweb_fetch = \"allow\"\n{tools}"))
        .unwrap();
    env.write_config(&config).unwrap();
    env
}

/// One batch run fetching `url` with the proxy variables `vars` (all
/// others unset; the model's own connection, to 127.0.0.1, must not be
/// proxied); the `web_fetch` result the model was sent.
fn fetch(env: &TestEnv, model: &FakeServer, url: &str, vars: &[(&str, &str)]) -> String {
    let mut cmd = env.command(BIN);
    cmd.current_dir(&env.project);
    for v in PROXY_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let line = format!("fetch {}", json!({ "url": url }));
    let out = spawn_with_stdin(&mut cmd, input_lines(&[line]))
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    model
        .chat_requests()
        .last()
        .map(RecordedRequest::tool_results)
        .unwrap_or_default()
        .last()
        .cloned()
        .unwrap_or_default()
}

/// A DNS server on 127.0.0.1:53 that answers SERVFAIL to the first
/// `fail` queries after each [`Dns::reset`], then `127.0.0.1` for every A
/// query (and no address for the others).
struct Dns {
    left_to_fail: Arc<AtomicUsize>,
    fail: usize,
}

impl Dns {
    fn start(fail: usize) -> Self {
        let socket =
            UdpSocket::bind("127.0.0.1:53").expect("binding 127.0.0.1:53 in the namespace");
        let left_to_fail = Arc::new(AtomicUsize::new(fail));
        let left = left_to_fail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                let q = &buf[..n];
                if q.len() < 12 {
                    continue;
                }
                // The question: labels to the zero byte, then type and class.
                let mut end = 12;
                while end < q.len() && q[end] != 0 {
                    end += usize::from(q[end]) + 1;
                }
                let end = (end + 5).min(q.len());
                let qtype = u16::from_be_bytes([q[end - 4], q[end - 3]]);
                let failing = left
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| l.checked_sub(1))
                    .is_ok();
                let mut r = q[..end].to_vec();
                r[2] = 0x81;
                r[3] = if failing { 0x82 } else { 0x80 };
                let answer = !failing && qtype == 1;
                r[6..8].copy_from_slice(&[0, u8::from(answer)]);
                r[8..12].copy_from_slice(&[0; 4]);
                if answer {
                    r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 127, 0, 0, 1]);
                }
                let _ = socket.send_to(&r, from);
            }
        });
        Self { left_to_fail, fail }
    }

    fn reset(&self) {
        self.left_to_fail.store(self.fail, Ordering::SeqCst);
    }
}

/// Runs this test again inside a new user, network and mount namespace;
/// `true` when this is that run. Namespaces refused fail the test loudly.
fn in_namespace(test: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args(["-rnm", "--"])
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .output()
        .expect("running unshare (util-linux)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the test inside `unshare -rnm` failed (if namespaces are refused here, this test cannot run: it does not pass silently):\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the inner run ran no test:\n{text}"
    );
    false
}

/// Inside the namespace: loopback up and `/etc/resolv.conf` bound to a
/// file naming the fake DNS server (kept for the namespace's life).
fn fake_resolver(dir: &std::path::Path) {
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .expect("running ip (iproute2)");
    assert!(up.success(), "ip link set lo up failed");
    let conf = dir.join("resolv.conf");
    std::fs::write(
        &conf,
        "nameserver 127.0.0.1\noptions attempts:1 timeout:2\n",
    )
    .unwrap();
    let bound = Command::new("mount")
        .arg("--bind")
        .arg(&conf)
        .arg("/etc/resolv.conf")
        .status()
        .expect("running mount");
    assert!(bound.success(), "binding the fake resolv.conf failed");
}

#[test]
fn a_name_that_fails_then_resolves_to_loopback_never_connects_whatever_the_proxy_variables_say() {
    if !in_namespace(
        "web_fetch_proxy::a_name_that_fails_then_resolves_to_loopback_never_connects_whatever_the_proxy_variables_say",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fake_resolver(dir.path());
    // The first lookup's A and AAAA queries fail; any later one finds
    // 127.0.0.1.
    let dns = Dns::start(2);
    let web = WebServer::start(|_| WebReply::html("<p>the refused page</p>"));
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_proxy = format!("http://127.0.0.1:{}", dead.local_addr().unwrap().port());
    drop(dead);
    let model = model();
    let env = env_with(&model, "");
    let url = format!("http://flip.test:{}/", web.port());
    // (what, the proxy variables, what the result says)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case<'_>> = vec![
        ("no proxy", vec![], "could not resolve flip.test"),
        (
            "NO_PROXY names the host",
            vec![
                ("http_proxy", &dead_proxy),
                ("NO_PROXY", "flip.test,127.0.0.1"),
            ],
            "could not resolve flip.test",
        ),
        (
            "the proxy does not parse",
            vec![("HTTP_PROXY", "http://[::1")],
            "the proxy in HTTP_PROXY is not usable",
        ),
        (
            "CGI: HTTP_PROXY is ignored",
            vec![("REQUEST_METHOD", "GET"), ("HTTP_PROXY", &dead_proxy)],
            "could not resolve flip.test",
        ),
        (
            "an empty HTTP_PROXY does not hide http_proxy",
            vec![
                ("HTTP_PROXY", ""),
                ("http_proxy", &dead_proxy),
                ("no_proxy", "127.0.0.1"),
            ],
            "could not fetch",
        ),
    ];
    for (what, vars, says) in cases {
        dns.reset();
        let result = fetch(&env, &model, &url, &vars);
        assert!(result.contains(says), "{what}: {result}");
        assert!(!result.contains("the refused page"), "{what}: {result}");
        assert_eq!(
            web.connections(),
            0,
            "{what}: the refused server was reached"
        );
    }
    // Without the failing first lookup the name is refused as loopback.
    let dns_ok = Dns {
        left_to_fail: dns.left_to_fail.clone(),
        fail: 0,
    };
    dns_ok.reset();
    let result = fetch(&env, &model, &url, &[]);
    assert!(
        result.contains("refused: flip.test is 127.0.0.1, a loopback address"),
        "{result}"
    );
    assert_eq!(web.connections(), 0);
}

#[test]
fn credentials_in_a_url_are_refused_never_sent_nor_shown() {
    let password = "hunter2-secret";
    let web = WebServer::start(move |r| {
        if r.path == "/go" {
            WebReply::redirect(format!(
                "//user:{password}@{}/in",
                r.header("host").unwrap_or("")
            ))
        } else {
            WebReply::html("<p>inside</p>")
        }
    });
    let model = model();
    let env = env_with(
        &model,
        &format!("web_fetch_private_hosts = [\"127.1:{}\"]\n", web.port()),
    );
    let direct = fetch(
        &env,
        &model,
        &format!("http://user:{password}@127.0.0.1:{}/in", web.port()),
        &[],
    );
    assert!(
        direct.contains("URLs with a user name or password"),
        "{direct}"
    );
    assert_eq!(
        web.connections(),
        0,
        "nothing is sent for a URL with credentials"
    );
    let redirected = fetch(&env, &model, &web.url("/go"), &[]);
    assert!(
        redirected.contains("URLs with a user name or password"),
        "{redirected}"
    );
    let requests = web.requests();
    assert_eq!(
        requests.len(),
        1,
        "the redirect was not followed: {requests:?}"
    );
    assert!(requests.iter().all(|r| r.header("authorization").is_none()));
    assert!(!direct.contains(password) && !redirected.contains(password));
}

#[test]
fn a_nul_byte_anywhere_in_the_body_makes_it_binary() {
    let mut body = vec![b'a'; 20_000];
    body[15_000] = 0;
    let web = WebServer::start(move |_| WebReply::Page {
        status: 200,
        content_type: Some("text/plain".into()),
        body: body.clone(),
    });
    let model = model();
    // A listing not in canonical form still matches: `127.1` is 127.0.0.1.
    let env = env_with(
        &model,
        &format!("web_fetch_private_hosts = [\"127.1:{}\"]\n", web.port()),
    );
    let result = fetch(&env, &model, &web.url("/f.txt"), &[]);
    assert!(result.contains("is binary (text/plain)"), "{result}");
    assert!(!result.contains('\0'));
}

#[test]
fn a_private_host_entry_without_a_port_is_a_clear_config_error() {
    let model = model();
    let env = env_with(&model, "web_fetch_private_hosts = [\"localhost\"]\n");
    let out = env
        .command(BIN)
        .current_dir(&env.project)
        .arg("config")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("`tools.web_fetch_private_hosts`"), "{err}");
    assert!(err.contains("\"localhost\" has no port"), "{err}");
}
