//! Tests of the `shell` tool: running, output caps, timeouts and the
//! sandbox plans (kept apart so `shell.rs` stays readable).

use std::time::Instant;

use eonyx_core::config::ShellPolicy;
use serde_json::json;

use super::super::test_support::*;
use super::super::*;
use super::{OUTPUT_CAP_BYTES, seconds};

#[tokio::test]
async fn first_line_is_the_exit_status_then_combined_output() {
    let f = Fixture::new();
    let out = f
        .run(
            "shell",
            json!({"command": "echo out; echo err >&2; echo again; exit 3"}),
        )
        .await;
    assert!(out.is_error);
    assert_eq!(out.text, "exit status: 3\nout\nerr\nagain\n");
    let out = f.run("shell", json!({"command": "true"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "exit status: 0\n");
}

#[tokio::test]
async fn runs_in_the_project_root_without_stdin() {
    let f = Fixture::new();
    let out = f
        .run("shell", json!({"command": "pwd; cat; echo end"}))
        .await;
    let root = f.root().canonicalize_utf8().unwrap();
    assert_eq!(out.text, format!("exit status: 0\n{root}\nend\n"));
}

#[tokio::test]
async fn a_slow_command_times_out_and_keeps_its_output() {
    let mut f = Fixture::new();
    f.ctx.shell_timeout = Duration::from_secs(1);
    let start = Instant::now();
    let out = f
        .run(
            "shell",
            json!({"command": "echo before; sleep 30; echo after"}),
        )
        .await;
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(out.is_error);
    assert_eq!(out.text, "timed out after 1s\nbefore\n");
}

#[tokio::test]
async fn denial_returns_the_actionable_text_and_runs_nothing() {
    let f = Fixture::new();
    let batch = PolicyApprover::batch(ShellPolicy::Ask, ShellPolicy::Ask, Permissions::NONE);
    let out = f
        .run_with("shell", json!({"command": "touch ran"}), &batch)
        .await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "denied: shell commands need approval; run eonyx with --allow-shell or set tools.shell = \"allow\", \
         or allow commands like this one for good with the permission rule [permissions] allow = [\"shell(touch ran:*)\"]"
    );
    assert!(!f.root().join("ran").exists());
    let rec = Recorder::new(Decision::Allow);
    let out = f
        .run_with("shell", json!({"command": "touch ran"}), &rec)
        .await;
    assert!(!out.is_error);
    assert!(f.root().join("ran").exists());
    assert_eq!(
        rec.asked(),
        vec![ApprovalKind::Shell {
            command: "touch ran".into()
        }]
    );
}

#[tokio::test]
async fn bad_arguments_are_reported() {
    let f = Fixture::new();
    let out = f.run("shell", json!({"cmd": "ls"})).await;
    assert!(out.is_error);
    assert!(
        out.text.starts_with("invalid arguments for shell:"),
        "{}",
        out.text
    );
    let out = f.run("shell", json!({"command": "  "})).await;
    assert_eq!(out.text, "invalid arguments for shell: command is empty");
}

#[tokio::test]
async fn cancelling_kills_the_command_and_its_children() {
    let f = Fixture::new();
    let cancel = CancellationToken::new();
    let call = ToolCall {
        id: "c".into(),
        name: "shell".into(),
        arguments: json!({"command": "sleep 60 & echo $! > bg.pid; echo started; wait"}),
    };
    let trigger = cancel.clone();
    let pid_file = f.root().join("bg.pid");
    tokio::spawn(async move {
        while !pid_file.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let start = Instant::now();
    let out = execute(&call, &f.ctx, &AllowAll, &mut NoAgentTools, &cancel).await;
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(out.is_error);
    assert_eq!(out.text, "interrupted\nstarted\n");

    // The background `sleep` died with the group.
    let pid = std::fs::read_to_string(f.root().join("bg.pid")).unwrap();
    let pid = pid.trim();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = std::process::Command::new("kill")
            .args(["-0", pid])
            .status()
            .unwrap()
            .success();
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        });
        if !alive || zombie {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "background process {pid} survived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn background_processes_do_not_hold_the_result() {
    let f = Fixture::new();
    let start = Instant::now();
    let out = f
        .run("shell", json!({"command": "sleep 5 & echo started"}))
        .await;
    assert!(start.elapsed() < Duration::from_secs(4));
    assert!(
        out.text.starts_with("exit status: 0\nstarted\n"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("[background processes still hold the output open")
    );
}

#[tokio::test]
async fn huge_output_is_capped_in_memory_with_a_note() {
    let f = Fixture::new();
    let out = f
        .run(
            "shell",
            json!({"command": "head -c 5000000 /dev/zero | tr '\\0' a"}),
        )
        .await;
    assert!(!out.is_error);
    let dropped = 5_000_000 - OUTPUT_CAP_BYTES;
    assert!(out.text.len() < OUTPUT_CAP_BYTES + 300);
    assert!(
        out.text.ends_with(&format!(
            "\n[output truncated: {dropped} more bytes were not kept (limit {OUTPUT_CAP_BYTES} bytes); redirect to a file and grep it instead]\n"
        )),
        "{}",
        &out.text[out.text.len() - 200..]
    );
}

#[tokio::test]
async fn signals_are_reported_like_a_shell_does() {
    let f = Fixture::new();
    let out = f.run("shell", json!({"command": "kill -9 $$"})).await;
    assert_eq!(out.text, "exit status: 137\n");
}

fn bwrap() -> eonyx_core::config::SandboxConfig {
    eonyx_core::config::SandboxConfig {
        backend: eonyx_core::config::SandboxBackend::Bwrap,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_confined_command_writes_the_project_and_is_told_what_the_sandbox_denied() {
    let f = Fixture::new().sandboxed(bwrap());
    std::fs::create_dir(f.root().join(".git")).unwrap();
    let out = f
        .run(
            "shell",
            json!({"command": "echo a > made.txt && echo hook > .git/hooks-x"}),
        )
        .await;
    assert!(
        f.root().join("made.txt").exists(),
        "bubblewrap must work here (apt-get install bubblewrap; .ci/run installs it): {}",
        out.text
    );
    assert!(out.is_error);
    assert!(!f.root().join(".git/hooks-x").exists());
    let last = out.text.lines().last().unwrap();
    assert!(
        last.starts_with("[sandbox denied writing .git/hooks-x:"),
        "{}",
        out.text
    );
    assert!(last.contains("tools.sandbox = \"off\""), "{last}");
    // A failure the sandbox did not cause gets no such line.
    let out = f.run("shell", json!({"command": "exit 3"})).await;
    assert_eq!(out.text, "exit status: 3\n");
}

#[tokio::test]
async fn without_a_backend_commands_are_refused_when_required_or_run_with_one_warning() {
    let landlock = eonyx_core::config::SandboxConfig {
        backend: eonyx_core::config::SandboxBackend::Landlock,
        ..Default::default()
    };
    let required = Fixture::new().sandboxed(eonyx_core::config::SandboxConfig {
        required: true,
        ..landlock.clone()
    });
    let out = required.run("shell", json!({"command": "touch ran"})).await;
    assert!(out.is_error);
    assert!(
        out.text
            .starts_with("denied: the sandbox is required (tools.sandbox_required = true)"),
        "{}",
        out.text
    );
    assert!(!required.root().join("ran").exists());

    let f = Fixture::new().sandboxed(landlock);
    let first = f.run("shell", json!({"command": "touch ran"})).await;
    assert!(!first.is_error, "{}", first.text);
    assert!(f.root().join("ran").exists());
    let Some(ToolEvent::Warning(w)) = &first.event else {
        panic!("no warning: {first:?}");
    };
    assert!(
        w.starts_with("no sandbox backend works here (landlock:"),
        "{w}"
    );
    let second = f.run("shell", json!({"command": "true"})).await;
    assert_eq!(second.event, None, "warned once per process");
}

#[test]
fn timeouts_print_in_seconds() {
    assert_eq!(seconds(Duration::from_secs(120)), "120s");
    assert_eq!(seconds(Duration::from_millis(500)), "0.5s");
}
