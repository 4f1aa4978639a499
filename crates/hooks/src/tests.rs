use std::time::Duration;

use camino::Utf8PathBuf;
use eonyx_core::hooks::{HookDef, HookEvent};
use serde_json::{Value, json};

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    root: Utf8PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(dir.path().to_path_buf()).unwrap();
    Fixture { _dir: dir, root }
}

impl Fixture {
    fn hooks(&self, defs: &[(HookEvent, &str, &str)]) -> Hooks {
        let defs: Vec<HookDef> = defs
            .iter()
            .map(|(event, matcher, command)| HookDef {
                event: *event,
                matcher: (*matcher).to_owned(),
                command: (*command).to_owned(),
                timeout_secs: 60,
                file: "/c/config.toml".into(),
                runs: true,
            })
            .collect();
        Hooks::new(
            &defs,
            RunEnv {
                project_dir: self.root.clone(),
                hidden_env: vec!["EONYX_TEST_SECRET_KEY".into()],
            },
        )
        .unwrap()
    }

    fn common(&self) -> Common {
        Common {
            session_id: "20260101T000000-abcdefgh".into(),
            transcript_path: self.root.join("s.jsonl"),
            cwd: self.root.clone(),
        }
    }
}

fn pre(tool: &str, input: Value) -> Payload {
    Payload::PreToolUse(ToolUse {
        tool_name: tool.into(),
        tool_input: input,
        tool_use_id: "call_1".into(),
    })
}

#[tokio::test]
async fn a_claude_code_matcher_gets_claude_code_names_and_its_update_comes_back_in_ours() {
    let f = fixture();
    let hooks = f.hooks(&[(
        HookEvent::PreToolUse,
        "Edit|Write",
        r#"cat > seen.json; echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"file_path":"b.txt","content":"x"}}}'"#,
    )]);
    let out = hooks
        .run(
            &f.common(),
            &pre("write_file", json!({"path": "a.txt", "content": "x"})),
        )
        .await;
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(f.root.join("seen.json")).unwrap()).unwrap();
    assert_eq!(seen["tool_name"], "Write");
    assert_eq!(seen["tool_input"]["file_path"], "a.txt");
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["tool_use_id"], "call_1");
    assert_eq!(out.permission, Some(Permission::Allow));
    assert_eq!(
        out.updated_input,
        Some(json!({"path": "b.txt", "content": "x"}))
    );
    // Not selected: another tool.
    let out = hooks
        .run(&f.common(), &pre("shell", json!({"command": "ls"})))
        .await;
    assert!(out.runs.is_empty());
}

#[tokio::test]
async fn deny_wins_over_ask_over_allow_and_identical_commands_run_once() {
    let f = fixture();
    let answer = |d: &str| {
        format!(
            r#"echo '{{"hookSpecificOutput":{{"permissionDecision":"{d}","permissionDecisionReason":"{d} said so"}}}}'"#
        )
    };
    let (allow, ask, deny) = (answer("allow"), answer("ask"), answer("deny"));
    let hooks = f.hooks(&[
        (HookEvent::PreToolUse, "*", &allow),
        (HookEvent::PreToolUse, "Bash", &ask),
        (HookEvent::PreToolUse, "shell", &allow),
    ]);
    let out = hooks
        .run(&f.common(), &pre("shell", json!({"command": "ls"})))
        .await;
    assert_eq!(out.runs.len(), 2, "{out:?}");
    assert_eq!(out.permission, Some(Permission::Ask));
    assert_eq!(out.permission_reason.as_deref(), Some("ask said so"));
    let hooks = f.hooks(&[
        (HookEvent::PreToolUse, "", &ask),
        (HookEvent::PreToolUse, "sh.*", &deny),
    ]);
    let out = hooks
        .run(&f.common(), &pre("shell", json!({"command": "ls"})))
        .await;
    assert_eq!(out.denied().as_deref(), Some("deny said so"));
}

