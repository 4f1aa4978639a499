//! Compaction and context-window detection through the real binary (issues
//! 5 and 8): batch runs (piped stdin) against the fake provider, asserting
//! on what the fake received, on the session file and on what the user sees.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use eonyx_tests::{FakeConfig, FakeServer, OverflowFlavor, RecordedRequest, Reply, TestEnv};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_eonyx");

/// What the fake summarizer answers: a structured summary that repeats
/// every `CODEWORD-…` it saw (in the transcript or the previous summary).
fn echo_summary(r: &RecordedRequest) -> Reply {
    let mut words: Vec<String> = codewords(&r.all_text());
    words.sort();
    words.dedup();
    Reply::text(format!(
        "## Active goal\nchat\n## Critical context\nremembered: {}",
        if words.is_empty() {
            "none".to_owned()
        } else {
            words.join(" ")
        }
    ))
}

fn codewords(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("CODEWORD-") && w.len() > "CODEWORD-".len())
        .map(str::to_owned)
        .collect()
}

/// A user line of about `chars` characters, unique per `n`.
fn line(n: usize, chars: usize) -> String {
    let mut s = format!("turn {n:02}: please remember this paragraph.");
    let filler = " the quick brown fox jumps over the lazy dog";
    while s.len() < chars {
        s.push_str(filler);
    }
    s.truncate(chars);
    // Batch input is trimmed: keep lines comparable with what is stored.
    s.trim_end().to_owned()
}

fn env_with(config: &FakeConfig) -> TestEnv {
    let env = TestEnv::new().unwrap();
    env.write_config(config).unwrap();
    env
}

fn openai(server: &FakeServer) -> FakeConfig {
    FakeConfig::openai(&server.base_url()).set("retries", 0)
}

