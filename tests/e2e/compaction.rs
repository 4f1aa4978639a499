//! Compaction and context-window detection through the real binary (issues
//! 5 and 8): batch runs (piped stdin) against the fake provider, asserting
//! on what the fake received, on the session file and on what the user sees.
//! This file: the helpers the `compaction_*.rs` files share, a long session
//! with a small window, and configuration through the binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::{Child, Command, Output, Stdio};

use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply, TestEnv};
use serde_json::Value;

use crate::util::{input_lines, json_lines, spawn_with_stdin};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_eonyx");

/// What the fake summarizer answers: a structured summary that repeats
/// every `CODEWORD-…` it saw (in the transcript or the previous summary).
pub(crate) fn echo_summary(r: &RecordedRequest) -> Reply {
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

pub(crate) fn codewords(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("CODEWORD-") && w.len() > "CODEWORD-".len())
        .map(str::to_owned)
        .collect()
}

/// A user line of about `chars` characters, unique per `n`.
pub(crate) fn line(n: usize, chars: usize) -> String {
    let mut s = format!("turn {n:02}: please remember this paragraph.");
    let filler = " the quick brown fox jumps over the lazy dog";
    while s.len() < chars {
        s.push_str(filler);
    }
    s.truncate(chars);
    // Batch input is trimmed: keep lines comparable with what is stored.
    s.trim_end().to_owned()
}

pub(crate) fn env_with(config: &FakeConfig) -> TestEnv {
    let env = TestEnv::new().unwrap();
    env.write_config(config).unwrap();
    env
}

pub(crate) fn openai(server: &FakeServer) -> FakeConfig {
    FakeConfig::openai(&server.base_url()).set("retries", 0)
}

pub(crate) fn cmd(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut c = env.command(BIN);
    c.args(args);
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

/// `base` with a `window`-token context window, compacting at `threshold`
/// percent and keeping the last `keep` turns.
pub(crate) fn windowed(base: FakeConfig, window: u64, threshold: f64, keep: usize) -> FakeConfig {
    base.set("context_window", window as i64)
        .merge_model_toml(&format!(
            "compaction.threshold_percent = {threshold}\ncompaction.keep_turns = {keep}"
        ))
        .unwrap()
}

/// Start a batch run (`eonyx --json`) fed `lines` on stdin.
pub(crate) fn spawn_batch(
    env: &TestEnv,
    lines: &[String],
    args: &[&str],
    vars: &[(&str, &str)],
) -> Child {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    spawn_with_stdin(&mut cmd(env, &all, vars), input_lines(lines))
}

pub(crate) struct Batch {
    pub(crate) out: Output,
    pub(crate) events: Vec<Value>,
}

impl Batch {
    pub(crate) fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub(crate) fn session(&self) -> String {
        self.events
            .iter()
            .find(|e| e["type"] == "session")
            .and_then(|e| e["id"].as_str())
            .expect("a session event")
            .to_owned()
    }
    pub(crate) fn of_type(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }
}

pub(crate) fn finish(child: Child) -> Batch {
    let out = child.wait_with_output().unwrap();
    let events = json_lines(&out.stdout);
    Batch { out, events }
}

pub(crate) fn batch(
    env: &TestEnv,
    lines: &[String],
    args: &[&str],
    vars: &[(&str, &str)],
) -> Batch {
    finish(spawn_batch(env, lines, args, vars))
}

pub(crate) fn run_ok(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> String {
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
pub(crate) fn export(env: &TestEnv, id: &str) -> Vec<Value> {
    run_ok(env, &["sessions", "export", id], &[])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn compactions(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["type"] == "compaction")
        .collect()
}

pub(crate) fn user_messages(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "message" && r["role"] == "user")
        .map(|r| r["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The agent's own requests (summarizer requests excluded).
pub(crate) fn agent_requests(server: &FakeServer) -> Vec<RecordedRequest> {
    server
        .chat_requests()
        .into_iter()
        .filter(|r| !r.is_summarizer())
        .collect()
}

pub(crate) const SUMMARY_HEADING: &str = "# Summary of earlier conversation";

/// Every tool message in every request follows an assistant message of
/// the same request that made the call.
pub(crate) fn assert_no_orphan_tool_results(requests: &[RecordedRequest]) {
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
pub(crate) fn convo(r: &RecordedRequest) -> Vec<Value> {
    r.messages()
        .into_iter()
        .filter(|m| m["role"] != "system")
        .collect()
}

/// Index (in agent requests) of the first summarizer request, i.e. how
/// many agent requests were sent before the first compaction.
pub(crate) fn first_compaction(server: &FakeServer) -> Option<usize> {
    let all = server.chat_requests();
    let i = all.iter().position(RecordedRequest::is_summarizer)?;
    Some(all[..i].iter().filter(|r| !r.is_summarizer()).count())
}

/// The fake with a `window`-token context window and [`echo_summary`] as
/// its summarizer.
pub(crate) fn summarizing_server(window: u64) -> FakeServer {
    let server = FakeServer::start();
    server
        .set_context_window(Some(window))
        .set_summarizer(echo_summary);
    server
}

pub(crate) fn summarizer_requests(server: &FakeServer) -> Vec<RecordedRequest> {
    server
        .chat_requests()
        .into_iter()
        .filter(RecordedRequest::is_summarizer)
        .collect()
}

#[test]
fn long_session_compacts_at_the_threshold_keeps_facts_and_never_overflows() {
    const WINDOW: u64 = 8192;
    const THRESHOLD: f64 = 60.0;
    const KEEP: usize = 2;
    let server = summarizing_server(WINDOW);
    let env = env_with(&windowed(openai(&server), WINDOW, THRESHOLD, KEEP));
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
    // section: the summary, what the user said, and as the last line the
    // recall hint.
    let last = comps.last().unwrap();
    let summary = last["summary"].as_str().unwrap();
    let said = last["user_words"]["text"].as_str().unwrap();
    assert!(
        said.starts_with("## What the user said\n\n[#1] turn 01: "),
        "{said}"
    );
    let section_end = format!("{summary}\n\n{said}\n\n{}", eonyx_prompt::RECALL_HINT);
    let shown_system = eff["messages"][0]["content"].as_str().unwrap();
    assert_eq!(eff["messages"][0]["role"], "system");
    assert!(shown_system.ends_with(&section_end), "{shown_system}");
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
        req.system_text().ends_with(&section_end),
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

#[test]
fn overrides_merge_field_by_field_and_env_vars_change_when_compaction_happens() {
    let server = FakeServer::start();
    server.set_summarizer(echo_summary);
    let config = windowed(openai(&server), 8192, 60.0, 2)
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
    // Each key from the layer that set it last.
    for (k, value, source) in [
        ("threshold_percent", 50.0, "profiles.p"),     // profile
        ("keep_turns", 2.0, "models.fake"),            // model
        ("buffer_tokens", 2500.0, "eonyx.json"),       // project
        ("summary_max_tokens", 1000.0, "config.toml"), // global
    ] {
        assert_eq!(v(k)["value"].as_f64(), Some(value), "{k}");
        let from = v(k)["source"].as_str().unwrap().to_owned();
        assert!(from.contains(source), "{k}: {from}");
    }

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