#[tokio::test]
async fn exit_codes_block_warn_or_add_plain_context() {
    let f = fixture();
    let hooks = f.hooks(&[
        (HookEvent::UserPromptSubmit, "", "echo 'the build is green'"),
        (HookEvent::UserPromptSubmit, "", "echo oops >&2; exit 3"),
    ]);
    let prompt = Payload::UserPromptSubmit {
        prompt: "hi".into(),
    };
    let out = hooks.run(&f.common(), &prompt).await;
    assert_eq!(out.context, ["the build is green"]);
    assert!(out.block.is_none());
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("exited with 3: oops"),
        "{:?}",
        out.warnings
    );

    let hooks = f.hooks(&[(
        HookEvent::UserPromptSubmit,
        "",
        "echo 'no secrets' >&2; exit 2",
    )]);
    let out = hooks.run(&f.common(), &prompt).await;
    assert_eq!(out.block.as_deref(), Some("no secrets"));
    assert_eq!(out.runs[0].decision, Some("block"));
    assert_eq!(out.runs[0].exit_code, Some(2));

    // A JSON answer is never context; plain text on a tool event is not either.
    let hooks = f.hooks(&[(
        HookEvent::SessionStart,
        "startup",
        r#"echo '{"systemMessage":"hi"}'"#,
    )]);
    let start = Payload::SessionStart {
        source: StartSource::Startup,
    };
    let out = hooks.run(&f.common(), &start).await;
    assert!(out.context.is_empty());
    assert_eq!(out.messages, ["hi"]);
    let out = hooks
        .run(
            &f.common(),
            &Payload::SessionStart {
                source: StartSource::Compact,
            },
        )
        .await;
    assert!(out.runs.is_empty(), "the matcher is on the source");

    let hooks = f.hooks(&[(HookEvent::SessionStart, "", "exec /nonexistent/interpreter")]);
    let out = hooks.run(&f.common(), &start).await;
    assert!(out.block.is_none() && out.context.is_empty());
    assert_eq!(out.warnings.len(), 1, "{out:?}");
}

#[tokio::test]
async fn a_hung_hook_is_killed_with_its_children_at_its_timeout() {
    let f = fixture();
    let mut hooks = f.hooks(&[(HookEvent::Stop, "", "sleep 300 & echo $! > child.pid; wait")]);
    hooks.hooks[0].def.timeout_secs = 1;
    let out = hooks
        .run(
            &f.common(),
            &Payload::Stop {
                stop_hook_active: false,
            },
        )
        .await;
    assert!(out.warnings[0].contains("timed out"), "{out:?}");
    assert!(out.block.is_none());
    let pid = std::fs::read_to_string(f.root.join("child.pid")).unwrap();
    // Reaped or a zombie: either way, not running.
    let mut gone = false;
    for _ in 0..50 {
        let state =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone, "the hook's child {pid} still runs");
}

#[tokio::test]
async fn hooks_run_in_the_project_root_with_the_project_dir_set() {
    let f = fixture();
    // (That no key reaches a hook is checked through the binary, which
    // has one set: tests/e2e/hooks.rs.)
    let hooks = f.hooks(&[(HookEvent::SessionEnd, "", "env > env.txt; pwd > pwd.txt")]);
    hooks
        .run(
            &f.common(),
            &Payload::SessionEnd {
                reason: "exit".into(),
            },
        )
        .await;
    let env = std::fs::read_to_string(f.root.join("env.txt")).unwrap();
    assert!(env.contains(&format!("EONYX_PROJECT_DIR={}", f.root)));
    assert!(env.contains(&format!("CLAUDE_PROJECT_DIR={}", f.root)));
    let pwd = std::fs::read_to_string(f.root.join("pwd.txt")).unwrap();
    assert_eq!(
        std::fs::canonicalize(pwd.trim()).unwrap(),
        std::fs::canonicalize(&f.root).unwrap()
    );
}