fn cmd(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut c = env.command(BIN);
    c.args(args);
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

/// Start a batch run (`eonyx --json`) fed `lines` on stdin.
fn spawn_batch(env: &TestEnv, lines: &[String], args: &[&str], vars: &[(&str, &str)]) -> Child {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let mut child = cmd(env, &all, vars)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    child
}

struct Batch {
    out: Output,
    events: Vec<Value>,
}

impl Batch {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn session(&self) -> String {
        self.events
            .iter()
            .find(|e| e["type"] == "session")
            .and_then(|e| e["id"].as_str())
            .expect("a session event")
            .to_owned()
    }
    fn of_type(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }
}

fn finish(child: Child) -> Batch {
    let out = child.wait_with_output().unwrap();
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Batch { out, events }
}

fn batch(env: &TestEnv, lines: &[String], args: &[&str], vars: &[(&str, &str)]) -> Batch {
    finish(spawn_batch(env, lines, args, vars))
}

fn run_ok(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> String {
    let out = cmd(env, args, vars).stdin(Stdio::null()).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "eonyx {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The session file's records, parsed.
fn export(env: &TestEnv, id: &str) -> Vec<Value> {
    run_ok(env, &["sessions", "export", id], &[])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn compactions(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["type"] == "compaction")
        .collect()
}

fn user_messages(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "message" && r["role"] == "user")
        .map(|r| r["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The agent's own requests (summarizer requests excluded).
fn agent_requests(server: &FakeServer) -> Vec<RecordedRequest> {
    server
        .chat_requests()
        .into_iter()
        .filter(|r| !r.is_summarizer())
        .collect()
}

const SUMMARY_HEADING: &str = "# Summary of earlier conversation";

/// Every tool message in every request follows an assistant message of
/// the same request that made the call.
fn assert_no_orphan_tool_results(requests: &[RecordedRequest]) {
    for (i, r) in requests.iter().enumerate() {
        let mut calls = std::collections::HashSet::new();
        for m in r.messages() {
            if let Some(tc) = m["tool_calls"].as_array() {
                for c in tc {
                    calls.insert(c["id"].as_str().unwrap_or_default().to_owned());
                }
            }
            if m["role"] == "tool" {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                assert!(
                    calls.contains(id),
                    "request {i} carries the result of {id} without its call"
                );
            }
        }
    }
}

/// The non-system messages of a request.
fn convo(r: &RecordedRequest) -> Vec<Value> {
    r.messages()
        .into_iter()
        .filter(|m| m["role"] != "system")
        .collect()
}

// ---------------------------------------------------------------------------
// A long session with a small window.

#[test]
fn long_session_compacts_at_the_threshold_keeps_facts_and_never_overflows() {
    const WINDOW: u64 = 8192;
    const THRESHOLD: f64 = 60.0;
    const KEEP: usize = 2;
    let server = FakeServer::start();
    server
        .set_context_window(Some(WINDOW))
        .set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", WINDOW as i64)
            .merge_model_toml(&format!(
                "compaction.threshold_percent = {THRESHOLD}\ncompaction.keep_turns = {KEEP}"
            ))
            .unwrap(),
    );
    let mut lines: Vec<String> = (1..=60).map(|n| line(n, 720)).collect();
    lines[2] = format!(
        "{} CODEWORD-ALBATROSS is the deploy password.",
        line(3, 300)
    );
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = run.session();

    let all = server.chat_requests();
    // Never over the window by the fake's own count (it would have answered 400).
    for r in &all {
        assert!(
            r.prompt_tokens <= WINDOW,
            "a request of {} tokens was sent to a {WINDOW}-token model",
            r.prompt_tokens
        );
    }
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert!(comps.len() >= 3, "only {} compactions", comps.len());
    assert!(comps.iter().all(|c| c["trigger"] == "auto"), "{comps:?}");
    // Export is lossless: every original user line is in the file.
    assert_eq!(user_messages(&records), lines);

    // At each trigger, the last request sent before the compaction was
    // within ±5 points of the threshold (the fake's own count).
    let mut triggers = 0;
    for (i, r) in all.iter().enumerate() {
        if !r.is_summarizer() {
            continue;
        }
        let before = all[..i].iter().rev().find(|r| !r.is_summarizer()).unwrap();
        let pct = before.prompt_tokens as f64 * 100.0 / WINDOW as f64;
        assert!(
            (pct - THRESHOLD).abs() <= 5.0,
            "compaction {triggers} fired after a request at {pct:.1}% of the window (threshold {THRESHOLD}%)"
        );
        triggers += 1;

        // The request after the compaction: summary in the system prompt,
        // the code word retained, the last KEEP user turns verbatim.
        let after = &all[i + 1];
        assert!(!after.is_summarizer());
        let system = after.system_text();
        assert!(system.contains(SUMMARY_HEADING), "{system}");
        assert!(system.contains("CODEWORD-ALBATROSS"), "{system}");
        let users = after.user_texts();
        let n = users.len();
        assert!(n >= KEEP, "{users:?}");
        let last = lines.iter().position(|l| *l == users[n - 1]).unwrap();
        assert_eq!(users[n - KEEP..], lines[last + 1 - KEEP..=last]);
        assert!(
            !users.contains(&lines[0]),
            "the first turn was not compacted"
        );
    }
    assert_eq!(triggers, comps.len());

    // Prompt-cache friendliness: between compactions each request extends
    // the previous one, and the fake reports cache hits.
    let mut appended = 0;
    let mut prev: Option<&RecordedRequest> = None;
    for r in &all {
        if r.is_summarizer() {
            prev = None; // a compaction rewrites the request
            continue;
        }
        if let Some(a) = prev {
            assert_eq!(a.system_text(), r.system_text());
            let (ma, mb) = (convo(a), convo(r));
            assert!(mb.len() > ma.len());
            assert_eq!(mb[..ma.len()], ma[..], "request is not append-only");
            appended += 1;
        }
        prev = Some(r);
    }
    assert!(appended > 30, "{appended}");
    let cached: Vec<u64> = run
        .of_type("turn_completed")
        .iter()
        .map(|e| e["usage"]["cached_tokens"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(cached.len(), 60);
    assert!(
        cached.iter().filter(|c| **c > 0).count() > 40,
        "cached tokens per turn: {cached:?}"
    );

    // `sessions show --effective` is exactly what the next request carries.
    let eff: Value = serde_json::from_str(&run_ok(
        &env,
        &["sessions", "show", &id, "--effective", "--json"],
        &[],
    ))
    .unwrap();
    // It is the request body: the system prompt ends with the summary
    // section, whose last line is the recall hint.
    let summary = comps.last().unwrap()["summary"].as_str().unwrap();
    let shown_system = eff["messages"][0]["content"].as_str().unwrap();
    assert_eq!(eff["messages"][0]["role"], "system");
    assert!(
        shown_system.ends_with(&format!("{summary}\n\n{}", eonyx_prompt::RECALL_HINT)),
        "{shown_system}"
    );
    server.clear_requests();
    let next = batch(
        &env,
        &["one more".to_owned()],
        &["-s", &id],
        &[("EONYX_AUTO_COMPACT", "false")],
    );
    assert_eq!(next.code(), Some(0), "{}", next.stderr());
    let req = &server.chat_requests()[0];
    // The summary section ends with the one-line recall hint.
    assert!(
        req.system_text()
            .ends_with(&format!("{summary}\n\n{}", eonyx_prompt::RECALL_HINT)),
        "{}",
        req.system_text()
    );
    assert_eq!(req.system_text(), shown_system);
    let sent = req.body["messages"].as_array().unwrap();
    let shown = eff["messages"].as_array().unwrap();
    assert_eq!(sent.len(), shown.len() + 1);
    assert_eq!(&sent[..shown.len()], &shown[..]);
    assert_eq!(sent.last().unwrap()["content"], "one more");
}

/// Index (in agent requests) of the first summarizer request, i.e. how
/// many agent requests were sent before the first compaction.
fn first_compaction(server: &FakeServer) -> Option<usize> {
    let all = server.chat_requests();
    let i = all.iter().position(RecordedRequest::is_summarizer)?;
    Some(all[..i].iter().filter(|r| !r.is_summarizer()).count())
}

fn summarizer_requests(server: &FakeServer) -> Vec<RecordedRequest> {
    server
        .chat_requests()
        .into_iter()
        .filter(RecordedRequest::is_summarizer)
        .collect()
}

// ---------------------------------------------------------------------------
// Overflow recovery and learned windows (issues 5 and 8).

/// The configured window (32k) is wrong: the server's real one is 4096.
/// One overflow, a compaction against the learned window, success; the
/// learned window is cached so the next session never overflows.
fn overflow_then_learned(anthropic: bool, flavor: OverflowFlavor) {
    const REAL: u64 = 4096;
    let server = FakeServer::start();
    server
        .set_context_window(Some(REAL))
        .set_overflow_flavor(flavor)
        .set_summarizer(echo_summary);
    let config = if anthropic {
        FakeConfig::anthropic(&server.base_url()).set("retries", 0)
    } else {
        openai(&server)
    };
    let env = env_with(&config.set("context_window", 32_768));
    let lines: Vec<String> = (1..=12).map(|n| line(n, 1500)).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{flavor:?}: {}", run.stderr());
    let over: Vec<u64> = agent_requests(&server)
        .iter()
        .map(|r| r.prompt_tokens)
        .filter(|t| *t > REAL)
        .collect();
    assert_eq!(over.len(), 1, "{flavor:?}: overflowing requests {over:?}");
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert_eq!(comps[0]["trigger"], "overflow", "{comps:?}");
    assert_eq!(user_messages(&records), lines);
    assert!(
        run.of_type("notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap_or("")
            .contains(&REAL.to_string())),
        "{flavor:?}: no notice of the learned window: {:?}",
        run.events
    );

    // `eonyx config` shows where the window came from.
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    let w = &cfg["values"]["models.fake.context_window"];
    assert_eq!(w["value"], REAL, "{w}");
    assert_eq!(w["origin"], "overflow", "{w}");

    // A new session starts with the learned window: no overflow at all.
    server.clear_requests();
    let again = batch(&env, &lines, &[], &[]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr());
    assert!(
        server
            .chat_requests()
            .iter()
            .all(|r| r.prompt_tokens <= REAL),
        "{flavor:?}: the new session overflowed again"
    );
    assert!(!summarizer_requests(&server).is_empty());
}

#[test]
fn overflow_openai_is_recovered_once_and_the_window_is_learned() {
    overflow_then_learned(false, OverflowFlavor::OpenAi);
}

#[test]
fn overflow_llama_cpp_n_ctx_is_learned() {
    overflow_then_learned(false, OverflowFlavor::LlamaCpp);
}

#[test]
fn overflow_anthropic_prompt_too_long_is_learned() {
    overflow_then_learned(true, OverflowFlavor::OpenAi);
}

#[test]
fn a_message_larger_than_the_window_fails_cleanly() {
    let server = FakeServer::start();
    server
        .set_context_window(Some(2048))
        .set_summarizer(echo_summary);
    let env = env_with(&openai(&server));
    let lines = vec!["hello".to_owned(), line(2, 20_000)];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    let err = run.stderr();
    assert!(
        err.contains("too large for the model even after compaction"),
        "{err}"
    );
    // The huge step: at most two requests carry it (the overflow, one retry).
    let carrying = agent_requests(&server)
        .iter()
        .filter(|r| r.user_texts().contains(&lines[1]))
        .count();
    assert!((1..=2).contains(&carrying), "{carrying} requests");
    // Nothing lost.
    assert_eq!(user_messages(&export(&env, &run.session())), lines);
}

// ---------------------------------------------------------------------------
// Summarizer failure, cancellation, loop breaker.

#[test]
fn a_failed_summarizer_deletes_nothing_and_the_turn_goes_on_if_it_fits() {
    let server = FakeServer::start();
    server.set_summarizer(|_| Reply::server_error());
    let env = env_with(&openai(&server).set("context_window", 8192));
    let lines: Vec<String> = (1..=4).map(|n| line(n, 900)).collect();
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "1500")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(!summarizer_requests(&server).is_empty());
    assert!(
        run.of_type("warning").iter().any(|w| w["message"]
            .as_str()
            .unwrap_or("")
            .contains("compaction failed, continuing uncompacted")),
        "{:?}",
        run.events
    );
    assert_eq!(run.of_type("turn_completed").len(), 4);
    let records = export(&env, &run.session());
    assert!(compactions(&records).is_empty());
    assert_eq!(user_messages(&records), lines);
    // Every request still carries the whole conversation.
    let last = agent_requests(&server).pop().unwrap();
    assert_eq!(last.user_texts(), lines);

    // When the request would not fit the window either, the turn fails with
    // the reason, and still nothing is deleted.
    let server = FakeServer::start();
    server.set_summarizer(|_| Reply::server_error());
    let env = env_with(&openai(&server).set("context_window", 4096));
    let lines = vec![line(1, 300), line(2, 300), line(3, 16_000)];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr());
    assert!(
        run.stderr().contains("compaction failed"),
        "{}",
        run.stderr()
    );
    assert!(run.stderr().contains("summarizer"), "{}", run.stderr());
    assert!(
        agent_requests(&server)
            .iter()
            .all(|r| !r.user_texts().contains(&lines[2])),
        "the oversized request was sent anyway"
    );
    let records = export(&env, &run.session());
    assert!(compactions(&records).is_empty());
    assert_eq!(user_messages(&records), lines);
}

#[test]
fn ctrl_c_during_a_slow_summary_exits_130_and_keeps_the_session() {
    let server = FakeServer::start();
    server.set_summarizer(|_| {
        Reply::text("## Active goal\nlate").with_delay(Duration::from_secs(20))
    });
    let env = env_with(&openai(&server).set("context_window", 8192));
    let lines: Vec<String> = (1..=4).map(|n| line(n, 1500)).collect();
    let child = spawn_batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "1700")]);
    let started = Instant::now();
    while summarizer_requests(&server).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no compaction started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let run = finish(child);
    assert_eq!(run.code(), Some(130), "{}", run.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "Ctrl-C did not stop the summary"
    );
    let id = run.session();
    let records = export(&env, &id);
    assert!(compactions(&records).is_empty());
    let users = user_messages(&records);
    assert!(!users.is_empty() && lines.starts_with(&users), "{users:?}");

    // The session is intact: it resumes with every message.
    server.set_summarizer(echo_summary);
    server.clear_requests();
    let next = batch(
        &env,
        &["go on".to_owned()],
        &["-s", &id],
        &[("EONYX_AUTO_COMPACT", "false")],
    );
    assert_eq!(next.code(), Some(0), "{}", next.stderr());
    let sent = agent_requests(&server).pop().unwrap().user_texts();
    assert_eq!(sent[..users.len()], users[..]);
}

#[test]
fn loop_breaker_stops_auto_compaction_and_says_so() {
    let server = FakeServer::start();
    // A summary that never gets the request under the trigger.
    server.set_summarizer(|_| {
        Reply::text(format!(
            "## Active goal\n{}",
            "very long summary ".repeat(300)
        ))
    });
    let env = env_with(
        &openai(&server)
            .set("context_window", 16_384)
            .merge_model_toml("compaction.max_consecutive = 2\ncompaction.keep_turns = 1")
            .unwrap(),
    );
    let lines: Vec<String> = (1..=8).map(|n| line(n, 600)).collect();
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "1500")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.of_type("turn_completed").len(), 8);
    let notices: Vec<&str> = run
        .of_type("notice")
        .iter()
        .filter_map(|n| n["message"].as_str())
        .filter(|m| m.contains("automatic compaction is off"))
        .collect();
    assert_eq!(notices.len(), 1, "{:?}", run.events);
    let sums = summarizer_requests(&server).len();
    assert!((1..=2).contains(&sums), "{sums} summarizer requests");
    // After the breaker, later requests stay over the trigger uncompacted.
    let last = agent_requests(&server).pop().unwrap();
    assert!(last.prompt_tokens > 1500);
    assert_eq!(last.last_user_text().as_deref(), Some(lines[7].as_str()));
}

