//! The turn loop as a user and a script see it, through the real binary
//! against the fake provider: piped batch runs with slash commands and
//! `--json` events; and the fixture ([`Fx`]) and helpers the other turn-loop
//! files (`agent_*.rs`, `editing.rs`, `repl.rs`) share.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::util::{Sandbox, fake_project, spawn_with_stdin, stderr, stdout};

/// The model's call to read the project's `notes.txt`.
pub(crate) fn read_notes() -> Reply {
    Reply::tool_call("read_file", json!({"path": "notes.txt"}))
}

/// A sandbox whose `work` dir is a project (`eonyx.json`), with a config
/// selecting the fake model (no retries, so failures are immediate).
/// `memory.rs` and `skills.rs` add their own helpers in `impl Fx` blocks
/// (a method name may be defined only once across them).
pub(crate) struct Fx {
    pub(crate) sb: Sandbox,
    pub(crate) fake: FakeServer,
}

impl Fx {
    pub(crate) fn new() -> Self {
        Self::with(|c| c)
    }

    /// [`Fx::new`] with `replies` queued on the fake, in order.
    pub(crate) fn replying(replies: impl IntoIterator<Item = Reply>) -> Self {
        let fx = Self::new();
        fx.fake.push_all(replies);
        fx
    }

    /// [`Fx::new`] whose project has `notes.txt` holding `text` (the file
    /// [`read_notes`] reads).
    pub(crate) fn with_notes(text: &str) -> Self {
        let fx = Self::new();
        fx.sb.write("work/notes.txt", text);
        fx
    }

    pub(crate) fn with(config: impl FnOnce(FakeConfig) -> FakeConfig) -> Self {
        let (sb, fake) = fake_project(config);
        Self { sb, fake }
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.sb.eonyx();
        c.args(args);
        c
    }

    /// Run to completion with `input` on stdin (a pipe).
    pub(crate) fn run(&self, args: &[&str], input: &str) -> Output {
        run_with_stdin(self.cmd(args), input)
    }

    /// The session files, oldest id first.
    pub(crate) fn session_files(&self) -> Vec<PathBuf> {
        let dir = self.sb.data.join("sessions");
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files
    }

    /// The only session file.
    pub(crate) fn session(&self) -> PathBuf {
        let files = self.session_files();
        assert_eq!(files.len(), 1, "expected exactly one session: {files:?}");
        files.into_iter().next().unwrap()
    }

    pub(crate) fn chats(&self) -> Vec<RecordedRequest> {
        self.fake.chat_requests()
    }

    /// The chat requests of the agent (not the summarizer), in order.
    pub(crate) fn agent_requests(&self) -> Vec<RecordedRequest> {
        self.fake
            .chat_requests()
            .into_iter()
            .filter(|r| !r.is_summarizer())
            .collect()
    }
}

pub(crate) fn run_with_stdin(mut cmd: Command, input: &str) -> Output {
    wait_output(spawn_with_stdin(&mut cmd, input), Duration::from_secs(60))
}

