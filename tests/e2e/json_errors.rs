//! `--json` reports every failure as an `error` event on stdout, also those
//! that happen before the event stream exists (config, usage, a session in
//! use or missing, a provider that cannot be set up), with the same exit
//! codes as without `--json` (issue 13).
#![allow(clippy::unwrap_used)] // test code: a failure is a test failure

use std::process::Output;

use serde_json::Value;

use crate::util::{Sandbox, fake_project, stderr, stdout};

const ID: &str = "20260705T091500-1a2b3c4d";

/// The only line of stdout, as the JSON error event; checks its shape.
fn error_event(o: &Output) -> Value {
    let out = stdout(o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "stdout: {out}\nstderr: {}", stderr(o));
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["type"], "error", "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    v
}

#[test]
fn config_and_usage_errors_are_events_with_exit_2() {
    let sb = Sandbox::new();
    sb.write(
        "config/config.toml",
        "[compaction]\nthreshold_percent = 500\n",
    );
    let o = sb.eonyx().args(["run", "--json", "hi"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let v = error_event(&o);
    assert_eq!(v["class"], "config");
    assert!(
        v["message"].as_str().unwrap().contains("threshold_percent"),
        "{v}"
    );
    // Without --json the same failure is text on stderr only.
    let plain = sb.eonyx().args(["run", "hi"]).output().unwrap();
    assert_eq!(plain.status.code(), Some(2));
    assert!(stdout(&plain).is_empty());
    assert!(stderr(&plain).contains("threshold_percent"));

    let (sb, fake) = fake_project(|c| c);
    // No prompt.
    let o = sb.eonyx().args(["run", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(error_event(&o)["class"], "usage");
    // A command line clap rejects.
    let o = sb
        .eonyx()
        .args(["--json", "run", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let v = error_event(&o);
    assert_eq!(v["class"], "usage");
    assert!(
        v["message"].as_str().unwrap().contains("--no-such-flag"),
        "{v}"
    );
    // A malformed session id.
    let o = sb
        .eonyx()
        .args(["run", "--json", "-s", "nope", "hi"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(error_event(&o)["class"], "usage");
    // `-c` with nothing to continue (batch).
    let o = sb.eonyx().args(["--json", "-c"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(error_event(&o)["class"], "usage");
    assert!(fake.chat_requests().is_empty());
}

#[test]
fn a_session_in_use_or_missing_is_an_event_without_a_save_failure_prefix() {
    let (sb, fake) = fake_project(|c| c);
    sb.write(
        format!("data/sessions/{ID}.jsonl"),
        format!(
            "{}\n{}\n",
            r#"{"type":"session","version":1,"id":"20260705T091500-1a2b3c4d","title":"1","created":"2026-07-05T09:15:00Z","cwd":"/p","project":"/p"}"#,
            r#"{"type":"message","seq":1,"ts":"2026-07-05T09:15:10Z","role":"user","content":"hello"}"#
        ),
    );
    // Another eonyx holds the session (this test process takes its lock).
    let lock_path = sb.write(format!("data/locks/{ID}.lock"), "4242\n");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lock_path)
        .unwrap();
    lock.lock().unwrap();
    for json in [true, false] {
        let mut cmd = sb.eonyx();
        cmd.args(["run", "-s", ID, "more"]);
        if json {
            cmd.arg("--json");
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let expected = format!(
            "session {ID} is in use by process 4242; close that eonyx first or continue in a new session"
        );
        assert!(stderr(&o).contains(&expected), "{}", stderr(&o));
        assert!(!stderr(&o).contains("cannot save"), "{}", stderr(&o));
        if json {
            let v = error_event(&o);
            assert_eq!(v["class"], "session_in_use");
            assert_eq!(v["message"], expected);
        } else {
            assert!(stdout(&o).is_empty());
        }
    }
    lock.unlock().unwrap();

    let missing = "20260101T000000-00000000";
    let o = sb
        .eonyx()
        .args(["run", "--json", "-s", missing, "more"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v = error_event(&o);
    assert_eq!(v["class"], "not_found");
    assert_eq!(
        v["message"],
        format!("no session {missing}; run `eonyx sessions` to list sessions")
    );
    assert!(fake.chat_requests().is_empty());
}

#[test]
fn a_provider_that_cannot_be_set_up_is_an_event_with_exit_2() {
    // Zero config and no key: the public API cannot be used.
    let sb = Sandbox::new();
    let o = sb
        .eonyx()
        .args(["run", "--json", "hi"])
        .env("EONYX_MODEL", "gpt-x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let v = error_event(&o);
    assert_eq!(v["class"], "config");
    assert!(
        v["message"].as_str().unwrap().contains("$OPENAI_API_KEY"),
        "{v}"
    );
    // And from a batch run.
    let o = sb
        .eonyx()
        .arg("--json")
        .env("EONYX_MODEL", "gpt-x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(error_event(&o)["class"], "config");
}