// ---------------------------------------------------------------------------
// Configuration through the binary.

#[test]
fn overrides_merge_field_by_field_and_env_vars_change_when_compaction_happens() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let config = openai(&server)
        .set("context_window", 8192)
        .merge_model_toml("compaction.threshold_percent = 60\ncompaction.keep_turns = 2")
        .unwrap()
        .merge_top_toml(
            "[compaction]\nthreshold_percent = 70\nkeep_turns = 5\nbuffer_tokens = 3000\nsummary_max_tokens = 1000\n\
             [profiles.p.compaction]\nthreshold_percent = 50\n\
             [profiles.full.compaction]\nthreshold_percent = 100\n",
        )
        .unwrap();
    let env = env_with(&config);
    std::fs::write(
        env.project.join("eonyx.json"),
        r#"{"compaction": {"threshold_percent": 65, "keep_turns": 4, "buffer_tokens": 2500}}"#,
    )
    .unwrap();
    let cfg: Value =
        serde_json::from_str(&run_ok(&env, &["config", "--json", "--profile", "p"], &[])).unwrap();
    let v = |k: &str| cfg["values"][format!("compaction.{k}")].clone();
    assert_eq!(v("threshold_percent")["value"], 50.0); // profile
    assert!(
        v("threshold_percent")["source"]
            .as_str()
            .unwrap()
            .contains("profiles.p")
    );
    assert_eq!(v("keep_turns")["value"], 2); // model
    assert!(
        v("keep_turns")["source"]
            .as_str()
            .unwrap()
            .contains("models.fake")
    );
    assert_eq!(v("buffer_tokens")["value"], 2500); // project
    assert!(
        v("buffer_tokens")["source"]
            .as_str()
            .unwrap()
            .contains("eonyx.json")
    );
    assert_eq!(v("summary_max_tokens")["value"], 1000); // global
    assert!(
        v("summary_max_tokens")["source"]
            .as_str()
            .unwrap()
            .contains("config.toml")
    );

    let lines: Vec<String> = (1..=30).map(|n| line(n, 900)).collect();
    let when = |args: &[&str], vars: &[(&str, &str)]| {
        server.clear_requests();
        let run = batch(&env, &lines, args, vars);
        assert_eq!(run.code(), Some(0), "{args:?} {vars:?}: {}", run.stderr());
        first_compaction(&server)
    };
    // Threshold: profile (50%) compacts before the model's 60%.
    let profile = when(&["--profile", "p"], &[]).expect("profile run compacts");
    let model = when(&[], &[]).expect("model run compacts");
    assert!(profile < model, "profile {profile} vs model {model}");
    // A fixed trigger compacts earlier still; 0 and auto=false disable it.
    let fixed = when(&[], &[("EONYX_AUTO_COMPACT_TOKENS", "2000")]).unwrap();
    assert!(fixed < profile, "fixed {fixed} vs profile {profile}");
    assert_eq!(when(&[], &[("EONYX_AUTO_COMPACT_TOKENS", "0")]), None);
    assert_eq!(when(&[], &[("EONYX_AUTO_COMPACT", "false")]), None);
    // The reserve: at 100% the trigger is window − reserve.
    let small = when(
        &["--profile", "full"],
        &[("EONYX_COMPACTION_RESERVED_TOKENS", "500")],
    )
    .unwrap();
    let large = when(
        &["--profile", "full"],
        &[("EONYX_COMPACTION_RESERVED_TOKENS", "2000")],
    )
    .unwrap();
    assert!(
        large < small,
        "reserve 2000 at {large}, reserve 500 at {small}"
    );
}

