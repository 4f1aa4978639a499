//! An Agent Client Protocol client for the e2e tests: runs `eonyx acp`
//! in a fixture's project, writes JSON-RPC lines to its stdin and reads
//! every line of its stdout, answering the agent's permission requests
//! from a queue. Updates are checked against the protocol crate's own
//! types ([`typed`]).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::SessionNotification;
use serde_json::{Value, json};

use crate::agent::Fx;

/// How long any one answer may take before the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// The client's answer to a `session/request_permission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// The client dismissed the question.
    Cancelled,
    /// The client leaves the question open: it waits in
    /// [`AcpClient::held`] until the test answers it.
    Hold,
}

pub(crate) struct AcpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    next_id: u64,
    /// Every message the agent sent, in order.
    pub(crate) seen: Vec<Value>,
    /// Answers for the next permission requests (then [`Answer::RejectOnce`]).
    pub(crate) answers: VecDeque<Answer>,
    /// The permission requests the agent sent.
    pub(crate) asked: Vec<Value>,
    /// The permission requests left open ([`Answer::Hold`]).
    pub(crate) held: Vec<Value>,
    /// The editor's buffers, by path: `fs/read_text_file` answers from
    /// them (else from the disk), `fs/write_text_file` writes them (never
    /// the disk).
    pub(crate) buffers: std::collections::HashMap<String, String>,
    /// Every `fs/write_text_file`: path and content.
    pub(crate) writes: Vec<(String, String)>,
}

