//! Secrets never enter memory, and mining stays in its project (issue 56,
//! docs/memory.md#secrets): each of the 13 secret formats a mining model
//! might repeat is dropped from its proposals (never stored, a one-line
//! notice), refused by `memory add` and the `memory` tool naming its kind
//! and not its value, and
//! redacted from the transcript sent to the miner; `memory mine --session`
//! of another project's session is refused naming that project.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Output;

use eonyx_tests::{FakeConfig, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{stderr, stdout};

/// The 13 formats of the issue, each inside a sentence, with the part that
/// must never be stored or shown.
const SECRETS: [(&str, &str); 13] = [
    (
        "The deploy user is AKIAIOSFODNN7EXAMPLE",
        "AKIAIOSFODNN7EXAMPLE",
    ),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "CI pushes with ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7C",
        "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7C",
    ),
    (
        "The bot uses github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    (
        "The OpenAI key is sk-T3BlbkFJa8b7c6d5e4f3g2h1i0jKLMNOPQ",
        "sk-T3BlbkFJa8b7c6d5e4f3g2h1i0jKLMNOPQ",
    ),
    (
        "Project key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
        "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    ),
    (
        "Claude runs with sk-ant-api03-Xy9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed-AAAA",
        "sk-ant-api03-Xy9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed-AAAA",
    ),
    (
        "The Slack token is xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
        "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    ),
    (
        "Test with eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "The key: -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE= -----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjE=",
    ),
    (
        "The registry is https://deploy:s3cr3t-pass@registry.example.com/",
        "s3cr3t-pass",
    ),
    (
        "Before tests run export X_TOKEN=f00dbabe1234deadbeef",
        "f00dbabe1234deadbeef",
    ),
    (
        "The fixture secret is c2VjcmV0LXBhc3N3b3JkLWZvci10aGUtc3RhZ2luZy1kYXRhYmFzZQ==",
        "c2VjcmV0LXBhc3N3b3JkLWZvci10aGUtc3RhZ2luZy1kYXRhYmFzZQ==",
    ),
];

fn mx() -> Fx {
    Fx::with(|c: FakeConfig| {
        c.merge_top_toml("[memory]\nmine_idle_hours = 0\nmine_per_start = 10\n")
            .unwrap()
    })
}

/// A finished session of the project at `project` whose user said each
/// of `users`; its id.
fn write_session(fx: &Fx, n: u32, project: &str, users: &[&str]) -> String {
    let id = format!("20261101T1001{:02}-{:08x}", n, 0xb000_0000u32 + n);
    let ts = "2026-11-01T10:00:00Z";
    let mut lines = vec![
        json!({"type": "session", "version": 1, "id": id, "title": "old work",
            "created": ts, "cwd": project, "project": project})
        .to_string(),
    ];
    for (i, u) in users.iter().enumerate() {
        let seq = 2 * i as u64 + 1;
        lines.push(
            json!({"type": "message", "seq": seq, "ts": ts, "role": "user", "content": u})
                .to_string(),
        );
        lines.push(
            json!({"type": "message", "seq": seq + 1, "ts": ts, "role": "assistant", "content": "noted"})
                .to_string(),
        );
    }
    fx.sb.write(
        fx.sb.data.join("sessions").join(format!("{id}.jsonl")),
        lines.join("\n") + "\n",
    );
    id
}

fn root(fx: &Fx) -> String {
    std::fs::canonicalize(&fx.sb.work)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

fn eonyx(fx: &Fx, args: &[&str]) -> Output {
    run_with_stdin(fx.cmd(args), "")
}

#[test]
fn every_secret_format_is_dropped_from_proposals_and_redacted_from_the_transcript() {
    let fx = mx();
    let mut memories: Vec<Value> = SECRETS
        .iter()
        .map(|(text, _)| json!({"text": text, "scope": "global", "evidence_seq": 1}))
        .collect();
    memories.push(json!({"text": "We use pnpm, never npm", "scope": "project", "evidence_seq": 1}));
    fx.fake.set_extractor(move |_: &RecordedRequest| {
        Reply::text(json!({ "memories": memories }).to_string())
    });
    let users: Vec<&str> = SECRETS.iter().map(|(t, _)| *t).collect();
    let id = write_session(&fx, 1, &root(&fx), &users);
    let out = eonyx(&fx, &["memory", "mine", "--session", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("dropped 13 proposals holding a secret (never stored)"),
        "{err}"
    );
    let sent = fx.fake.miner_requests()[0].user_texts().join("\n");
    let state = std::fs::read_to_string(fx.sb.data.join("mining/state.json")).unwrap();
    let review = eonyx(&fx, &["memory", "review", "--json"]);
    let listed: Vec<Value> = serde_json::from_str(&stdout(&review)).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["text"], "We use pnpm, never npm");
    for (_, secret) in SECRETS {
        assert!(!state.contains(secret), "stored: {secret}");
        assert!(!sent.contains(secret), "sent to the miner: {secret}");
        assert!(!err.contains(secret), "shown: {secret}");
    }
    assert!(sent.contains("[redacted: "), "{sent}");
}

#[test]
fn memory_add_refuses_every_secret_format_naming_its_kind_not_its_value() {
    let fx = Fx::new();
    for (text, secret) in SECRETS {
        let out = eonyx(&fx, &["memory", "add", text]);
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("refused: the entry holds "), "{err}");
        assert!(err.contains("memory never stores secrets"), "{err}");
        assert!(!err.contains(secret), "{err}");
    }
    // A well-known provider variable's value, in another case and spaced.
    let mut cmd = fx.cmd(&[
        "memory",
        "add",
        "the gemini key is aiza syb-gemini-value-42",
    ]);
    cmd.env("GEMINI_API_KEY", "AIzaSyB-gemini-value-42");
    let out = run_with_stdin(cmd, "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the value of an API key variable"),
        "{}",
        stderr(&out)
    );
    let list = eonyx(&fx, &["memory"]);
    for (_, secret) in SECRETS {
        assert!(!stdout(&list).contains(secret));
    }
    assert!(!stdout(&list).to_lowercase().contains("gemini-value"));
}

#[test]
fn the_memory_tool_refuses_every_secret_format_and_the_model_hears_the_kind_only() {
    let fx = Fx::new();
    for (text, _) in SECRETS {
        fx.fake.push(Reply::tool_call(
            "memory",
            json!({"action": "add", "text": text}),
        ));
    }
    fx.fake.push(Reply::text("ok"));
    let out = eonyx(&fx, &["run", "remember these"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = fx.agent_requests().last().unwrap().tool_results();
    assert_eq!(results.len(), SECRETS.len());
    for (r, (_, secret)) in results.iter().zip(SECRETS) {
        assert!(r.contains("memory never stores secrets"), "{r}");
        assert!(!r.contains(secret), "{r}");
    }
    let list = eonyx(&fx, &["memory"]);
    for (_, secret) in SECRETS {
        assert!(!stdout(&list).contains(secret));
    }
}

#[test]
fn mining_another_projects_session_is_refused_naming_that_project() {
    let fx = mx();
    fx.fake.set_extractor(|_: &RecordedRequest| {
        Reply::text(
            json!({"memories": [{"text": "A's fact", "scope": "project", "evidence_seq": 1}]})
                .to_string(),
        )
    });
    let other = tempfile::tempdir().unwrap();
    let other_root = std::fs::canonicalize(other.path()).unwrap();
    let other_root = other_root.to_str().unwrap();
    let id = write_session(&fx, 2, other_root, &["a", "b", "c"]);
    let out = eonyx(&fx, &["memory", "mine", "--session", &id]);
    assert!(!out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "session {id} belongs to another project ({other_root})"
        )),
        "{err}"
    );
    assert!(fx.fake.miner_requests().is_empty(), "nothing was sent");
    let state = std::fs::read_to_string(fx.sb.data.join("mining/state.json")).unwrap_or_default();
    assert!(
        !state.contains(&id),
        "the session is not marked mined: {state}"
    );
}
