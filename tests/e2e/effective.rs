//! `eonyx sessions show --effective` is exactly what the model is sent
//! next (issue 13): system prompt with context files, date line and
//! summary; the retained messages; the session's project's config, not the
//! current directory's; `--model` and `--profile`; `--json` as the exact
//! request body.
#![allow(clippy::unwrap_used)] // test code: a failure is a test failure

use std::process::Output;

use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply};
use serde_json::Value;

use crate::util::{Sandbox, stderr, stdout};

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    stdout(o)
}

/// The id of the only session.
fn only_session(sb: &Sandbox) -> String {
    let mut ids: Vec<String> = std::fs::read_dir(sb.data.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.pop().unwrap()
}

/// `body` with `extra` appended to its messages: what a resumed run sends
/// after the user types `extra`.
fn assert_next_request_is(shown: &Value, sent: &RecordedRequest, extra: &str) {
    let shown_obj = shown.as_object().unwrap();
    let sent_obj = sent.body.as_object().unwrap();
    assert_eq!(
        shown_obj.keys().collect::<Vec<_>>(),
        sent_obj.keys().collect::<Vec<_>>()
    );
    for (k, v) in shown_obj {
        if k != "messages" {
            assert_eq!(&sent.body[k], v, "field {k}");
        }
    }
    let shown_msgs = shown["messages"].as_array().unwrap();
    let sent_msgs = sent.body["messages"].as_array().unwrap();
    assert_eq!(sent_msgs.len(), shown_msgs.len() + 1);
    assert_eq!(&sent_msgs[..shown_msgs.len()], &shown_msgs[..]);
    assert_eq!(sent.last_user_text().as_deref(), Some(extra));
}

#[test]
fn show_effective_is_the_next_request_of_the_sessions_project() {
    let sb = Sandbox::new();
    let fake = FakeServer::start();
    let mut config = FakeConfig::openai(&fake.base_url())
        .set("retries", 0)
        .merge_top_toml("[compaction]\nkeep_turns = 1\n")
        .unwrap()
        .to_toml()
        .unwrap();
    config.push_str(&format!(
        "\n[models.other]\nbase_url = \"{}\"\nname = \"other-model\"\n\n[profiles.alt]\nmodel = \"other\"\n",
        fake.base_url()
    ));
    sb.write("config/config.toml", config);
    // The session's project: a context file and a (safe) project setting
    // that changes the request.
    sb.write(
        "work/eonyx.json",
        r#"{"models": {"fake": {"max_output_tokens": 99}}}"#,
    );
    sb.write("work/AGENTS.md", "Project rule: answer in haiku.\n");
    // Another project, where `sessions show` is run from.
    sb.write(
        "elsewhere/eonyx.json",
        r#"{"models": {"fake": {"max_output_tokens": 7}}}"#,
    );
    sb.write("elsewhere/AGENTS.md", "Elsewhere rule.\n");

    fake.set_summarizer(|_| Reply::text("SUMMARY: alpha was discussed."));
    fake.push(Reply::text("A")).push(Reply::text("B"));
    let mut batch = sb.eonyx();
    batch.stdin(std::process::Stdio::piped());
    let mut child = batch
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"alpha\nbeta\n/compact\n").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(ok(&o), "A\nB\n");
    let id = only_session(&sb);

    let show = |args: &[&str]| {
        let mut cmd = sb.eonyx();
        cmd.current_dir(sb.root.join("elsewhere"))
            .args(["sessions", "show", &id, "--effective"])
            .args(args);
        cmd.output().unwrap()
    };

    // Text: the system prompt (context file, date line, summary), then the
    // retained messages.
    let text = ok(&show(&[]));
    assert!(text.starts_with("[system]\nYou are eonyx"), "{text}");
    assert!(text.contains("Project rule: answer in haiku."), "{text}");
    assert!(!text.contains("Elsewhere rule."), "{text}");
    assert!(text.contains("Current date (UTC): "), "{text}");
    assert!(
        text.contains("# Summary of earlier conversation\n\nSUMMARY: alpha was discussed."),
        "{text}"
    );
    assert!(text.contains("[user]\nbeta\n"), "{text}");
    assert!(
        !text.contains("[user]\nalpha\n"),
        "alpha was summarized: {text}"
    );

    // JSON: the exact body the next step sends.
    let shown: Value = serde_json::from_str(&ok(&show(&["--json"]))).unwrap();
    assert_eq!(shown["model"], "fake-model");
    assert_eq!(shown["max_tokens"], 99, "the session's project config");
    fake.clear_requests();
    fake.push(Reply::text("C"));
    let o = sb
        .eonyx()
        .args(["run", "-s", &id, "gamma"])
        .output()
        .unwrap();
    assert_eq!(ok(&o), "C\n");
    let chats = fake.chat_requests();
    assert_eq!(chats.len(), 1);
    assert_next_request_is(&shown, &chats[0], "gamma");

    // --model and --profile pick the model the request goes to.
    let by_model: Value =
        serde_json::from_str(&ok(&show(&["--json", "--model", "other"]))).unwrap();
    assert_eq!(by_model["model"], "other-model");
    let by_profile: Value =
        serde_json::from_str(&ok(&show(&["--json", "--profile", "alt"]))).unwrap();
    assert_eq!(by_profile["model"], "other-model");
    fake.clear_requests();
    fake.push(Reply::text("D"));
    let o = sb
        .eonyx()
        .args(["run", "--profile", "alt", "-s", &id, "delta"])
        .output()
        .unwrap();
    assert_eq!(ok(&o), "D\n");
    assert_next_request_is(&by_profile, &fake.chat_requests()[0], "delta");
}
