//! The turn loop as a user and a script see it, through the real binary
//! against the fake provider: piped batch runs with slash commands, `run`,
//! `run -c` / `-s`, `--json` events, the read_file tool loop, shell
//! approval, Ctrl-C, a failed append, exit codes, a closed stdout, the
//! append-only request prefix, and the REPL in a real terminal (tmux).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use camino::Utf8Path;
use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::util::{Sandbox, stderr, stdout};

/// A sandbox whose `work` dir is a project (`eonyx.json`), with a config
/// selecting the fake model (no retries, so failures are immediate).
pub(crate) struct Fx {
    pub(crate) sb: Sandbox,
    pub(crate) fake: FakeServer,
}

impl Fx {
    pub(crate) fn new() -> Self {
        Self::with(|c| c)
    }

    pub(crate) fn with(config: impl FnOnce(FakeConfig) -> FakeConfig) -> Self {
        let sb = Sandbox::new();
        sb.write("work/eonyx.json", "{}\n");
        let fake = FakeServer::start();
        let cfg = config(FakeConfig::openai(&fake.base_url()).set("retries", 0));
        cfg.write(Utf8Path::from_path(&sb.config).unwrap()).unwrap();
        Self { sb, fake }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.sb.eonyx();
        c.args(args);
        c
    }

    /// Run to completion with `input` on stdin (a pipe).
    pub(crate) fn run(&self, args: &[&str], input: &str) -> Output {
        run_with_stdin(self.cmd(args), input)
    }

