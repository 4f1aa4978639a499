//! Hooks around compaction (docs/hooks.md) through the real binary:
//! `PreCompact` skipping an automatic compaction and cancelling a summary
//! written ahead, `SessionStart` (`compact`) context and `PostCompact` after
//! a compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Output;

use serde_json::Value;

use crate::agent::{Fx, code};
use crate::compaction::{cmd, env_with, export, line, openai, summarizing_server, windowed};
use crate::hooks::{hook, hook_events, hooked_with, script};
use crate::util::stderr;

/// A long user line (compaction tests).
fn long_line(n: usize) -> String {
    crate::compaction::line(n, 900)
}

fn compacting(hooks_toml: &str) -> Fx {
    let fx = hooked_with(hooks_toml, |c| c.set("context_window", 8192));
    fx.fake.set_summarizer(crate::compaction::echo_summary);
    fx
}

fn run_compacting(fx: &Fx, lines: &[String]) -> Output {
    let mut cmd = fx.cmd(&["--json"]);
    cmd.env("EONYX_AUTO_COMPACT_TOKENS", "1500");
    crate::agent::run_with_stdin(cmd, &crate::util::input_lines(lines))
}

#[test]
fn pre_compact_exit_2_skips_the_automatic_compaction() {
    let fx = compacting(&hook(
        "PreCompact",
        "auto",
        "echo 'the nightly job compacts' >&2; exit 2",
    ));
    let lines: Vec<String> = (1..=4).map(long_line).collect();
    let o = run_compacting(&fx, &lines);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        fx.chats().iter().all(|r| !r.is_summarizer()),
        "the summarizer was asked"
    );
    let records = crate::agent::records(&fx.session());
    assert!(records.iter().all(|r| r["type"] != "compaction"));
    let hooks = hook_events(&o);
    assert!(!hooks.is_empty());
    assert!(
        hooks
            .iter()
            .all(|h| h["event"] == "PreCompact" && h["decision"] == "block")
    );
    // Every turn was still answered, with the whole conversation.
    let last = fx.agent_requests().pop().unwrap();
    assert_eq!(last.user_texts(), lines);
}

#[test]
fn session_start_compact_output_is_in_the_first_request_after_a_compaction() {
    let fx = compacting(&format!(
        "{}{}",
        hook(
            "SessionStart",
            "compact",
            "echo 'NOTES-REINJECTED: use tabs'"
        ),
        hook("PostCompact", "", &script("post.sh"))
    ));
    fx.write_script("post.sh", "cat > \"$EONYX_PROJECT_DIR/post.json\"\n");
    let lines: Vec<String> = (1..=5).map(long_line).collect();
    let o = run_compacting(&fx, &lines);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let all = fx.chats();
    let mut compactions = 0;
    let mut prev: Option<&eonyx_tests::RecordedRequest> = None;
    for (i, r) in all.iter().enumerate() {
        if r.is_summarizer() {
            compactions += 1;
            let after = all[i + 1..].iter().find(|r| !r.is_summarizer()).unwrap();
            assert!(
                after.all_text().contains("NOTES-REINJECTED: use tabs"),
                "not in the request after the compaction: {}",
                after.raw_body
            );
            prev = None;
            continue;
        }
        // Between compactions the requests only grow at the end: the
        // hook's context never enters the stable prefix.
        if let Some(p) = prev {
            assert_eq!(p.system_text(), r.system_text());
            let (pm, rm) = (p.messages(), r.messages());
            assert_eq!(
                pm[..],
                rm[..pm.len()],
                "request {i} rewrote the conversation"
            );
        }
        prev = Some(r);
    }
    assert!(compactions >= 1, "no compaction happened");
    assert!(
        !all[0].all_text().contains("NOTES-REINJECTED"),
        "the compact source matched at startup"
    );
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.work_file("post.json")).unwrap()).unwrap();
    assert_eq!(post["hook_event_name"], "PostCompact");
    assert_eq!(post["trigger"], "auto");
    assert!(
        post["compact_summary"]
            .as_str()
            .unwrap()
            .contains("## Active goal"),
        "{post}"
    );
}

#[test]
fn pre_compact_exit_2_cancels_a_summary_written_ahead() {
    let server = summarizing_server(8192);
    let block = "cat >> \"$EONYX_PROJECT_DIR/pre.log\"; echo >> \"$EONYX_PROJECT_DIR/pre.log\"; echo 'not now' >&2; exit 2";
    let env = env_with(
        &windowed(openai(&server), 8192, 60.0, 2)
            .merge_top_toml(&hook("PreCompact", "", block))
            .unwrap(),
    );
    let log = env.project.join("pre.log");
    let entries = || -> Vec<Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let mut run = eonyx_tests::Paced::spawn(&mut cmd(&env, &["--json"], &[])).unwrap();
    let mut drafts_started = 0;
    for n in 1..=14 {
        run.send(&line(n, 700)).unwrap();
        let evs = run
            .wait_for(|e| e["type"] == "turn_completed" || e["type"] == "error")
            .unwrap();
        assert_eq!(evs.last().unwrap()["type"], "turn_completed", "{evs:?}");
        if evs.iter().any(|e| e["type"] == "summary_draft_started") {
            // The draft's PreCompact runs while the batch waits for input.
            drafts_started += 1;
            let before = drafts_started;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while entries().len() < before {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no PreCompact for the draft"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
    let (status, err, events) = run.finish().unwrap();
    assert!(status.success(), "{err}");
    assert!(
        drafts_started >= 1,
        "no summary was started ahead: {events:?}"
    );
    assert!(
        server.chat_requests().iter().all(|r| !r.is_summarizer()),
        "a summarizer request was sent"
    );
    let session = events
        .iter()
        .find(|e| e["type"] == "session")
        .and_then(|e| e["id"].as_str())
        .unwrap()
        .to_owned();
    let records = export(&env, &session);
    assert!(
        records
            .iter()
            .all(|r| r["type"] != "summary_draft" && r["type"] != "compaction")
    );
    for e in entries() {
        assert_eq!(e["trigger"], "auto");
        assert_eq!(e["custom_instructions"], "");
    }
}