// ---------------------------------------------------------------------------
// Tool-result collapse, manual compaction.

#[test]
fn old_tool_results_are_collapsed_in_requests_but_kept_in_the_session() {
    let server = FakeServer::start();
    let env = env_with(
        &openai(&server)
            .set("context_window", 200_000)
            .merge_model_toml(
                "compaction.tool_result_budget_chars = 30000\ncompaction.keep_recent_results = 1",
            )
            .unwrap()
            .top("max_steps", 10),
    );
    let mut files = Vec::new();
    for i in 1..=5 {
        let marker = format!("FILE-MARKER-{i}");
        let body: String = (0..200)
            .map(|l| format!("{marker} line {l} of some source text\n"))
            .collect();
        std::fs::write(env.project.join(format!("big{i}.txt")), &body).unwrap();
        files.push(marker);
    }
    for i in 1..=5 {
        server.push(Reply::tool_call(
            "read_file",
            json!({"path": format!("big{i}.txt")}),
        ));
    }
    server.push(Reply::text("read them all"));
    let run = batch(&env, &["read the five files".to_owned()], &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let reqs = agent_requests(&server);
    assert_eq!(reqs.len(), 6);
    assert_no_orphan_tool_results(&reqs);
    let last = reqs.last().unwrap();
    let tools: Vec<String> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tools.len(), 5);
    let collapsed: Vec<&String> = tools
        .iter()
        .filter(|t| t.contains("tool result collapsed"))
        .collect();
    assert!(!collapsed.is_empty(), "{tools:#?}");
    assert!(
        collapsed[0].contains("read_file") && collapsed[0].contains("big1.txt"),
        "{}",
        collapsed[0]
    );
    assert!(collapsed[0].contains("characters"), "{}", collapsed[0]);
    // The newest result is never collapsed; the oldest goes first.
    assert!(tools[4].contains("FILE-MARKER-5"));
    assert!(!tools[0].contains("FILE-MARKER-1"));
    // The session file keeps every original.
    let export = run_ok(&env, &["sessions", "export", &run.session()], &[]);
    for marker in &files {
        assert!(
            export.contains(&format!("{marker} line 199")),
            "{marker} missing"
        );
    }
}