    /// The session files, oldest id first.
    fn session_files(&self) -> Vec<PathBuf> {
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
}

fn run_with_stdin(mut cmd: Command, input: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = wait_output(child, Duration::from_secs(60));
    writer.join().unwrap();
    out
}

/// `wait_with_output` with a deadline: a hung binary fails the test
/// instead of hanging it.
fn wait_output(mut child: Child, limit: Duration) -> Output {
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
fn records(path: &Path) -> Vec<Value> {
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

fn roles(msgs: &[Value]) -> Vec<&str> {
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
fn assert_consistent(path: &Path) {
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
fn session_id_of(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_owned()
}

/// The raw text of the top-level `key` array in a compact JSON body, as sent.
fn raw_array<'a>(raw: &'a str, key: &str) -> &'a str {
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

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn sigint(child: &Child) {
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

// ---------------------------------------------------------------- batch

#[test]
fn batch_runs_one_turn_per_line_and_handles_slash_commands() {
    let fx = Fx::new();
    fx.fake
        .push(Reply::text("first answer"))
        .push(Reply::text("second answer"))
        .push(Reply::text("third answer"));
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
    let fx = Fx::new();
    fx.fake
        .push(Reply::text("one done"))
        .push(Reply::error(
            400,
            r#"{"error":{"message":"bad request: the fake refuses this","type":"invalid_request_error"}}"#,
        ))
        .push(Reply::text("never"));
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

// ---------------------------------------------------------------- run

#[test]
fn run_prints_only_the_answer_on_stdout_from_argument_or_stdin() {
    let fx = Fx::new();
    fx.fake.push(Reply::text("the answer"));
    let o = fx.run(&["run", "what is it?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "the answer\n");
    assert!(stderr(&o).contains("new session 1"), "{}", stderr(&o));
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("what is it?")
    );

    // Prompt on stdin, with no argument and with `-`: each a new session.
    fx.fake
        .push(Reply::text("from stdin"))
        .push(Reply::text("from dash"));
    let o = fx.run(&["run"], "piped question\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "from stdin\n");
    let o = fx.run(&["run", "-"], "dash question\nsecond line\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "from dash\n");
    let chats = fx.chats();
    assert_eq!(chats[1].user_texts(), ["piped question"]);
    assert_eq!(chats[2].user_texts(), ["dash question\nsecond line"]);
    assert_eq!(fx.session_files().len(), 3);

    // No prompt at all is a usage error, and nothing is sent.
    let o = fx.run(&["run"], "  \n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("no prompt"), "{}", stderr(&o));
    assert_eq!(fx.chats().len(), 3);
}

#[test]
fn run_continue_and_session_resume_with_the_earlier_messages() {
    let fx = Fx::new();
    // -c with no session of this project: usage error, no model call.
    let o = fx.run(&["run", "-c", "hi"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no session to continue"),
        "{}",
        stderr(&o)
    );
    assert!(fx.chats().is_empty());
    assert!(fx.session_files().is_empty(), "nothing left behind");

    fx.fake
        .push(Reply::text("A1"))
        .push(Reply::text("A2"))
        .push(Reply::text("B1"))
        .push(Reply::text("A3"));
    assert_eq!(code(&fx.run(&["run", "first"], "")), Some(0));
    let first = fx.session();
    let o = fx.run(&["run", "-c", "second"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "A2\n");
    assert!(stderr(&o).contains("resumed session 1"), "{}", stderr(&o));
    assert_eq!(fx.chats()[1].user_texts(), ["first", "second"]);
    assert_eq!(fx.chats()[1].roles(), ["user", "assistant", "user"]);

    // A second, newer session; then -s picks the first one explicitly.
    assert_eq!(code(&fx.run(&["run", "other"], "")), Some(0));
    let id = session_id_of(&first);
    let o = fx.run(&["run", "-s", &id, "third"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "A3\n");
    assert_eq!(fx.chats()[3].user_texts(), ["first", "second", "third"]);
    assert_eq!(messages(&first).len(), 6);

    // -s with an id that is not there, and a malformed one.
    let o = fx.run(&["run", "-s", "20200101T000000-00000000", "x"], "");
    assert_ne!(code(&o), Some(0));
    assert!(stdout(&o).is_empty());
    assert!(
        stderr(&o).contains("20200101T000000-00000000"),
        "{}",
        stderr(&o)
    );
    let o = fx.run(&["run", "-s", "../etc/passwd", "x"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert_eq!(fx.chats().len(), 4, "no model call for a bad -s");
}

#[test]
fn resumed_runs_send_a_byte_identical_prefix() {
    let fx = Fx::new();
    fx.fake
        .push(Reply::text("answer one"))
        .push(Reply::text("answer two"))
        .push(Reply::text("answer three"));
    assert_eq!(code(&fx.run(&["run", "one"], "")), Some(0));
    assert_eq!(code(&fx.run(&["run", "-c", "two"], "")), Some(0));
    assert_eq!(code(&fx.run(&["run", "-c", "three"], "")), Some(0));
    let chats = fx.chats();
    assert_eq!(chats.len(), 3);
    for pair in chats.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!(a.system_text(), b.system_text(), "system prompt changed");
        let (ra, rb) = (
            raw_array(&a.raw_body, "messages"),
            raw_array(&b.raw_body, "messages"),
        );
        // Request 2's messages start with exactly request 1's (bytes, as sent)…
        let open = &ra[..ra.len() - 1];
        assert!(rb.starts_with(open), "not append-only:\n{ra}\n---\n{rb}");
        // …followed by request 1's answer and the new user message.
        let a_n = a.messages().len();
        let b_msgs = b.messages();
        assert_eq!(b_msgs.len(), a_n + 2);
        assert_eq!(b_msgs[a_n]["role"], "assistant");
        assert!(b_msgs[a_n].to_string().contains("answer"));
        assert_eq!(b_msgs[a_n + 1]["role"], "user");
        assert_eq!(a.tools(), b.tools(), "tool definitions changed");
    }
}

// ---------------------------------------------------------------- tools

#[test]
fn read_file_tool_loop_sends_the_file_back_with_the_call_id() {
    let fx = Fx::new();
    fx.sb.write("work/notes.txt", "the secret number is 4242\n");
    fx.fake
        .push(Reply::tool_call("read_file", json!({"path": "notes.txt"})).with_text("Reading."))
        .push(Reply::text("It is 4242."));
    let o = fx.run(&["run", "what is in notes.txt?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "It is 4242.\n");
    assert!(
        stderr(&o).contains("read_file"),
        "the tool call is shown on stderr: {}",
        stderr(&o)
    );

    let chats = fx.chats();
    assert_eq!(chats.len(), 2);
    let msgs = chats[1].messages();
    let assistant = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    let call = &assistant["tool_calls"][0];
    let call_id = call["id"].as_str().unwrap();
    assert_eq!(call["function"]["name"], "read_file");
    let tool = msgs.last().unwrap();
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], call_id);
    assert!(
        content(tool).contains("the secret number is 4242"),
        "{tool}"
    );

    let saved = messages(&fx.session());
    assert_eq!(roles(&saved), ["user", "assistant", "tool", "assistant"]);
    assert_eq!(saved[2]["tool_call_id"], call_id);
    assert_consistent(&fx.session());
}

#[test]
fn shell_is_denied_in_batch_and_allowed_with_the_flag() {
    let fx = Fx::new();
    let cmd = json!({"command": "touch created_by_shell.txt && echo made it"});
    fx.fake
        .push(Reply::tool_call("shell", cmd.clone()))
        .push(Reply::text("could not"));
    let o = fx.run(&[], "make the file\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "could not\n");
    assert!(
        !fx.sb.work.join("created_by_shell.txt").exists(),
        "the command ran"
    );
    let result = fx.chats()[1].messages().last().cloned().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(content(&result).contains("denied"), "{result}");
    assert!(content(&result).contains("--allow-shell"), "{result}");

    // `run` denies too.
    fx.fake
        .push(Reply::tool_call("shell", cmd.clone()))
        .push(Reply::text("still no"));
    let o = fx.run(&["run", "make it"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.sb.work.join("created_by_shell.txt").exists());

    fx.fake
        .push(Reply::tool_call("shell", cmd))
        .push(Reply::text("made"));
    let o = fx.run(&["--allow-shell"], "make the file\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "made\n");
    assert!(
        fx.sb.work.join("created_by_shell.txt").exists(),
        "runs in the project root"
    );
    let result = fx.chats()[5].messages().last().cloned().unwrap();
    let text = content(&result);
    assert!(text.starts_with("exit status: 0"), "{text}");
    assert!(text.contains("made it"), "{text}");
}

#[test]
fn big_tool_output_is_cut_for_the_model_and_kept_whole_in_the_session() {
    let fx = Fx::with(|c| {
        c.merge_top_toml("[tools]\noutput_cap_bytes = 2048\n")
            .unwrap()
    });
    let body: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    fx.sb.write("work/big.txt", &body);
    fx.sb
        .write("outside.txt", "private data outside the project\n");
    fx.fake
        .push(Reply::tool_calls([
            ("read_file", json!({"path": "big.txt"})),
            ("read_file", json!({"path": "../outside.txt"})),
        ]))
        .push(Reply::text("done"));
    let o = fx.run(&[], "read them\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "done\n");

    let sent = fx.chats()[1].messages();
    let tools: Vec<&Value> = sent.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 2);
    let big = content(tools[0]);
    assert!(big.len() < 4096, "not cut: {} bytes", big.len());
    assert!(big.contains("line 0"), "{big}");
    assert!(big.contains("truncated"), "the cut is visible: {big}");
    assert!(!big.contains("line 1999"));
    // Outside the project needs approval, which batch runs do not give.
    let outside = content(tools[1]);
    assert!(!outside.contains("private data"), "{outside}");
    assert!(outside.contains("denied"), "{outside}");

    let saved = messages(&fx.session());
    let saved_big = content(&saved[2]);
    assert!(
        saved_big.contains("line 1999"),
        "the session keeps it whole"
    );
    assert!(!saved_big.contains("truncated"));
}

#[test]
fn max_steps_ends_a_runaway_tool_loop_with_a_notice() {
    let fx = Fx::with(|c| c.top("max_steps", 3));
    fx.sb.write("work/a.txt", "a\n");
    fx.fake
        .set_default_reply(Reply::tool_call("read_file", json!({"path": "a.txt"})));
    let o = fx.run(&["run", "loop forever"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("max_steps"), "{}", stderr(&o));
    assert_eq!(fx.chats().len(), 3);
    let session = fx.session();
    assert_eq!(messages(&session).len(), 1 + 3 * 2);
    assert_consistent(&session);
}

// ---------------------------------------------------------------- --json

#[test]
fn json_events_for_a_turn_with_a_tool_call() {
    let fx = Fx::new();
    fx.sb.write("work/notes.txt", "alpha\nbeta\n");
    fx.fake
        .push(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
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

// ---------------------------------------------------------------- Ctrl-C

#[test]
fn sigint_during_a_slow_reply_exits_130_and_the_session_resumes() {
    let fx = Fx::new();
    fx.sb.write("work/notes.txt", "content\n");
    fx.fake
        .push(Reply::tool_call("read_file", json!({"path": "notes.txt"})))
        .push(Reply::text("too late").with_delay(Duration::from_secs(8)));
    let child = fx
        .cmd(&["run", "read it slowly"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the second request", Duration::from_secs(20), || {
        fx.chats().len() == 2
    });
    let started = Instant::now();
    sigint(&child);
    let o = wait_output(child, Duration::from_secs(20));
    assert_eq!(code(&o), Some(130), "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "Ctrl-C did not cancel the wait"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));

    let session = fx.session();
    assert_eq!(roles(&messages(&session)), ["user", "assistant", "tool"]);
    assert_consistent(&session);

    fx.fake.push(Reply::text("resumed fine"));
    let o = fx.run(&["run", "-c", "go on"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "resumed fine\n");
    let last = fx.chats().pop().unwrap();
    assert_eq!(last.roles(), ["user", "assistant", "tool", "user"]);
    assert_consistent(&session);
}

#[test]
fn sigint_during_a_shell_command_answers_the_call_and_resumes() {
    let fx = Fx::new();
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "sleep 20 && touch too_late.txt"}),
        ))
        .push(Reply::text("unreachable"));
    let child = fx
        .cmd(&["run", "--allow-shell", "sleep a while"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the tool call", Duration::from_secs(20), || {
        fx.session_files()
            .first()
            .is_some_and(|p| messages(p).len() >= 2)
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    sigint(&child);
    let o = wait_output(child, Duration::from_secs(20));
    assert_eq!(code(&o), Some(130), "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "Ctrl-C did not stop the shell"
    );
    assert_eq!(fx.chats().len(), 1, "no model call after the interrupt");

    let session = fx.session();
    let msgs = messages(&session);
    assert_eq!(roles(&msgs), ["user", "assistant", "tool"]);
    assert!(content(&msgs[2]).contains("interrupted"), "{}", msgs[2]);
    assert_consistent(&session);

    fx.fake.push(Reply::text("ok then"));
    let o = fx.run(&["run", "-c", "never mind"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let last = fx.chats().pop().unwrap();
    assert_eq!(last.roles(), ["user", "assistant", "tool", "user"]);
    assert!(!fx.sb.work.join("too_late.txt").exists());
}

// ---------------------------------------------------------------- disk failures

/// Run eonyx with a file-size limit (RLIMIT_FSIZE: `ulimit -f`, in 512-byte
/// blocks for dash, 1024 for bash) and SIGXFSZ ignored, so writes past the
/// limit fail with EFBIG — a write failure that bites root too.
fn limited(fx: &Fx, blocks: u32, args: &[&str]) -> Command {
    let c = fx.sb.eonyx();
    let mut sh = Command::new("sh");
    sh.current_dir(&fx.sb.work);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_eonyx"))
        .args(args);
    sh
}

#[test]
fn a_failed_append_aborts_the_turn_before_any_further_model_call() {
    let fx = Fx::new();
    // A tool result too big for the file-size limit: the user message and
    // the tool call are saved, the result cannot be.
    fx.sb.write("work/big.txt", "x".repeat(40_000));
    fx.fake
        .push(Reply::tool_call("read_file", json!({"path": "big.txt"})))
        .push(Reply::text("must not be asked"));
    let o = run_with_stdin(limited(&fx, 32, &["run", "read big.txt"]), "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("cannot save to the session file"), "{err}");
    assert!(err.contains(".jsonl"), "the message names the file: {err}");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert_eq!(
        fx.chats().len(),
        1,
        "a model call happened after the failed append"
    );
    // What was saved is intact; the unanswered call is answered on resume.
    let session = fx.session();
    assert_eq!(roles(&messages(&session)), ["user", "assistant"]);
    fx.fake.clear_requests();
    fx.fake.push(Reply::text("back"));
    let o = fx.run(&["run", "-c", "again"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_consistent(&session);
    assert_eq!(fx.chats()[0].roles(), ["user", "assistant", "tool", "user"]);

    // The first append of a turn failing (the file is already past the
    // limit): no model call at all, and the file is unchanged.
    fx.fake.clear_requests();
    let before = std::fs::read(&session).unwrap();
    let blocks = u32::try_from(before.len() / 1024)
        .unwrap()
        .saturating_sub(1)
        .max(1);
    let o = run_with_stdin(limited(&fx, blocks, &["run", "-c", "one more"]), "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot save to the session file"),
        "{}",
        stderr(&o)
    );
    assert!(fx.chats().is_empty(), "the model was asked past the disk");
    assert_eq!(std::fs::read(&session).unwrap(), before);
}

#[test]
fn an_unusable_sessions_dir_fails_with_a_clear_message_and_no_model_call() {
    let fx = Fx::new();
    // A file where the sessions directory should be.
    fx.sb.write("data/sessions", "not a directory");
    let o = fx.run(&[], "hello\n");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert!(err.contains("sessions"), "names the path: {err}");
    assert!(fx.chats().is_empty());
}

// ---------------------------------------------------------------- exit codes, pipes

#[test]
fn exit_codes_for_usage_errors_and_a_closed_stdout_is_quiet() {
    let fx = Fx::new();
    let o = fx.run(&["--no-such-flag"], "");
    assert_eq!(code(&o), Some(2));
    let o = fx.run(&["-c", "-s", "20200101T000000-00000000"], "x\n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    // Batch -c with no session: a usage error, nothing sent.
    let o = fx.run(&["-c"], "x\n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(fx.chats().is_empty());

    // A provider that is down: a runtime failure.
    let down = Fx::with(|c| c.set("base_url", "http://127.0.0.1:9/v1"));
    let o = down.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(!stderr(&o).is_empty());

    // Closed stdout (`eonyx ... | head -0`): exits quietly.
    for _ in 0..3 {
        fx.fake.push(Reply::text("a".repeat(100)));
        assert_eq!(code(&fx.run(&["run", "make a session"], "")), Some(0));
    }
    for args in [&["sessions"][..], &["run", "another answer"][..]] {
        fx.fake.push(Reply::text("answer ".repeat(20_000)));
        let mut child = fx
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = wait_output(child, Duration::from_secs(30));
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            !err.to_lowercase().contains("broken pipe") && !err.contains("error"),
            "{args:?}: {err}"
        );
    }
}

// ---------------------------------------------------------------- REPL in tmux

/// A tmux server of its own (`-L`), killed on drop.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    fn pane(&self) -> String {
        let o = self
            .cmd()
            .args(["capture-pane", "-p", "-J", "-S", "-200", "-t", "repl"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub(crate) fn send(&self, keys: &str) {
        let st = self
            .cmd()
            .args(["send-keys", "-t", "repl", "-l", keys])
            .status()
            .unwrap();
        assert!(st.success());
        let st = self
            .cmd()
            .args(["send-keys", "-t", "repl", "Enter"])
            .status()
            .unwrap();
        assert!(st.success());
    }

    pub(crate) fn wait_pane(&self, what: &str, mut cond: impl FnMut(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let pane = self.pane();
            if cond(&pane) {
                return pane;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; pane:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

pub(crate) fn prompt_count(pane: &str) -> usize {
    pane.lines()
        .filter(|l| {
            l.trim_start().starts_with("{ctx ")
                && l.contains("%} >")
                && l["{ctx ".len()..]
                    .trim_start()
                    .split('%')
                    .next()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count()
}

/// Start a shell line in a new tmux server whose session `repl` runs in the
/// sandbox's work dir. `line(env, bin)` builds it from the sandbox's
/// environment assignments and the binary's path.
pub(crate) fn start_repl(fx: &Fx, line: impl Fn(&str, &str) -> String) -> Tmux {
    let tmux = Tmux {
        socket: format!(
            "eonyx-e2e-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ),
    };
    let base = fx.sb.eonyx();
    let mut env = String::from(
        "env -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u OPENAI_API_KEY -u OPENAI_BASE_URL -u EONYX_MODEL",
    );
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            env.push_str(&format!(
                " {}='{}'",
                k.to_str().unwrap(),
                v.to_str().unwrap()
            ));
        }
    }
    let script = line(&env, env!("CARGO_BIN_EXE_eonyx"));
    let st = tmux
        .cmd()
        .args([
            "new-session",
            "-d",
            "-s",
            "repl",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
        ])
        .arg(&fx.sb.work)
        .arg(&script)
        .status()
        .unwrap();
    assert!(st.success(), "tmux new-session failed");
    tmux
}

#[test]
fn repl_asks_before_running_a_shell_command_and_remembers_always() {
    let fx = Fx::new();
    let touch = |name: &str| json!({"command": format!("touch {name}")});
    fx.fake
        .push(Reply::tool_call("shell", touch("denied.txt")))
        .push(Reply::text("ok, not run"))
        .push(Reply::tool_call("shell", touch("once.txt")))
        .push(Reply::text("ran once"))
        .push(Reply::tool_call("shell", touch("always1.txt")))
        .push(Reply::tool_call("shell", touch("always2.txt")))
        .push(Reply::text("ran both"));
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);

    tmux.send("make denied.txt");
    tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 1);
    tmux.send("n");
    tmux.wait_pane("the answer", |p| {
        p.contains("ok, not run") && prompt_count(p) >= 2
    });
    assert!(!fx.sb.work.join("denied.txt").exists());
    let denied = fx.chats()[1].messages().last().cloned().unwrap();
    assert!(content(&denied).contains("denied"), "{denied}");

    tmux.send("make once.txt");
    tmux.wait_pane("the second question", |p| {
        p.matches("[a]lways").count() == 2
    });
    tmux.send("y");
    tmux.wait_pane("the answer", |p| {
        p.contains("ran once") && prompt_count(p) >= 3
    });
    assert!(fx.sb.work.join("once.txt").exists());

    // "always" covers the rest of the session: the second call is not asked.
    tmux.send("make two files");
    tmux.wait_pane("the third question", |p| p.matches("[a]lways").count() == 3);
    tmux.send("a");
    let pane = tmux.wait_pane("the answer", |p| {
        p.contains("ran both") && prompt_count(p) >= 4
    });
    assert_eq!(pane.matches("[a]lways").count(), 3, "{pane}");
    assert!(fx.sb.work.join("always1.txt").exists());
    assert!(fx.sb.work.join("always2.txt").exists());

    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

#[test]
fn repl_in_a_real_terminal_shows_the_prompt_help_and_streams_a_turn() {
    if Command::new("tmux").arg("-V").output().is_err() {
        panic!("tmux is not installed (`.ci/run` installs it)");
    }
    let fx = Fx::new();
    fx.fake.push(
        Reply::text("streamed words arrive one by one").with_chunk_delay(Duration::from_millis(30)),
    );
    // First a fresh session, then one that resumes it.
    let tmux = start_repl(&fx, |env, bin| {
        format!(
            "{env} '{bin}' --new; echo EONYX_EXIT=$?; {env} '{bin}'; echo EONYX_EXIT2=$?; sleep 60"
        )
    });
    let pane = tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    assert!(pane.contains("new session 1"), "{pane}");

    tmux.send("/help");
    let pane = tmux.wait_pane("the help", |p| p.contains("/exit") && prompt_count(p) >= 2);
    for cmd in [
        "/compact [focus]",
        "/new",
        "/sessions",
        "/resume ID",
        "/rename TITLE",
        "/context",
    ] {
        assert!(pane.contains(cmd), "/help lists {cmd}:\n{pane}");
    }
    assert!(fx.chats().is_empty(), "/help called the model");

    tmux.send("tell me something");
    let pane = tmux.wait_pane("the streamed answer", |p| {
        p.contains("streamed words arrive one by one") && prompt_count(p) >= 3
    });
    assert_eq!(fx.chats().len(), 1, "{pane}");
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("tell me something")
    );

    tmux.send("/nonsense");
    tmux.wait_pane("the hint", |p| p.contains("unknown command /nonsense"));
    assert_eq!(fx.chats().len(), 1);

    // Ctrl-C during a slow reply cancels the turn, not the REPL.
    fx.fake
        .push(Reply::text("far too slow").with_delay(Duration::from_secs(8)));
    tmux.send("a slow one");
    wait_for("the slow request", Duration::from_secs(20), || {
        fx.chats().len() == 2
    });
    let st = tmux
        .cmd()
        .args(["send-keys", "-t", "repl", "C-c"])
        .status()
        .unwrap();
    assert!(st.success());
    tmux.wait_pane("the interrupt", |p| {
        p.contains("interrupted") && prompt_count(p) >= 5
    });

    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_eq!(
        roles(&messages(&fx.session())),
        ["user", "assistant", "user"]
    );

    // Plain `eonyx` resumes the most recent session and says so; Ctrl-C
    // at the prompt exits with 130.
    let pane = tmux.wait_pane("the resumed REPL", |p| {
        p.contains("resumed session 1") && prompt_count(p) >= 6
    });
    assert!(pane.contains("3 messages"), "{pane}");
    let st = tmux
        .cmd()
        .args(["send-keys", "-t", "repl", "C-c"])
        .status()
        .unwrap();
    assert!(st.success());
    tmux.wait_pane("the exit on Ctrl-C", |p| p.contains("EONYX_EXIT2=130"));
    assert_eq!(fx.session_files().len(), 1);
}

/// `provider = "anthropic"`: a tool loop through the Messages API, with the
/// stable prefix carrying the cache breakpoint and the date line outside it.
#[test]
fn anthropic_tool_loop_marks_the_stable_prefix_for_caching() {
    let sb = Sandbox::new();
    sb.write("work/eonyx.json", "{}\n");
    sb.write("work/notes.txt", "the answer is 42\n");
    sb.write("work/AGENTS.md", "Be brief.\n");
    let fake = FakeServer::start();
    FakeConfig::anthropic(&fake.base_url())
        .set("retries", 0)
        .write(Utf8Path::from_path(&sb.config).unwrap())
        .unwrap();
    fake.push(Reply::tool_call("read_file", json!({"path": "notes.txt"})));
    fake.push(Reply::text("It says 42."));

    let out = run_with_stdin(
        {
            let mut c = sb.eonyx();
            c.args(["run", "what do my notes say?"]);
            c
        },
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It says 42.\n");

    let reqs = fake.chat_requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.is_anthropic()));
    let blocks = reqs[0].system_blocks();
    assert_eq!(
        blocks.len(),
        2,
        "stable prefix and volatile suffix: {blocks:?}"
    );
    assert_eq!(blocks[0]["cache_control"]["type"], "ephemeral");
    assert!(
        blocks[0]["text"]
            .as_str()
            .unwrap()
            .contains("# Project context")
    );
    assert!(blocks[1].get("cache_control").is_none());
    assert!(
        blocks[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("Current date (UTC): ")
    );
    // The second request answers the tool_use with a tool_result block.
    let msgs = reqs[1].messages();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    let call_id = msgs[msgs.len() - 2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()["id"]
        .clone();
    assert_eq!(result["tool_use_id"], call_id);
    assert!(result.to_string().contains("the answer is 42"));
}

/// Context files are re-read before every user turn: a file changed during
/// a session is used from the next turn on, with a one-line notice; an
/// unchanged one gives a byte-identical system prompt.
#[test]
fn a_context_file_changed_mid_session_is_used_from_the_next_turn_with_a_notice() {
    let fx = Fx::new();
    fx.sb.write("work/AGENTS.md", "Rule one.\n");
    let edit = json!({"command": "echo 'Rule two.' >> AGENTS.md"});
    fx.fake
        .push(Reply::text("first"))
        .push(Reply::tool_call("shell", edit))
        .push(Reply::text("edited"))
        .push(Reply::text("third"));
    let o = fx.run(&["--allow-shell"], "one\ntwo\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let chats = fx.chats();
    assert_eq!(chats.len(), 4);
    // Turn 1 and turn 2 (both steps) see the original file, byte for byte.
    assert_eq!(chats[0].system_text(), chats[1].system_text());
    assert_eq!(chats[1].system_text(), chats[2].system_text());
    assert!(!chats[2].system_text().contains("Rule two."));
    // Turn 3 sees the edit, and stderr said so once.
    assert!(chats[3].system_text().contains("Rule one.\nRule two."));
    let err = stderr(&o);
    let notices: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("context changed") && l.contains("AGENTS.md"))
        .collect();
    assert_eq!(notices.len(), 1, "{err}");
}

/// `/context` lists the context files with sizes and the `{ctx}` estimate,
/// on stderr, without calling the model.
#[test]
fn slash_context_lists_the_files_and_the_estimate() {
    let fx = Fx::new();
    fx.sb.write("work/AGENTS.md", "Use tabs.\n");
    fx.sb.write("work/style.context.md", "Short lines.\n");
    let o = fx.run(&[], "/context\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    let table: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("FILE"))
        .take(3)
        .collect();
    assert_eq!(table.len(), 3, "{err}");
    assert!(
        table[1].starts_with("AGENTS.md") && table[1].contains(" 10 "),
        "{err}"
    );
    assert!(table[2].starts_with("style.context.md"), "{err}");
    assert!(err.contains("context: ~"), "{err}");
    assert!(fx.chats().is_empty());
}
