//! The provider key never reaches the model, and an untrusted project
//! cannot move a request or a key (issue 13, SPEC §7 and §9): through the
//! real binary against the fake server.
#![allow(clippy::unwrap_used)] // test code: a failure is a test failure

use std::path::Path;
use std::process::Output;

use camino::Utf8Path;
use eonyx_tests::{FakeConfig, FakeServer, Reply};
use serde_json::json;

use crate::util::{Sandbox, stderr, stdout};

const OPENAI_KEY: &str = "sk-openai-e2e-0123456789abcdef";
const CORP_KEY: &str = "corp-token-e2e-fedcba9876543210";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return hits;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            hits.extend(files_containing(&p, needle));
        } else if let Ok(bytes) = std::fs::read(&p)
            && String::from_utf8_lossy(&bytes).contains(needle)
        {
            hits.push(p.display().to_string());
        }
    }
    hits
}

#[test]
fn shell_and_tool_output_never_carry_the_provider_key() {
    let sb = Sandbox::new();
    sb.write("work/eonyx.json", "{}\n");
    // A file in the project that holds both keys: its contents reach a
    // tool result, which must be scrubbed before it is saved or sent.
    sb.write(
        "work/.env",
        format!("OPENAI_API_KEY={OPENAI_KEY}\nCORP={CORP_KEY}\n"),
    );
    let fake = FakeServer::start();
    FakeConfig::openai(&fake.base_url())
        .set("retries", 0)
        .set("api_key_env", "CORP_LLM_TOKEN")
        .write(Utf8Path::from_path(&sb.config).unwrap())
        .unwrap();
    fake.require_api_key(Some(CORP_KEY));
    fake.push(Reply::tool_call(
        "shell",
        json!({"command": "env; echo \"key:$OPENAI_API_KEY:$CORP_LLM_TOKEN:\""}),
    ))
    .push(Reply::tool_call("read_file", json!({"path": ".env"})))
    .push(Reply::text("done"));
    let state = sb.root.join("state");
    let o = sb
        .eonyx()
        .args(["run", "--allow-shell", "show me the environment"])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("CORP_LLM_TOKEN", CORP_KEY)
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "done\n");

    let chats = fake.chat_requests();
    assert_eq!(chats.len(), 3);
    // The shell's child had neither variable: `env` lists neither name and
    // the echo prints them empty.
    let shell_result = chats[1].all_text();
    assert!(shell_result.contains("key:::"), "{shell_result}");
    assert!(!shell_result.contains("OPENAI_API_KEY="), "{shell_result}");
    assert!(!shell_result.contains("CORP_LLM_TOKEN="), "{shell_result}");
    assert!(shell_result.contains("exit status: 0"), "{shell_result}");
    // The file's keys reached the model only as markers.
    let read_result = chats[2].all_text();
    assert!(
        read_result.contains("OPENAI_API_KEY=[redacted: OPENAI_API_KEY]"),
        "{read_result}"
    );
    assert!(
        read_result.contains("CORP=[redacted: CORP_LLM_TOKEN]"),
        "{read_result}"
    );
    for key in [OPENAI_KEY, CORP_KEY] {
        for r in fake.requests() {
            assert!(
                !r.raw_body.contains(key),
                "a request body carried a key: {}",
                r.raw_body
            );
        }
        assert_eq!(files_containing(&sb.data, key), Vec::<String>::new());
        assert_eq!(files_containing(&state, key), Vec::<String>::new());
    }
    // The session file has the marker where the key was.
    let sessions = files_containing(&sb.data.join("sessions"), "[redacted: CORP_LLM_TOKEN]");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
}

/// `eonyx` in a project whose `eonyx.json` is `project`, with `args`.
fn run_in_project(sb: &Sandbox, project: &str, args: &[&str]) -> Output {
    sb.write("work/eonyx.json", project);
    sb.eonyx().args(args).output().unwrap()
}