#[test]
fn manual_compaction_passes_the_focus_from_slash_and_from_the_command() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap(),
    );
    let lines: Vec<String> = vec![
        "first: CODEWORD-FOCUS matters".into(),
        "second".into(),
        "/compact keep the parser design".into(),
        "third".into(),
    ];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sums = summarizer_requests(&server);
    assert_eq!(sums.len(), 1);
    assert!(sums[0].all_text().contains("keep the parser design"));
    let id = run.session();
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 1);
    assert_eq!(comps[0]["trigger"], "manual");
    // The next request carries the summary and only the kept turn onwards.
    let third = agent_requests(&server).pop().unwrap();
    assert!(third.system_text().contains("CODEWORD-FOCUS"));
    assert_eq!(third.user_texts(), ["second", "third"]);

    let out = run_ok(
        &env,
        &["compact", "-s", &id, "--focus", "only the tests"],
        &[],
    );
    assert!(out.contains("CODEWORD-FOCUS"), "{out}");
    let sums = summarizer_requests(&server);
    assert_eq!(sums.len(), 2);
    assert!(sums[1].all_text().contains("only the tests"));
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 2);
    assert_eq!(comps[1]["trigger"], "manual");
    assert_eq!(comps[1]["focus"], "only the tests");
    assert_eq!(
        user_messages(&records),
        ["first: CODEWORD-FOCUS matters", "second", "third"]
    );
}