/// `wait_with_output` with a deadline: a hung binary fails the test
/// instead of hanging it.
pub(crate) fn wait_output(mut child: Child, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let read = |s: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut s) = s {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_t = read(stdout.map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    let err_t = read(stderr.map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(limit) {
        Ok(s) => s.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("eonyx (pid {pid}) did not finish within {limit:?}");
        }
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

pub(crate) fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

/// Every record of a session file.
pub(crate) fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// The message records of a session file.
pub(crate) fn messages(path: &Path) -> Vec<Value> {
    records(path)
        .into_iter()
        .filter(|r| r["type"] == "message")
        .collect()
}

pub(crate) fn roles(msgs: &[Value]) -> Vec<&str> {
    msgs.iter().map(|m| m["role"].as_str().unwrap()).collect()
}

pub(crate) fn content(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Every tool call in the session file has exactly one result after it.
pub(crate) fn assert_consistent(path: &Path) {
    let msgs = messages(path);
    for (i, m) in msgs.iter().enumerate() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            let id = call["id"].as_str().unwrap();
            let answers = msgs[i + 1..]
                .iter()
                .filter(|r| r["role"] == "tool" && r["tool_call_id"] == id)
                .count();
            assert_eq!(
                answers, 1,
                "tool call {id} has {answers} results: {msgs:#?}"
            );
        }
    }
}

/// The session id a run reported on stderr (`new session 1 (ID)`).
pub(crate) fn session_id_of(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_owned()
}

/// The raw text of the top-level `key` array in a compact JSON body, as sent.
pub(crate) fn raw_array<'a>(raw: &'a str, key: &str) -> &'a str {
    let needle = format!("\"{key}\":");
    let start = raw.find(&needle).unwrap() + needle.len();
    let bytes = raw.as_bytes();
    assert_eq!(bytes[start], b'[', "{key} is not an array in {raw}");
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_str {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return &raw[start..=i];
                }
            }
            _ => {}
        }
    }
    panic!("unterminated {key} array in {raw}");
}

pub(crate) fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

