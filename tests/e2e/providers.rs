//! Real servers' conventions through the real binary (issue 12, docs/providers.md):
//! Ollama's window and silent truncation, parameters a model refuses,
//! replies cut by the output cap, a server restarted with another window,
//! a missing model name, Anthropic's base_url convention.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::{Command, Output, Stdio};

use eonyx_tests::{FakeConfig, FakeServer, Ollama, RecordedRequest, Refuse, Reply, TestEnv};
use serde_json::{Value, json};

use crate::compaction::{BIN, env_with, line, openai, summarizer_requests};
use crate::util::{input_lines, json_lines, spawn_with_stdin, stderr};

fn summary(_r: &RecordedRequest) -> Reply {
    Reply::text("## Active goal\nchat\n## Critical context\nnone")
}

fn lines(n: usize, chars: usize) -> Vec<String> {
    (1..=n).map(|i| line(i, chars)).collect()
}

fn cmd(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut c = env.command(BIN);
    c.args(args).env_remove("OLLAMA_CONTEXT_LENGTH");
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

struct Run {
    out: Output,
    events: Vec<Value>,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn of_type(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }
    fn messages(&self, t: &str) -> Vec<String> {
        self.of_type(t)
            .iter()
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
    /// Whether an event of type `t` has a message containing `text`.
    fn said(&self, t: &str, text: &str) -> bool {
        self.messages(t).iter().any(|m| m.contains(text))
    }
    fn assert_said(&self, t: &str, text: &str) {
        assert!(
            self.said(t, text),
            "no {t} with {text:?}: {:?}",
            self.messages(t)
        );
    }
}

/// A batch run (`eonyx --json`, `lines` piped on stdin).
fn batch(env: &TestEnv, lines: &[String], args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = spawn_with_stdin(&mut cmd(env, &all, vars), input_lines(lines))
        .wait_with_output()
        .unwrap();
    let events = json_lines(&out.stdout);
    Run { out, events }
}

/// [`batch`], which must succeed.
fn batch_ok(env: &TestEnv, lines: &[String], args: &[&str], vars: &[(&str, &str)]) -> Run {
    let run = batch(env, lines, args, vars);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    run
}

fn run(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Output {
    cmd(env, args, vars).stdin(Stdio::null()).output().unwrap()
}

fn window(env: &TestEnv, vars: &[(&str, &str)]) -> Value {
    let out = run(env, &["config", "--json"], vars);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["values"]["models.fake.context_window"].clone()
}

/// Two turns, then `/compact` (with `keep_turns = 1` the first is summarized).
fn compact_after_two_turns() -> Vec<String> {
    ["first turn", "second turn", "/compact"]
        .map(str::to_owned)
        .to_vec()
}

fn run_ok_json(env: &TestEnv, args: &[&str]) -> Value {
    let out = run(env, args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Thirty 600-character turns (compacted as needed) against a server that
/// behaves like `ollama`, with no configured window; the run succeeded.
fn ollama_session(ollama: Ollama) -> (FakeServer, TestEnv, Run) {
    let server = FakeServer::start();
    server
        .behave_like_ollama(Some(ollama))
        .set_summarizer(summary);
    let env = env_with(&openai(&server).context_window(None));
    let run = batch_ok(&env, &lines(30, 600), &[], &[]);
    (server, env, run)
}

// ---------------------------------------------------------------------------
// 1. Ollama: the window it runs with, and silent truncation.

#[test]
fn ollama_compacts_at_the_window_it_runs_with_not_the_training_length() {
    let (server, env, run) = ollama_session(Ollama {
        training: 131_072,
        num_ctx: None,
        ps_context: Some(4096),
        loads_on_first_request: false,
        runs_with: 4096,
    });
    assert!(!run.of_type("compaction").is_empty(), "never compacted");
    assert!(
        server.truncated() <= 1,
        "{} requests truncated",
        server.truncated()
    );
    let w = window(&env, &[]);
    assert_eq!(w["value"], 4096, "{w}");
    assert!(
        w["source"]
            .as_str()
            .unwrap()
            .starts_with("detected from /api/ps"),
        "{w}"
    );
}

#[test]
fn ollama_num_ctx_wins_and_without_it_the_default_is_used_never_the_training_length() {
    let server = FakeServer::start();
    let ollama = Ollama {
        training: 131_072,
        num_ctx: Some(8192),
        ps_context: Some(2048),
        loads_on_first_request: false,
        runs_with: 8192,
    };
    server.behave_like_ollama(Some(ollama));
    let env = env_with(&openai(&server).context_window(None));
    batch_ok(&env, &["hi".to_owned()], &[], &[]);
    let w = window(&env, &[]);
    assert_eq!(w["value"], 8192, "{w}");
    assert!(w["source"].as_str().unwrap().contains("/api/show num_ctx"));

    // Not loaded, no num_ctx: Ollama's default, from OLLAMA_CONTEXT_LENGTH
    // when eonyx sees it, else 4096.
    server.behave_like_ollama(Some(Ollama {
        num_ctx: None,
        ps_context: None,
        ..ollama
    }));
    batch_ok(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(window(&env, &[])["value"], 4096);
    batch_ok(
        &env,
        &["hi".to_owned()],
        &[],
        &[("OLLAMA_CONTEXT_LENGTH", "6000")],
    );
    assert_eq!(window(&env, &[])["value"], 6000);

    // Once the first request has loaded the model, /api/ps is asked again
    // and its window replaces the default within the same run.
    let server = FakeServer::start();
    server.behave_like_ollama(Some(Ollama {
        num_ctx: None,
        ps_context: Some(3000),
        loads_on_first_request: true,
        ..ollama
    }));
    let env = env_with(&openai(&server).context_window(None));
    let r = batch_ok(&env, &["hi".to_owned()], &[], &[]);
    r.assert_said("notice", "3000-token context window (from /api/ps)");
    assert_eq!(window(&env, &[])["value"], 3000);
}

#[test]
fn silent_truncation_is_detected_learned_warned_once_compacted_and_resent() {
    // The server claims 32k but truncates everything over 3000 tokens.
    let (server, env, run) = ollama_session(Ollama {
        training: 131_072,
        num_ctx: Some(32_768),
        ps_context: None,
        loads_on_first_request: false,
        runs_with: 3000,
    });
    let warned: Vec<String> = run
        .messages("warning")
        .into_iter()
        .filter(|m| m.contains("silently truncated"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", run.messages("warning"));
    assert!(!run.of_type("compaction").is_empty(), "never compacted");
    // Caught on the first or second truncated request, never again after.
    assert!(
        (1..=3).contains(&server.truncated()),
        "{} truncated",
        server.truncated()
    );
    let w = window(&env, &[]);
    assert_eq!(w["origin"], "truncation", "{w}");
    assert!(w["value"].as_u64().unwrap() <= 3000, "{w}");
    // The server answers the same as before: the learned window holds.
    batch_ok(&env, &["again".to_owned()], &["-c"], &[]);
    assert_eq!(window(&env, &[])["origin"], "truncation");
}

// ---------------------------------------------------------------------------
// 2. Parameters a model refuses.

#[test]
fn refused_temperature_and_max_tokens_are_dropped_renamed_and_remembered() {
    let server = FakeServer::start();
    server
        .refuse_parameters(Refuse {
            temperature: true,
            max_tokens: true,
            ..Default::default()
        })
        .set_summarizer(summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", 4096)
            .set("temperature", 0.2),
    );
    let run = batch_ok(&env, &lines(20, 600), &[], &[]);
    assert!(!run.of_type("compaction").is_empty(), "never compacted");
    assert!(server.refusals() <= 2, "{} refusals", server.refusals());
    assert!(server.refusals() >= 1);
    let sent = server.chat_requests();
    let last = sent.last().unwrap();
    assert!(last.body.get("temperature").is_none(), "{}", last.raw_body);
    assert_eq!(last.body["max_completion_tokens"], 256);
    assert!(sent.iter().any(RecordedRequest::is_summarizer));

    // `sessions show --effective --json` shows the shape that is sent.
    let session = run.of_type("session")[0]["id"].as_str().unwrap().to_owned();
    let shown = run_ok_json(
        &env,
        &["sessions", "show", &session, "--effective", "--json"],
    );
    assert!(shown.get("temperature").is_none(), "{shown}");
    assert_eq!(shown["max_completion_tokens"], 256, "{shown}");

    // A later run sends the right shape the first time.
    let before = server.refusals();
    let again = batch_ok(&env, &lines(20, 600), &[], &[]);
    assert!(!again.of_type("compaction").is_empty());
    assert_eq!(server.refusals(), before);
}

#[test]
fn compaction_temperature_is_the_summarizers_preference() {
    let server = FakeServer::start();
    server.set_summarizer(summary);
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.temperature = 0.5\ncompaction.keep_turns = 1")
            .unwrap(),
    );
    batch_ok(&env, &compact_after_two_turns(), &[], &[]);
    let sum = summarizer_requests(&server).remove(0);
    assert_eq!(sum.body["temperature"], 0.5);
    // Unset: the summarizer's own default.
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap(),
    );
    server.clear_requests();
    batch_ok(&env, &compact_after_two_turns(), &[], &[]);
    let sum = summarizer_requests(&server).remove(0);
    assert_eq!(sum.body["temperature"], 0.1);
}

// ---------------------------------------------------------------------------
// 3. Replies cut by the output cap.

#[test]
fn a_reply_cut_by_the_output_cap_is_reported_on_stderr_and_in_json() {
    let server = FakeServer::start();
    server.push(Reply::text("The answer is forty").with_finish_reason("length"));
    let env = env_with(&openai(&server).set("max_output_tokens", 128));
    let out = run(&env, &["run", "what is it?"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("reply cut at max_output_tokens = 128; raise it in config"),
        "{err}"
    );
    server.push(Reply::text("cut again").with_finish_reason("length"));
    let r = batch(&env, &["again".to_owned()], &[], &[]);
    let done = r.of_type("turn_completed");
    assert_eq!(done[0]["finish_reason"], "length", "{done:?}");
    r.assert_said("warning", "max_output_tokens = 128");
}

#[test]
fn a_tool_call_cut_mid_arguments_is_not_run_and_the_model_is_told() {
    let server = FakeServer::start();
    server
        .push(Reply::cut_tool_call("read_file", r#"{"path": "src/ma"#))
        .push(Reply::text("I will try again later."));
    let env = env_with(&openai(&server));
    let r = batch_ok(&env, &["read src/main.rs".to_owned()], &[], &[]);
    let results = r.of_type("tool_result");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["preview"]
            .as_str()
            .unwrap()
            .contains("cut by the output cap"),
        "{results:?}"
    );
    r.assert_said("warning", "read_file tool call was cut");
    // The model got the result saying so.
    let second = &server.chat_requests()[1];
    let tool = &second.tool_results()[0];
    assert!(tool.contains("was not run"), "{tool}");
}

#[test]
fn a_cut_summary_is_kept_with_its_note_asked_once_and_said() {
    let server = FakeServer::start();
    server.set_summarizer(|_| {
        Reply::text("## Active goal\nchat\n## Progress\nthe first attempt was cu")
            .with_finish_reason("length")
    });
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap(),
    );
    let mut lines = compact_after_two_turns();
    lines.push("third turn".to_owned());
    let r = batch_ok(&env, &lines, &[], &[]);
    let sums: Vec<RecordedRequest> = server
        .chat_requests()
        .into_iter()
        .filter(RecordedRequest::is_summarizer)
        .collect();
    // One request: never asked for again.
    assert_eq!(sums.len(), 1);
    r.assert_said("warning", "summary was cut");
    // Kept, with its note, and the next request carries it.
    let after = server.chat_requests().pop().unwrap();
    assert!(!after.is_summarizer());
    let system = after.system_text();
    assert!(system.contains("the first attempt was cu"), "{system}");
    assert!(
        system.contains("cut at the summarizer's output limit"),
        "{system}"
    );
}

// ---------------------------------------------------------------------------
// 4. A server restarted with a different window.

#[test]
fn props_that_change_between_runs_replace_the_window_up_and_down() {
    let server = FakeServer::start();
    let env = env_with(&openai(&server).context_window(None));
    for n_ctx in [6000_u64, 12_000, 3000] {
        server.advertise_props(Some(n_ctx));
        batch_ok(&env, &["hi".to_owned()], &[], &[]);
        let w = window(&env, &[]);
        assert_eq!(w["value"], n_ctx, "{w}");
        assert_eq!(w["origin"], "detected", "{w}");
    }
}

#[test]
fn a_window_learned_from_an_overflow_holds_until_the_server_answers_differently() {
    let server = FakeServer::start();
    server
        .advertise_props(Some(8000))
        .set_context_window(Some(5000))
        .set_summarizer(summary);
    let env = env_with(&openai(&server).context_window(None));
    // A prompt over 5000 overflows: the window 5000 is learned.
    batch_ok(&env, &lines(40, 600), &[], &[]);
    let w = window(&env, &[]);
    assert_eq!(
        (w["value"].as_u64(), w["origin"].as_str()),
        (Some(5000), Some("overflow")),
        "{w}"
    );
    // Same answer from /props: it holds.
    batch_ok(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(window(&env, &[])["origin"], "overflow");
    // Restarted with a larger window: the new answer replaces it.
    server
        .advertise_props(Some(16_000))
        .set_context_window(None);
    batch_ok(&env, &["hi".to_owned()], &[], &[]);
    let w = window(&env, &[]);
    assert_eq!(
        (w["value"].as_u64(), w["origin"].as_str()),
        (Some(16_000), Some("detected")),
        "{w}"
    );
}

#[test]
fn reset_limits_forgets_the_cache_and_a_corrupt_cache_is_warned_about_and_replaced() {
    let server = FakeServer::start();
    server.advertise_props(Some(6000));
    let env = env_with(&openai(&server).context_window(None));
    batch_ok(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(window(&env, &[])["value"], 6000);

    let out = run(&env, &["config", "--reset-limits"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("forgot"), "{}", stderr(&out));
    assert!(!env.data_dir.join("limits.json").exists());
    assert_eq!(window(&env, &[])["origin"], "fallback");

    std::fs::write(env.data_dir.join("limits.json"), "{not json").unwrap();
    let r = batch_ok(&env, &["hi".to_owned()], &[], &[]);
    let err = r.stderr();
    assert!(
        err.lines()
            .any(|l| l.contains("limits.json") && l.contains("replaced")),
        "{err}"
    );
    let text = std::fs::read_to_string(env.data_dir.join("limits.json")).unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
    assert_eq!(window(&env, &[])["value"], 6000);
}

// ---------------------------------------------------------------------------
// 5. No model name.

#[test]
fn no_model_name_is_a_config_error_naming_both_ways_to_set_it() {
    let server = FakeServer::start();
    let env = TestEnv::new().unwrap();
    let vars = [
        ("OPENAI_BASE_URL", server.base_url()),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run(&env, &["run", "hi"], &vars);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("EONYX_MODEL") && err.contains("models.default.name"),
        "{err}"
    );
    assert!(server.chat_requests().is_empty());

    // The server lists exactly one model: use it and say so.
    server.list_one_model(true).set_model_id("only-one");
    let out = run(&env, &["run", "hi"], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("`only-one`"), "{}", stderr(&out));
    assert_eq!(server.chat_requests()[0].body["model"], "only-one");
}

#[test]
fn keep_turns_zero_is_rejected_clearly() {
    let server = FakeServer::start();
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.keep_turns = 0")
            .unwrap(),
    );
    let out = run(&env, &["config"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("keep_turns"), "{}", stderr(&out));
    assert!(stderr(&out).contains("at least 1"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------
// 6. Anthropic's base_url convention.

#[test]
fn anthropic_zero_config_uses_the_server_root_and_marks_failed_tool_results() {
    let server = FakeServer::start();
    server.require_api_key(Some("sk-ant-test"));
    server
        .push(Reply::tool_call(
            "read_file",
            json!({"path": "missing.txt"}),
        ))
        .push(Reply::text("no such file"));
    let env = TestEnv::new().unwrap();
    let root = server.root_url();
    let out = cmd(
        &env,
        &["run", "read missing.txt"],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("ANTHROPIC_BASE_URL", &root),
            ("EONYX_MODEL", "claude-test"),
        ],
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let chats = server.chat_requests();
    assert_eq!(chats.len(), 2);
    assert!(chats.iter().all(|r| r.path == "/v1/messages"), "{chats:?}");
    assert_eq!(chats[0].body["model"], "claude-test");
    let result = chats[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["is_error"], true, "{result}");

    // A base_url with a trailing /v1 (as in older configs) works too.
    let env = env_with(&FakeConfig::anthropic(&server.base_url()).set("api_key_env", "K"));
    let out = cmd(&env, &["run", "hi"], &[("K", "sk-ant-test")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.chat_requests().last().unwrap().path, "/v1/messages");
}

// ---------------------------------------------------------------------------
// Also: the summarizer is given its own model's window.

#[test]
fn the_summarizer_gets_the_window_of_compaction_model() {
    let server = FakeServer::start();
    server.set_summarizer(summary);
    let config = openai(&server)
        .set("context_window", 65_536)
        .merge_model_toml("compaction.keep_turns = 1")
        .unwrap()
        .merge_top_toml("[compaction]\nmodel = \"small\"\nsummary_max_tokens = 4096\n")
        .unwrap();
    let env = TestEnv::new().unwrap();
    let text = format!(
        "{}\n[models.small]\nbase_url = \"{}\"\nname = \"small-model\"\ncontext_window = 2048\nretries = 0\n",
        config.to_toml().unwrap(),
        server.base_url()
    );
    std::fs::write(env.config_dir.join("config.toml"), text).unwrap();
    batch_ok(&env, &compact_after_two_turns(), &[], &[]);
    let sum = summarizer_requests(&server).remove(0);
    assert_eq!(sum.body["model"], "small-model");
    // A quarter of the summarizer's 2048, not of the session's 65,536.
    assert_eq!(sum.body["max_tokens"], 512, "{}", sum.raw_body);
}
