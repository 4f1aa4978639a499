//! Cache-aware compaction (issue 17) through the real binary: the
//! summarizer request is the conversation's own request plus one
//! instruction, with fallbacks to the transcript summarizer.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply, TestEnv};
use serde_json::{Value, json};

use crate::compaction::*;

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

/// The window of the tests with a second summarizer model.
const SMALL_WINDOW: u64 = 8192;

/// An env compacting at 60% of [`SMALL_WINDOW`], keeping `keep` turns,
/// whose summaries are written by a second model, `small` (named
/// `small-model`), on the same fake.
fn small_summarizer_env(server: &FakeServer, keep: usize) -> TestEnv {
    let env = env_with(
        &windowed(openai(server), SMALL_WINDOW, 60.0, keep)
            .merge_top_toml("[compaction]\nmodel = \"small\"\n")
            .unwrap(),
    );
    let path = env.config_dir.join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[models.small]\nprovider = \"openai\"\nbase_url = \"{}\"\nname = \"small-model\"\ncontext_window = {SMALL_WINDOW}\nretries = 0\n",
        server.base_url()
    ));
    std::fs::write(&path, text).unwrap();
    env
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
        .push(crate::agent::read_notes());
    let base = if anthropic {
        FakeConfig::anthropic(&server.base_url()).set("retries", 0)
    } else {
        openai(&server)
    };
    let env = env_with(&windowed(base, WINDOW, 60.0, 2));
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
        // Messages: the previous request's, its reply, then one user
        // message: the instruction. The new user line is left out: no cache
        // holds it, and it stays verbatim after the compaction.
        let (sm, pm) = (s.messages(), prev.messages());
        let conv = &sm[..sm.len() - 1];
        assert_eq!(
            without_cache_control(&Value::Array(conv[..pm.len()].to_vec())),
            without_cache_control(&Value::Array(pm.clone())),
            "the summarizer request does not extend the previous request"
        );
        assert_eq!(conv.len(), pm.len() + 1, "{} messages", conv.len());
        assert_eq!(conv[pm.len()]["role"], "assistant");
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
        // The line left out of the summarizer request is sent after it.
        let newest = after.last_user_text().unwrap();
        let turn = &newest[..newest.find(':').unwrap()];
        assert!(turn.starts_with("turn "), "{turn}");
        assert!(!s.body.to_string().contains(turn), "{turn} was summarized");
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
    let env = env_with(&windowed(openai(&server), WINDOW, 60.0, 2));
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
    let server = summarizing_server(SMALL_WINDOW);
    let env = small_summarizer_env(&server, 2);
    let lines: Vec<String> = (1..=16).map(|n| line(n, 720)).collect();
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sums = summarizer_requests(&server);
    assert!(!sums.is_empty());
    assert!(sums.iter().all(|s| !s.is_shared_prefix_summarizer()));
    assert!(sums.iter().all(|s| s.model() == Some("small-model")));
    let comps: Vec<Value> = export(&env, &run.session())
        .into_iter()
        .filter(|r| r["type"] == "compaction")
        .collect();
    assert!(comps.iter().all(|c| c["mode"] == "transcript"), "{comps:?}");
}