/// With `--json`, a compaction is a `compaction` event with its figures;
/// `eonyx compact` adds one with the session and the whole record written;
/// keys in alphabetical order, as they have always been (docs/cli.md#json-events).
#[test]
fn compaction_json_events_carry_the_figures_or_the_record() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap(),
    );
    let lines: Vec<String> = vec![
        "first: CODEWORD-JSON".into(),
        "second".into(),
        "/compact".into(),
        "third".into(),
    ];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let id = run.session();
    let stdout = String::from_utf8_lossy(&run.out.stdout).into_owned();
    let line = stdout
        .lines()
        .find(|l| l.contains(r#""type":"compaction""#))
        .unwrap_or_else(|| panic!("no compaction event: {stdout}"));
    let ev: Value = serde_json::from_str(line).unwrap();
    let keys: Vec<&str> = ev.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "first_kept_seq",
            "mid_turn",
            "mode",
            "tokens_after",
            "tokens_before",
            "trigger",
            "type"
        ],
        "{line}"
    );
    assert!(line.starts_with(r#"{"first_kept_seq":"#), "{line}");
    assert_eq!(ev["trigger"], "manual");

    // `eonyx compact --json`: the figures as in a run, then the record.
    let out = run_ok(&env, &["compact", "-s", &id, "--json"], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with(r#"{"first_kept_seq":"#), "{out}");
    assert!(lines[1].starts_with(r#"{"record":{"#), "{out}");
    assert!(
        lines[1].ends_with(&format!(r#"}},"session":"{id}","type":"compaction"}}"#)),
        "{out}"
    );
    let ev: Value = serde_json::from_str(lines[1]).unwrap();
    let records = export(&env, &id);
    let comps = compactions(&records);
    assert_eq!(comps.len(), 2);
    // The record as written to the session file, less its `type`.
    let mut written = comps[1].clone();
    written.as_object_mut().unwrap().remove("type");
    assert_eq!(ev["record"], written);
    assert!(
        ev["record"]["summary"]
            .as_str()
            .unwrap()
            .contains("CODEWORD-JSON")
    );
}

// ---------------------------------------------------------------------------
// Issue 8: knowing the window without being told.

fn detected_window(advertise: impl Fn(&FakeServer), window: u64, how: &str) {
    let server = FakeServer::start();
    advertise(&server);
    server
        .set_context_window(Some(window))
        .set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .context_window(None)
            .merge_model_toml("compaction.threshold_percent = 50")
            .unwrap(),
    );
    let lines: Vec<String> = (1..=20).map(|n| line(n, 600)).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{how}: {}", run.stderr());
    // Compaction fires at 50% of the detected window, not of 120,000.
    let all = server.chat_requests();
    let i = all
        .iter()
        .position(RecordedRequest::is_summarizer)
        .expect("compacted");
    let before = all[..i].iter().rev().find(|r| !r.is_summarizer()).unwrap();
    let pct = before.prompt_tokens as f64 * 100.0 / window as f64;
    assert!((pct - 50.0).abs() <= 5.0, "{how}: fired at {pct:.1}%");
    assert!(all.iter().all(|r| r.prompt_tokens <= window));

    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    let w = &cfg["values"]["models.fake.context_window"];
    assert_eq!(w["value"], window, "{how}: {w}");
    assert_eq!(w["origin"], "detected", "{how}: {w}");
    assert!(
        w["source"].as_str().unwrap().starts_with("detected from"),
        "{w}"
    );

    // Asked again at every start (issue 12: a restarted server may have
    // another window); the same answer keeps the same window.
    server.clear_requests();
    let again = batch(&env, &lines[..1], &[], &[]);
    assert_eq!(again.code(), Some(0));
    assert!(
        server.requests().iter().any(|r| r.method == "GET"),
        "{how}: not asked again"
    );
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    assert_eq!(cfg["values"]["models.fake.context_window"]["value"], window);

    // A configured window larger than the detected one: one warning line
    // naming both numbers.
    env.write_config(&openai(&server).set("context_window", 65_536))
        .unwrap();
    let warned = batch(&env, &lines[..1], &[], &[]);
    assert_eq!(warned.code(), Some(0));
    let err = warned.stderr();
    let hits: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("65536") && l.contains(&window.to_string()))
        .collect();
    assert_eq!(hits.len(), 1, "{how}: {err}");
}

#[test]
fn window_is_detected_from_llama_cpp_props() {
    detected_window(
        |s| {
            s.advertise_props(Some(6000));
        },
        6000,
        "/props",
    );
}

#[test]
fn window_is_detected_from_v1_models_context_length() {
    detected_window(
        |s| {
            s.advertise_models(Some(5000));
        },
        5000,
        "/v1/models",
    );
}

#[test]
fn a_configured_window_larger_than_the_server_is_warned_about_on_the_first_run() {
    let server = FakeServer::start();
    server.advertise_props(Some(4000));
    // Configured 65,536, never run before: the server is asked once.
    let env = env_with(&openai(&server).set("context_window", 65_536));
    let run = batch(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let err = run.stderr();
    let hits: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("65536") && l.contains("4000"))
        .collect();
    assert_eq!(hits.len(), 1, "{err}");
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.path == "/props")
            .count(),
        1
    );
    // The smaller window is the one used from now on.
    let again = batch(&env, &["again".to_owned()], &[], &[]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr());
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    assert_eq!(cfg["values"]["models.fake.context_window"]["value"], 4000);
}

#[test]
fn a_configured_window_with_a_silent_server_is_asked_at_every_start() {
    let server = FakeServer::start();
    let env = env_with(&openai(&server).set("context_window", 8192));
    for line in ["one", "two"] {
        let run = batch(&env, &[line.to_owned()], &[], &[]);
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
    }
    let probes = server
        .requests()
        .iter()
        .filter(|r| !r.is_chat() && !r.is_anthropic())
        .count();
    // /props, /v1/models, /api/show and /api/ps at each start, concurrently.
    assert!((2..=8).contains(&probes), "{probes} probes");
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    assert_eq!(cfg["values"]["models.fake.context_window"]["value"], 8192);
}

#[test]
fn no_detection_and_no_config_falls_back_to_120k() {
    let server = FakeServer::start();
    let env = env_with(&openai(&server).context_window(None));
    let run = batch(&env, &["hi".to_owned()], &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let cfg: Value = serde_json::from_str(&run_ok(&env, &["config", "--json"], &[])).unwrap();
    let w = &cfg["values"]["models.fake.context_window"];
    assert_eq!(w["value"], 120_000, "{w}");
    assert_eq!(w["origin"], "fallback", "{w}");
}

#[test]
fn a_long_tool_loop_collapses_its_older_results_before_summarizing() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", 32_768)
            .merge_model_toml(
                "compaction.keep_recent_results = 2\ncompaction.tool_result_budget_chars = 1000000",
            )
            .unwrap()
            .top("max_steps", 12),
    );
    for i in 1..=8 {
        let body: String = (0..40)
            .map(|l| format!("part {i} line {l} of a source file\n"))
            .collect();
        std::fs::write(env.project.join(format!("f{i}.txt")), body).unwrap();
    }
    for i in 1..=8 {
        server.push(Reply::tool_call(
            "read_file",
            json!({"path": format!("f{i}.txt")}),
        ));
    }
    server.push(Reply::text("done reading"));
    let lines = vec![
        "an early turn".to_owned(),
        "read all eight files".to_owned(),
    ];
    // The trigger sits above the fixed first request (~1,500 tokens) plus the
    // two newest results, so collapsing alone gets the request under it.
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "4400")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let notices = run.of_type("notice");
    assert!(
        notices
            .iter()
            .any(|n| n["message"].as_str().unwrap().contains("collapsed")),
        "{notices:?}"
    );
    // Collapsing was enough: no summary, no compaction record.
    assert!(server.requests().iter().all(|r| !r.is_summarizer()));
    let records = export(&env, &run.session());
    assert!(compactions(&records).is_empty());
    assert_no_orphan_tool_results(&server.chat_requests());
    // The last request carries stubs for the oldest results and the two
    // newest whole; the session file keeps every original.
    let last = agent_requests(&server).pop().unwrap();
    let text = last.all_text();
    assert!(text.contains("[tool result collapsed"), "{text}");
    assert!(text.contains("part 8 line 39"));
    assert!(text.contains("part 7 line 39"));
    assert!(!text.contains("part 1 line 39"));
    let saved = serde_json::to_string(&records).unwrap();
    for i in 1..=8 {
        assert!(saved.contains(&format!("part {i} line 39")), "file {i}");
    }
    assert!(last.prompt_tokens < 4400 + 1500, "{}", last.prompt_tokens);
}

#[test]
fn a_long_tool_loop_compacts_inside_the_turn_without_splitting_a_call_from_its_result() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", 32_768)
            .merge_model_toml("compaction.prune = false")
            .unwrap()
            .top("max_steps", 12),
    );
    for i in 1..=6 {
        let body: String = (0..120)
            .map(|l| format!("part {i} line {l} of a source file\n"))
            .collect();
        std::fs::write(env.project.join(format!("f{i}.txt")), body).unwrap();
    }
    for i in 1..=6 {
        server.push(Reply::tool_call(
            "read_file",
            json!({"path": format!("f{i}.txt")}),
        ));
    }
    server.push(Reply::text("done reading"));
    let lines = vec!["an early turn".to_owned(), "read all six files".to_owned()];
    let run = batch(&env, &lines, &[], &[("EONYX_AUTO_COMPACT_TOKENS", "4000")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_no_orphan_tool_results(&server.chat_requests());
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert!(
        comps.iter().any(|c| c["mid_turn"] == true),
        "no compaction inside the turn: {comps:?}"
    );
    // The request right after a mid-turn compaction still carries the
    // turn's request and every result it keeps has its call.
    let last = agent_requests(&server).pop().unwrap();
    assert!(
        last.all_text().contains("read all six files"),
        "{}",
        last.system_text()
    );
}

// ---------------------------------------------------------------------------
// Cache-aware compaction (issue 17): the summarizer request is the
// conversation's own request plus one instruction.

/// Remove Anthropic's `cache_control` marks (the breakpoint moves to the
/// last message of whatever is sent).
fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

/// The system prompt exactly as sent: Anthropic's `system` blocks, or
/// OpenAI's leading system message.
fn raw_system(r: &RecordedRequest) -> Value {
    match r.body.get("system") {
        Some(s) => s.clone(),
        None => r.messages()[0].clone(),
    }
}

/// The system text through the end of the date line.
fn through_date_line(system: &str) -> &str {
    let at = system.find("Current date (UTC): ").expect("a date line");
    let end = system[at..].find('\n').map_or(system.len(), |e| at + e);
    &system[..end]
}

fn shared_prefix_compaction(anthropic: bool) {
    const WINDOW: u64 = 8192;
    let server = FakeServer::start();
    server
        .set_context_window(Some(WINDOW))
        .set_summarizer(echo_summary)
        // The first turn reads a file, so tool messages are in the history.
        .push(Reply::tool_call("read_file", json!({"path": "notes.txt"})));
    let base = if anthropic {
        FakeConfig::anthropic(&server.base_url()).set("retries", 0)
    } else {
        openai(&server)
    };
    let env = env_with(
        &base
            .set("context_window", WINDOW as i64)
            .merge_model_toml("compaction.threshold_percent = 60\ncompaction.keep_turns = 2")
            .unwrap(),
    );
    std::fs::write(env.project.join("AGENTS.md"), "Always answer in English.\n").unwrap();
    std::fs::write(
        env.project.join("notes.txt"),
        "CODEWORD-HERON opens the vault\n",
    )
    .unwrap();
    let lines: Vec<String> = (1..=36).map(|n| line(n, 720)).collect();
    let run = batch(&env, &lines, &[], &[("EONYX_DEBUG", "1")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());

    let all = server.chat_requests();
    let mut shared = 0;
    for (i, s) in all.iter().enumerate() {
        if !s.is_summarizer() {
            continue;
        }
        assert!(
            s.is_shared_prefix_summarizer(),
            "request {i} is a transcript summary"
        );
        shared += 1;
        let prev = all[..i].iter().rev().find(|r| !r.is_summarizer()).unwrap();
        // System prompt and tools byte-identical to the conversation's request.
        assert_eq!(raw_system(s), raw_system(prev));
        assert_eq!(s.body["tools"], prev.body["tools"]);
        assert!(!s.tool_names().is_empty());
        // Messages: the previous request's, what the conversation appended
        // since (its reply and the new user line or tool result), then one
        // user message: the instruction.
        let (sm, pm) = (s.messages(), prev.messages());
        let conv = &sm[..sm.len() - 1];
        assert_eq!(
            without_cache_control(&Value::Array(conv[..pm.len()].to_vec())),
            without_cache_control(&Value::Array(pm.clone())),
            "the summarizer request does not extend the previous request"
        );
        assert_eq!(conv.len(), pm.len() + 2, "{conv:?}");
        let instruction = sm.last().unwrap();
        assert_eq!(instruction["role"], "user");
        assert!(
            s.last_user_text()
                .unwrap()
                .starts_with("[eonyx compaction]")
        );
        assert!(s.last_user_text().unwrap().contains("## Changed files"));
        assert!(s.body.get("prompt_cache_key").is_none());
        if anthropic {
            // Tools kept, no tool_choice; the breakpoint on the conversation.
            assert!(s.body.get("tool_choice").is_none());
            let last_conv = conv.last().unwrap()["content"].as_array().unwrap();
            assert_eq!(
                last_conv.last().unwrap()["cache_control"]["type"],
                "ephemeral"
            );
            assert!(
                instruction["content"][0].get("cache_control").is_none(),
                "{instruction}"
            );
        } else {
            assert_eq!(s.body["tool_choice"], "none");
            // OpenAI: byte for byte, nothing moved.
            assert_eq!(conv[..pm.len()], pm[..]);
        }

        // The request after the compaction shares the stable prefix through
        // the date line with what the server just saw, and the same tools.
        let after = &all[i + 1];
        assert!(!after.is_summarizer());
        let sys = s.system_text();
        let head = through_date_line(&sys);
        assert!(head.contains("Always answer in English."));
        assert!(
            after.system_text().starts_with(head),
            "{}",
            after.system_text()
        );
        assert_eq!(after.body["tools"], s.body["tools"]);
        // Facts from the compacted turns reach the next request.
        assert!(after.system_text().contains("CODEWORD-HERON"));
        assert!(after.system_text().contains("notes.txt"));
    }
    assert!(shared >= 2, "only {shared} compactions");

    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert_eq!(comps.len(), shared);
    assert!(
        comps.iter().all(|c| c["mode"] == "shared-prefix"),
        "{comps:?}"
    );
    assert!(
        run.of_type("compaction")
            .iter()
            .all(|c| c["mode"] == "shared-prefix")
    );
    assert!(
        run.of_type("debug").is_empty(),
        "{:?}",
        run.of_type("debug")
    );
}

#[test]
fn openai_summarizer_request_is_the_conversation_plus_one_instruction() {
    shared_prefix_compaction(false);
}

#[test]
fn anthropic_summarizer_request_is_the_conversation_plus_one_instruction() {
    shared_prefix_compaction(true);
}

#[test]
fn a_refused_or_tool_calling_shared_summary_falls_back_to_the_transcript() {
    const WINDOW: u64 = 8192;
    let server = FakeServer::start();
    server.set_context_window(Some(WINDOW)).set_summarizer(|r| {
        if !r.is_shared_prefix_summarizer() {
            echo_summary(r)
        } else if r.body["messages"].as_array().unwrap().len() % 2 == 0 {
            Reply::tool_call("read_file", json!({"path": "x"}))
        } else {
            Reply::error(
                400,
                r#"{"error":{"message":"tool_choice is not supported"}}"#,
            )
        }
    });
    let env = env_with(
        &openai(&server)
            .set("context_window", WINDOW as i64)
            .merge_model_toml("compaction.threshold_percent = 60\ncompaction.keep_turns = 2")
            .unwrap(),
    );
    let mut lines: Vec<String> = (1..=36).map(|n| line(n, 720)).collect();
    lines[1] = format!("{} CODEWORD-EGRET is the tag.", line(2, 300));
    let run = batch(&env, &lines, &[], &[("EONYX_DEBUG", "1")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let all = server.chat_requests();
    let sums: Vec<&RecordedRequest> = all.iter().filter(|r| r.is_summarizer()).collect();
    // Every shared attempt is followed by a transcript summary.
    for pair in sums.chunks(2) {
        assert!(pair[0].is_shared_prefix_summarizer());
        assert!(!pair[1].is_shared_prefix_summarizer());
    }
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert!(comps.len() >= 2);
    assert_eq!(sums.len(), 2 * comps.len());
    assert!(comps.iter().all(|c| c["mode"] == "transcript"), "{comps:?}");
    assert!(
        comps.last().unwrap()["summary"]
            .as_str()
            .unwrap()
            .contains("CODEWORD-EGRET")
    );
    let debug: Vec<String> = run
        .of_type("debug")
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(debug.len(), comps.len(), "{debug:?}");
    assert!(
        debug.iter().all(|d| d.contains("transcript summarizer")),
        "{debug:?}"
    );
    assert!(
        debug.iter().any(|d| d.contains("called a tool"))
            || debug
                .iter()
                .any(|d| d.contains("tool_choice is not supported")),
        "{debug:?}"
    );
}

#[test]
fn a_different_compaction_model_uses_the_transcript_summarizer() {
    const WINDOW: u64 = 8192;
    let server = FakeServer::start();
    server
        .set_context_window(Some(WINDOW))
        .set_summarizer(echo_summary);
    let env = env_with(
        &openai(&server)
            .set("context_window", WINDOW as i64)
            .merge_model_toml("compaction.threshold_percent = 60\ncompaction.keep_turns = 2")
            .unwrap()
            .merge_top_toml("[compaction]\nmodel = \"small\"\n")
            .unwrap(),
    );
    let path = env.config_dir.join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[models.small]\nprovider = \"openai\"\nbase_url = \"{}\"\nname = \"small-model\"\ncontext_window = {WINDOW}\nretries = 0\n",
        server.base_url()
    ));
    std::fs::write(&path, text).unwrap();
    let lines: Vec<String> = (1..=16).map(|n| line(n, 720)).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sums: Vec<RecordedRequest> = server
        .chat_requests()
        .into_iter()
        .filter(RecordedRequest::is_summarizer)
        .collect();
    assert!(!sums.is_empty());
    assert!(sums.iter().all(|s| !s.is_shared_prefix_summarizer()));
    assert!(sums.iter().all(|s| s.model() == Some("small-model")));
    let comps: Vec<Value> = export(&env, &run.session())
        .into_iter()
        .filter(|r| r["type"] == "compaction")
        .collect();
    assert!(comps.iter().all(|c| c["mode"] == "transcript"), "{comps:?}");
}