pub(crate) fn sigint(child: &Child) {
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Ctrl-C (SIGINT) `child` and wait for it to exit: its output and how long
/// it took to exit.
pub(crate) fn ctrl_c(child: Child) -> (Output, Duration) {
    let started = Instant::now();
    sigint(&child);
    let o = wait_output(child, Duration::from_secs(20));
    (o, started.elapsed())
}

#[test]
fn batch_runs_one_turn_per_line_and_handles_slash_commands() {
    let fx = Fx::replying([
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply::text("third answer"),
    ]);
    let input =
        "hello\n\n   \n/rename my work\n/help\n/frobnicate now\nsecond line\n/new\nthird line\n";
    let o = fx.run(&[], input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    // stdout carries exactly the answers, one per turn.
    assert_eq!(stdout(&o), "first answer\nsecond answer\nthird answer\n");
    let err = stderr(&o);
    assert!(err.contains("unknown command /frobnicate"), "{err}");
    assert!(err.contains("/help"), "the hint names /help: {err}");
    for cmd in ["/compact [focus]", "/rename TITLE", "/resume ID", "/exit"] {
        assert!(err.contains(cmd), "/help lists {cmd}: {err}");
    }
    assert!(err.contains("renamed to my work"), "{err}");

    // Blank lines, /help, /rename and the unknown command never reach the model.
    let chats = fx.chats();
    assert_eq!(chats.len(), 3);
    assert_eq!(chats[0].user_texts(), ["hello"]);
    assert_eq!(chats[1].user_texts(), ["hello", "second line"]);
    // /new: the third turn starts from an empty history.
    assert_eq!(chats[2].user_texts(), ["third line"]);

    // Ids sort by start second, so two sessions of the same second are
    // told apart by content.
    let mut files = fx.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    files.sort_by_key(|f| content(&messages(f)[0]) != "hello");
    let first = records(&files[0]);
    assert!(
        first
            .iter()
            .any(|r| r["type"] == "title" && r["title"] == "my work"),
        "{first:#?}"
    );
    assert_eq!(
        roles(&messages(&files[0])),
        ["user", "assistant", "user", "assistant"]
    );
    assert_eq!(roles(&messages(&files[1])), ["user", "assistant"]);
    assert_eq!(content(&messages(&files[1])[0]), "third line");

    // The rename shows in the listing.
    let o = fx.run(&["sessions", "--json"], "");
    assert!(stdout(&o).contains("my work"), "{}", stdout(&o));
}

#[test]
fn batch_compact_summarizes_earlier_turns_for_the_next_request() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.fake
        .set_summarizer(|_| Reply::text("SUMMARY: the user said alpha, then beta."));
    fx.fake
        .push(Reply::text("A"))
        .push(Reply::text("B"))
        .push(Reply::text("C"));
    let o = fx.run(&[], "alpha\nbeta\n/compact\ngamma\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "A\nB\nC\n");
    assert!(stderr(&o).contains("compacted (manual)"), "{}", stderr(&o));

    let chats = fx.chats();
    let summarizer: Vec<_> = chats.iter().filter(|r| r.is_summarizer()).collect();
    assert_eq!(summarizer.len(), 1, "one summary request");
    let last = chats.last().unwrap();
    assert!(!last.is_summarizer());
    assert!(
        last.system_text()
            .contains("# Summary of earlier conversation"),
        "{}",
        last.system_text()
    );
    assert!(last.system_text().contains("SUMMARY: the user said alpha"));
    let users = last.user_texts();
    assert!(
        !users.contains(&"alpha".to_owned()),
        "alpha was summarized away: {users:?}"
    );
    assert_eq!(users.last().map(String::as_str), Some("gamma"));

    // The session file keeps everything and records the compaction.
    let recs = records(&fx.session());
    let comp: Vec<_> = recs.iter().filter(|r| r["type"] == "compaction").collect();
    assert_eq!(comp.len(), 1);
    assert_eq!(comp[0]["trigger"], "manual");
    assert_eq!(messages(&fx.session()).len(), 6);
}

#[test]
fn batch_stops_at_the_first_failed_turn_and_keeps_what_came_before() {
    let fx = Fx::replying([
        Reply::text("one done"),
        Reply::error(
            400,
            r#"{"error":{"message":"bad request: the fake refuses this","type":"invalid_request_error"}}"#,
        ),
        Reply::text("never"),
    ]);
    let o = fx.run(&[], "one\ntwo\nthree\n");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "one done\n");
    assert!(
        stderr(&o).contains("the fake refuses this"),
        "the provider's message is shown: {}",
        stderr(&o)
    );
    // "three" never ran.
    assert_eq!(fx.chats().len(), 2);
    let msgs = messages(&fx.session());
    assert_eq!(roles(&msgs), ["user", "assistant", "user"]);
    assert_eq!(content(&msgs[1]), "one done");
    assert_eq!(content(&msgs[2]), "two");
}

#[test]
fn json_events_for_a_turn_with_a_tool_call() {
    let fx = Fx::with_notes("alpha\nbeta\n");
    fx.fake
        .push(read_notes())
        .push(Reply::text("Two lines: alpha and beta."));
    let o = fx.run(&["run", "--json", "read notes.txt"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let id = session_id_of(&fx.session());
    let mut lines = Vec::new();
    for line in stdout(&o).lines() {
        let mut v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        if v["type"] == "turn_completed" {
            for k in ["prompt_tokens", "completion_tokens"] {
                assert!(v["usage"][k].as_u64().unwrap() > 0, "{v}");
                v["usage"][k] = json!("[N]");
            }
            assert!(v["usage"]["cached_tokens"].is_u64(), "{v}");
            v["usage"]["cached_tokens"] = json!("[N]");
        }
        lines.push(v.to_string().replace(&id, "[SESSION]"));
    }
    insta::assert_snapshot!("agent_json_events", lines.join("\n"));

    // Batch --json: the same events, one turn_started per line, and an
    // error event for a failed turn.
    fx.fake.push(Reply::text("fine")).push(Reply::error(
        400,
        r#"{"error":{"message":"nope","type":"invalid_request_error"}}"#,
    ));
    let o = fx.run(&["--json"], "a\nb\n");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let events: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session"));
    assert_eq!(types.iter().filter(|t| **t == "turn_started").count(), 2);
    assert_eq!(types.iter().filter(|t| **t == "turn_completed").count(), 1);
    let err = events.iter().find(|e| e["type"] == "error").unwrap();
    assert!(err["message"].as_str().unwrap().contains("nope"), "{err}");
    assert!(err["class"].is_string());
}