/// Issue 34: at a small window (the issue's llama-server setup: 80%, a
/// 256-token buffer, 64 output tokens, three turns kept, lines of ~160
/// words) every summary is asked on the shared prefix: the trigger keeps
/// room for the instruction and the summary. (The fake's tokenizer counts
/// eonyx's system prompt and tools at about 1,400 tokens, so 3072 and 4096
/// here are about as tight as 2048 and 4096 against llama-server.)
#[test]
fn at_a_small_window_every_summary_is_asked_on_the_shared_prefix() {
    for window in [3072u64, 4096] {
        let server = FakeServer::start();
        server
            .set_context_window(Some(window))
            .set_summarizer(echo_summary)
            // About 64 tokens of answer.
            .set_default_reply(Reply::text("words ".repeat(32).trim_end()));
        let env = env_with(
            &windowed(openai(&server), window, 80.0, 3)
                .set("max_output_tokens", 64)
                .merge_model_toml("compaction.buffer_tokens = 256")
                .unwrap(),
        );
        let mut lines: Vec<String> = (1..=18).map(|n| line(n, 900)).collect();
        lines[0] = format!("{} CODEWORD-IBIS is the key.", line(1, 850));
        let run = batch(&env, &lines, &[], &[("EONYX_DEBUG", "1")]);
        assert_eq!(run.code(), Some(0), "window {window}: {}", run.stderr());

        let all = server.chat_requests();
        let sums: Vec<(usize, &RecordedRequest)> = all
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_summarizer())
            .collect();
        assert!(sums.len() >= 2, "window {window}: {} summaries", sums.len());
        for (i, s) in &sums {
            assert!(
                s.is_shared_prefix_summarizer(),
                "window {window}: request {i} is a transcript summary; sizes {:?}; {}",
                all.iter()
                    .map(|r| (r.is_summarizer(), r.prompt_tokens))
                    .collect::<Vec<_>>(),
                run.stderr()
            );
            // The conversation's last request is a prefix of it, and its
            // summary budget is at least the reserve's floor.
            let prev = all[..*i].iter().rev().find(|r| !r.is_summarizer()).unwrap();
            let (sm, pm) = (s.messages(), prev.messages());
            assert_eq!(raw_system(s), raw_system(prev));
            assert_eq!(s.body["tools"], prev.body["tools"]);
            assert_eq!(sm[..pm.len()], pm[..], "window {window}");
            // Then its reply and the instruction: the new line, which no
            // cache holds and which stays verbatim, is left out.
            assert_eq!(sm.len(), pm.len() + 2, "window {window}");
            assert_eq!(sm[pm.len()]["role"], "assistant", "window {window}");
            let max = s.body["max_tokens"]
                .as_u64()
                .or_else(|| s.body["max_completion_tokens"].as_u64())
                .unwrap_or(0);
            assert!(max >= 128, "window {window}: max_tokens {max}");
            // Never the same summary twice: the next request is a turn.
            assert!(!all[i + 1].is_summarizer(), "window {window}: {i}");
            // The prompt itself fits the window.
            assert!(s.prompt_tokens < window, "window {window}");
        }
        let comps = run.of_type("compaction");
        assert_eq!(comps.len(), sums.len(), "window {window}");
        assert!(
            comps.iter().all(|c| c["mode"] == "shared-prefix"),
            "window {window}: {comps:?}"
        );
        let debug: Vec<String> = run
            .of_type("debug")
            .iter()
            .filter_map(|d| d["message"].as_str().map(str::to_owned))
            .collect();
        assert!(
            debug.iter().all(|d| !d.contains("transcript")),
            "window {window}: {debug:?}"
        );
        // The code word of the first turn survives every compaction.
        let last = all.last().unwrap();
        assert!(
            last.system_text().contains("CODEWORD-IBIS"),
            "window {window}"
        );
    }
}

/// Issue 34: a transcript summary cut at its cap is kept with its note and
/// the user is told; the transcript is never sent a second time.
#[test]
fn a_cut_transcript_summary_is_kept_and_never_asked_for_again() {
    let server = FakeServer::start();
    server
        .set_context_window(Some(SMALL_WINDOW))
        .set_summarizer(|_| {
            Reply::text("## Active goal\nchat\n## Progress\nthe summary was cu")
                .with_finish_reason("length")
        });
    let env = small_summarizer_env(&server, 1);
    let lines = [
        "first turn".to_owned(),
        "second turn".to_owned(),
        "/compact".to_owned(),
    ];
    let run = batch(&env, &lines, &[], &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sums = summarizer_requests(&server);
    assert_eq!(sums.len(), 1, "the transcript was sent again");
    assert!(!sums[0].is_shared_prefix_summarizer());
    let records = export(&env, &run.session());
    let comps = compactions(&records);
    assert_eq!(comps.len(), 1);
    assert_eq!(comps[0]["mode"], "transcript");
    let summary = comps[0]["summary"].as_str().unwrap();
    assert!(summary.starts_with("## Active goal\nchat\n## Progress\nthe summary was cu"));
    assert!(summary.contains("may be incomplete"), "{summary}");
    let warned = run.of_type("warning");
    assert!(
        warned.iter().any(|w| w["message"]
            .as_str()
            .is_some_and(|m| m.contains("summary was cut"))),
        "{warned:?}"
    );
}