impl AcpClient {
    /// `eonyx acp` (with `args`) in the fixture's project.
    pub(crate) fn start(fx: &Fx, args: &[&str]) -> Self {
        let mut cmd = fx.cmd(&["acp"]);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            next_id: 0,
            seen: Vec::new(),
            answers: VecDeque::new(),
            asked: Vec::new(),
            held: Vec::new(),
            buffers: std::collections::HashMap::new(),
            writes: Vec::new(),
        }
    }

    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn send(&mut self, msg: &Value) {
        self.send_line(&msg.to_string());
    }

    /// Send a request; its id.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message from the agent (answering its permission
    /// requests on the way); `None` when stdout closed.
    pub(crate) fn next(&mut self) -> Option<Value> {
        let line = match self.lines.recv_timeout(LIMIT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => panic!("no message from eonyx acp in {LIMIT:?}"),
        };
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries a line that is not JSON ({e}): {line}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
        if msg["method"] == "session/request_permission" {
            self.answer_permission(&msg);
        }
        if msg["method"] == "fs/read_text_file" {
            let path = msg["params"]["path"].as_str().unwrap().to_owned();
            let content = self
                .buffers
                .get(&path)
                .cloned()
                .unwrap_or_else(|| std::fs::read_to_string(&path).unwrap());
            self.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": content}}));
        }
        if msg["method"] == "fs/write_text_file" {
            let path = msg["params"]["path"].as_str().unwrap().to_owned();
            let content = msg["params"]["content"].as_str().unwrap().to_owned();
            self.buffers.insert(path.clone(), content.clone());
            self.writes.push((path, content));
            self.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}}));
        }
        self.seen.push(msg.clone());
        Some(msg)
    }

    fn answer_permission(&mut self, msg: &Value) {
        self.asked.push(msg.clone());
        let answer = self.answers.pop_front().unwrap_or(Answer::RejectOnce);
        let kind = match answer {
            Answer::Hold => {
                self.held.push(msg.clone());
                return;
            }
            Answer::AllowOnce => "allow_once",
            Answer::AllowAlways => "allow_always",
            Answer::RejectOnce => "reject_once",
            Answer::RejectAlways => "reject_always",
            Answer::Cancelled => "",
        };
        let outcome = if kind.is_empty() {
            json!({"outcome": "cancelled"})
        } else {
            // Picked by kind, as clients do.
            let option = msg["params"]["options"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["kind"] == kind)
                .unwrap_or_else(|| panic!("no {kind} option: {msg}"));
            json!({"outcome": "selected", "optionId": option["optionId"]})
        };
        self.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}}));
    }

    /// Answer a request of the agent (`id` as it sent it) with `result`.
    pub(crate) fn reply(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Wait for the response to request `id`.
    pub(crate) fn wait(&mut self, id: u64) -> Value {
        let is_it = |m: &Value| m["id"] == json!(id) && m.get("method").is_none();
        if let Some(m) = self.seen.iter().find(|m| is_it(m)) {
            return m.clone();
        }
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < LIMIT, "no response to request {id}");
            let msg = self
                .next()
                .unwrap_or_else(|| panic!("eonyx acp exited before answering {id}"));
            if is_it(&msg) {
                return msg;
            }
        }
    }

    /// A request and its response (the whole message: `result` or `error`).
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.wait(id)
    }

    /// A request that must succeed: its result.
    pub(crate) fn ok(&mut self, method: &str, params: Value) -> Value {
        let msg = self.call(method, params);
        assert!(msg.get("error").is_none(), "{method} failed: {msg}");
        msg["result"].clone()
    }

    pub(crate) fn initialize(&mut self, client_capabilities: Value) -> Value {
        self.ok(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": client_capabilities}),
        )
    }

    /// `session/new` in `cwd` with `mcp_servers`: the session id.
    pub(crate) fn new_session(&mut self, cwd: &std::path::Path, mcp_servers: Value) -> String {
        let r = self.ok(
            "session/new",
            json!({"cwd": cwd, "mcpServers": mcp_servers}),
        );
        r["sessionId"].as_str().unwrap().to_owned()
    }

    /// `session/prompt` with one text block: the response message.
    pub(crate) fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// The `update`s of `session`'s notifications seen so far.
    pub(crate) fn updates(&self, session: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == session)
            .map(|m| {
                typed(m);
                m["params"]["update"].clone()
            })
            .collect()
    }

    /// The updates of one kind (`sessionUpdate`).
    pub(crate) fn updates_of(&self, session: &str, kind: &str) -> Vec<Value> {
        self.updates(session)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// The agent's streamed answer text (`agent_message_chunk`s).
    pub(crate) fn answer_text(&self, session: &str) -> String {
        self.updates_of(session, "agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    /// Read until an update of `kind` for `session` has been seen: it.
    pub(crate) fn wait_update(&mut self, session: &str, kind: &str) -> Value {
        loop {
            if let Some(u) = self.updates_of(session, kind).into_iter().next() {
                return u;
            }
            self.next()
                .unwrap_or_else(|| panic!("eonyx acp exited before a {kind} update"));
        }
    }

    pub(crate) fn forget_seen(&mut self) {
        self.seen.clear();
    }

    /// Send `line` as a fresh prompt that must end its turn: the answer
    /// text it streamed.
    pub(crate) fn said(&mut self, session: &str, line: &str) -> String {
        self.forget_seen();
        let r = self.prompt(session, line);
        assert_eq!(r["result"]["stopReason"], "end_turn", "{line}: {r}");
        self.answer_text(session)
    }

    /// [`Self::finish`] where the process must exit 0 (its stderr is the
    /// failure's message): every message it sent after.
    pub(crate) fn finish_ok(self) -> Vec<Value> {
        let (code, stderr, rest) = self.finish();
        assert_eq!(code, Some(0), "{stderr}");
        rest
    }

    /// Close stdin and wait for the process: its exit code, stderr, and
    /// every message it sent after.
    pub(crate) fn finish(mut self) -> (Option<i32>, String, Vec<Value>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(m) = self.next() {
            rest.push(m);
        }
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > LIMIT {
                let _ = self.child.kill();
                panic!("eonyx acp did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (status.code(), self.stderr.join().unwrap(), rest)
    }
}

/// A `session/update` notification parsed by the protocol crate: the wire
/// shape is the protocol's.
pub(crate) fn typed(msg: &Value) -> SessionNotification {
    serde_json::from_value(msg["params"].clone())
        .unwrap_or_else(|e| panic!("not a session/update the protocol knows ({e}): {msg}"))
}

/// A fixture with `replies` queued and a started, initialized client
/// with one session in the project.
pub(crate) fn started(fx: &Fx) -> (AcpClient, String) {
    let mut c = AcpClient::start(fx, &[]);
    c.initialize(json!({}));
    let s = c.new_session(&fx.sb.work, json!([]));
    (c, s)
}

/// A fresh, initialized client that loads `session` (the agent replays
/// it before answering): the client, the load's result, and the kinds
/// (`sessionUpdate`) of the replayed updates, in order.
pub(crate) fn reloaded(fx: &Fx, session: &str) -> (AcpClient, Value, Vec<String>) {
    let mut c = AcpClient::start(fx, &[]);
    c.initialize(json!({}));
    let r = c.ok(
        "session/load",
        json!({"sessionId": session, "cwd": fx.sb.work, "mcpServers": []}),
    );
    let kinds = c
        .updates(session)
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap().to_owned())
        .collect();
    (c, r, kinds)
}
