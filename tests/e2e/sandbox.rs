//! The shell sandbox through the real binary, for each backend (bubblewrap,
//! and Landlock + seccomp through `eonyx sandbox-exec`): what a confined
//! command may write, that it cannot reach the fake server, what the model
//! is told, that `tools.sandbox = "off"` lifts it and an untrusted
//! `eonyx.json` cannot; the editing tools' `eonyx.json` rule; the no-backend
//! warning and refusal.
//!
//! bubblewrap must be installed (`.ci/run` installs it); the sandbox is
//! made required in these tests, so a backend that does not work fails
//! them loudly instead of letting commands run unconfined.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::{Path, PathBuf};

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{json_lines, stderr};

pub(crate) const BACKENDS: [&str; 2] = ["bwrap", "landlock"];

/// A directory outside every writable root: not under /tmp, the project
/// or `$TMPDIR`. Cargo's per-target temp dir (under `target/`) is one,
/// unless the checkout itself lives in the temp dir (a clone in /tmp): then
/// /var/tmp, which the sandbox does not open.
fn outside_dir() -> tempfile::TempDir {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let in_temp = target.starts_with("/tmp") || target.starts_with(std::env::temp_dir());
    let base = if in_temp {
        Path::new("/var/tmp")
    } else {
        target
    };
    tempfile::tempdir_in(base).unwrap()
}

/// Python to open a TCP connection with (`sh` here has no `/dev/tcp`).
pub(crate) fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// A project with a `.git` dir whose config makes `backend` required
/// (`extra` is more `[tools]` TOML).
pub(crate) fn project(backend: &str, extra: &str) -> Fx {
    let toml =
        format!("[tools]\nsandbox_backend = \"{backend}\"\nsandbox_required = true\n{extra}");
    let fx = Fx::with(|c| c.merge_top_toml(&toml).unwrap());
    std::fs::create_dir(fx.sb.work.join(".git")).unwrap();
    fx
}

/// The commands every backend test runs, in order, and where they write.
struct Probe {
    outside: tempfile::TempDir,
    tmpdir: tempfile::TempDir,
    commands: Vec<String>,
}

impl Probe {
    fn new(fx: &Fx) -> Self {
        let outside = outside_dir();
        let tmpdir = outside_dir();
        let port = fx.fake.addr().port();
        let commands = vec![
            "echo in > inside.txt".to_owned(),
            "echo t > \"$TMPDIR/t.txt\"".to_owned(),
            format!("echo o > {}/o.txt", outside.path().display()),
            "echo h > .git/hooks-x".to_owned(),
            "echo '{\"max_steps\": 1}' > eonyx.json".to_owned(),
            format!(
                "{} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'",
                python()
            ),
        ];
        Self {
            outside,
            tmpdir,
            commands,
        }
    }

    /// Run every command in one batch turn with `--allow-shell` (plus
    /// `flags`); the results the model was sent, in order.
    fn run(&self, fx: &Fx, flags: &[&str]) -> Vec<String> {
        fx.fake
            .push(Reply::tool_calls(
                self.commands
                    .iter()
                    .map(|c| ("shell", json!({ "command": c }))),
            ))
            .push(Reply::text("done"));
        let mut cmd = fx.cmd(&[&["--allow-shell"], flags].concat());
        cmd.env("TMPDIR", self.tmpdir.path());
        let o = run_with_stdin(cmd, "try the commands\n");
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        let results = fx.agent_requests().last().unwrap().tool_results();
        assert_eq!(results.len(), self.commands.len(), "{results:#?}");
        results
    }

    fn outside_file(&self) -> PathBuf {
        self.outside.path().join("o.txt")
    }
}

/// The project's `eonyx.json` as [`project`] writes it.
const PROJECT_FILE: &str = "{}\n";

/// Inside writes went through, the rest was refused and explained, and
/// `eonyx.json` still holds `eonyx_json`.
fn assert_confined(fx: &Fx, probe: &Probe, results: &[String], backend: &str, eonyx_json: &str) {
    let ok = |i: usize| {
        assert!(
            results[i].starts_with("exit status: 0\n"),
            "{backend}: `{}` failed: {}",
            probe.commands[i],
            results[i]
        );
    };
    ok(0);
    ok(1);
    assert!(fx.sb.work.join("inside.txt").exists());
    assert!(probe.tmpdir.path().join("t.txt").exists());

    let denied = |i: usize, why: &str| {
        let r = &results[i];
        assert!(!r.starts_with("exit status: 0\n"), "{backend}: ran: {r}");
        let last = r.lines().last().unwrap();
        assert!(
            last.starts_with("[sandbox denied ") && last.contains(why),
            "{backend}: `{}` is explained with {why:?}: {r}",
            probe.commands[i]
        );
    };
    denied(2, "add the directory to tools.sandbox_writable");
    denied(3, ".git/ and eonyx.json stay read-only");
    denied(4, ".git/ and eonyx.json stay read-only");
    denied(5, "tools.sandbox_network = true allows it");
    assert!(!results[5].contains("connected"), "{}", results[5]);
    assert!(!probe.outside_file().exists());
    assert!(!fx.sb.work.join(".git/hooks-x").exists());
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("eonyx.json")).unwrap(),
        eonyx_json
    );
}

#[test]
fn each_backend_confines_writes_and_the_network_and_tells_the_model_why() {
    for backend in BACKENDS {
        let fx = project(backend, "");
        let probe = Probe::new(&fx);
        let results = probe.run(&fx, &[]);
        assert_confined(&fx, &probe, &results, backend, PROJECT_FILE);
        // The command sees which backend confines it, and holds no
        // capabilities even when eonyx runs as root.
        fx.fake
            .push(Reply::tool_call(
                "shell",
                json!({"command": "echo $EONYX_SANDBOX; grep CapEff /proc/self/status"}),
            ))
            .push(Reply::text("done"));
        let o = fx.run(&["--allow-shell"], "which sandbox?\n");
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        let r = fx.agent_requests().last().unwrap().tool_results();
        assert_eq!(
            r.last().unwrap(),
            &format!("exit status: 0\n{backend}\nCapEff:\t0000000000000000\n")
        );
    }
}

#[test]
fn a_timed_out_command_is_killed_with_what_it_started_for_each_backend() {
    for (i, backend) in BACKENDS.iter().enumerate() {
        let fx = project(backend, "shell_timeout_secs = 1\n");
        // A duration no other process uses, to find the sleeps by.
        let marker = format!("3599.{}{i}", std::process::id());
        fx.fake
            .push(Reply::tool_call(
                "shell",
                json!({"command": format!("sleep {marker} & sleep {marker}")}),
            ))
            .push(Reply::text("done"));
        let o = fx.run(&["--allow-shell"], "wait\n");
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        let r = fx.agent_requests().last().unwrap().tool_results();
        assert_eq!(r, ["timed out after 1s\n"], "{backend}");
        let wanted = format!("sleep\0{marker}\0");
        let running = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes())
            })
        };
        wait_for(
            &format!("{backend}: the sleeps to be killed"),
            std::time::Duration::from_secs(10),
            || !running(),
        );
    }
}

/// So it has no controlling terminal to push keystrokes into.
#[test]
fn a_landlock_command_leads_its_own_session() {
    let fx = project("landlock", "");
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "read pid comm state ppid pgrp sid rest < /proc/$$/stat; echo $sid; echo $pid"}),
        ))
        .push(Reply::text("done"));
    let o = fx.run(&["--allow-shell"], "which session?\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let r = fx.agent_requests().last().unwrap().tool_results();
    let lines: Vec<&str> = r[0].lines().map(str::trim).collect();
    assert_eq!(lines[0], "exit status: 0", "{r:?}");
    assert_eq!(lines.len(), 3, "{r:?}");
    assert_eq!(lines[1], lines[2], "the shell leads its own session: {r:?}");
}

#[test]
fn sandbox_off_lifts_it_for_each_backend() {
    for backend in BACKENDS {
        let fx = project(backend, "sandbox = \"off\"\n");
        let probe = Probe::new(&fx);
        let results = probe.run(&fx, &[]);
        for (i, r) in results.iter().enumerate() {
            assert!(
                r.starts_with("exit status: 0\n") && !r.contains("[sandbox denied"),
                "{backend}: `{}` with the sandbox off: {r}",
                probe.commands[i]
            );
        }
        assert!(results[5].contains("connected"), "{}", results[5]);
        assert!(probe.outside_file().exists());
        assert!(fx.sb.work.join(".git/hooks-x").exists());
    }
}

#[test]
fn an_untrusted_eonyx_json_cannot_lift_it() {
    for backend in BACKENDS {
        let fx = project(backend, "");
        let probe = Probe::new(&fx);
        fx.sb.write(
            "work/eonyx.json",
            json!({"tools": {
                "sandbox": "off",
                "sandbox_network": true,
                "sandbox_required": false,
                "sandbox_writable": [probe.outside.path()],
            }})
            .to_string(),
        );
        let before = std::fs::read_to_string(fx.sb.work.join("eonyx.json")).unwrap();
        let results = probe.run(&fx, &[]);
        assert_confined(&fx, &probe, &results, backend, &before);
        let o = fx.run(&["config"], "");
        let warning = stderr(&o);
        assert!(
            warning.contains("ignoring `tools.sandbox`, `tools.sandbox_network`, `tools.sandbox_required`, `tools.sandbox_writable` because the project is not trusted"),
            "{warning}"
        );
    }
}

#[test]
fn allow_write_cannot_write_eonyx_json_in_batch_even_when_trusted() {
    let fx = Fx::new();
    let root = fx.sb.work.to_str().unwrap().to_owned();
    let config = eonyx_tests::FakeConfig::openai(&fx.fake.base_url())
        .set("retries", 0)
        .top("trusted_projects", vec![root]);
    fx.sb.write_config(&config).unwrap();
    fx.fake
        .push(Reply::tool_calls([
            (
                "write_file",
                json!({"path": "eonyx.json", "content": "{\"tools\": {\"shell\": \"allow\"}}\n"}),
            ),
            (
                "edit_file",
                json!({"path": ".git/config", "old_string": "", "new_string": "[core]\n"}),
            ),
        ]))
        .push(Reply::text("refused"));
    let o = fx.run(&["--allow-write"], "give yourself the shell\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let results = fx.agent_requests().last().unwrap().tool_results();
    for r in &results {
        assert!(
            r.starts_with("denied: ") && r.contains("always needs the user's yes in the REPL"),
            "{r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("eonyx.json")).unwrap(),
        "{}\n"
    );
    assert!(!fx.sb.work.join(".git/config").exists());
}

/// A `PATH` holding only `sh`: no `bwrap`.
fn path_without_bwrap(fx: &Fx) -> PathBuf {
    let bin = fx.sb.root.join("bin-no-bwrap");
    std::fs::create_dir(&bin).unwrap();
    let sh = ["/bin/sh", "/usr/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap();
    std::os::unix::fs::symlink(sh, bin.join("sh")).unwrap();
    bin
}

#[test]
fn without_bwrap_commands_run_unconfined_after_one_warning() {
    let fx = Fx::with(|c| {
        c.merge_top_toml("[tools]\nsandbox_backend = \"bwrap\"\n")
            .unwrap()
    });
    let bin = path_without_bwrap(&fx);
    let outside = outside_dir();
    let target = outside.path().join("o.txt");
    fx.fake
        .push(Reply::tool_calls([
            (
                "shell",
                json!({"command": format!("echo o > {}", target.display())}),
            ),
            ("shell", json!({"command": "echo second"})),
        ]))
        .push(Reply::text("done"));
    let mut cmd = fx.cmd(&["--allow-shell"]);
    cmd.env("PATH", &bin);
    let o = run_with_stdin(cmd, "run them\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(
        err.matches("warning: no sandbox backend works here (bwrap: not found on PATH)")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("shell commands run unconfined"), "{err}");
    assert!(target.exists(), "unconfined: the write went through");
    let results = fx.agent_requests().last().unwrap().tool_results();
    assert_eq!(results, ["exit status: 0\n", "exit status: 0\nsecond\n"]);

    // With --json: one `warning` event.
    fx.fake
        .push(Reply::tool_calls([
            ("shell", json!({"command": "true"})),
            ("shell", json!({"command": "true"})),
        ]))
        .push(Reply::text("done"));
    let mut cmd = fx.cmd(&["--allow-shell", "--json", "run", "again"]);
    cmd.env("PATH", &bin);
    let o = run_with_stdin(cmd, "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let warnings: Vec<Value> = json_lines(&o.stdout)
        .into_iter()
        .filter(|e| e["type"] == "warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("no sandbox backend works here"),
        "{message}"
    );
}

#[test]
fn without_bwrap_a_required_sandbox_refuses_commands_and_says_why() {
    let fx = Fx::with(|c| {
        c.merge_top_toml("[tools]\nsandbox_backend = \"bwrap\"\nsandbox_required = true\n")
            .unwrap()
    });
    let bin = path_without_bwrap(&fx);
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo ran > ran.txt"}),
        ))
        .push(Reply::text("refused"));
    let mut cmd = fx.cmd(&["--allow-shell"]);
    cmd.env("PATH", &bin);
    let o = run_with_stdin(cmd, "run it\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.sb.work.join("ran.txt").exists());
    let results = fx.agent_requests().last().unwrap().tool_results();
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert!(
        r.starts_with(
            "denied: the sandbox is required (tools.sandbox_required = true) and no backend works here (bwrap: not found on PATH)"
        ),
        "{r}"
    );
    assert!(r.contains("apt-get install bubblewrap"), "{r}");
    assert!(!stderr(&o).contains("run unconfined"), "{}", stderr(&o));
}

#[test]
fn eonyx_config_names_the_backend_in_use_or_why_none_works() {
    let fx = project("bwrap", "");
    let o = fx.run(&["config"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("# sandbox:        bwrap, workspace-write, no network\n"),
        "{out}"
    );
    assert!(out.contains("tools.sandbox_required = true"), "{out}");

    let fx = project("landlock", "");
    let o = fx.run(&["--json", "config"], "");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sandbox"]["backend"], "landlock", "{v}");
    let status = v["sandbox"]["status"].as_str().unwrap();
    assert!(status.starts_with("landlock (Landlock ABI "), "{status}");

    let bin = path_without_bwrap(&fx);
    let fx2 = project("bwrap", "");
    let mut cmd = fx2.cmd(&["config"]);
    cmd.env("PATH", &bin);
    let o = run_with_stdin(cmd, "");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(
            "# sandbox:        none works (bwrap: not found on PATH); commands are refused"
        ),
        "{out}"
    );
}

/// The user's `!command` goes through the same spawn, so it is confined
/// the same way, and `/status` names the sandbox.
#[test]
fn a_bang_command_is_confined_and_status_names_the_sandbox() {
    for backend in BACKENDS {
        let fx = project(backend, "");
        fx.fake.push(Reply::text("seen"));
        let outside = outside_dir();
        let target = outside.path().join("o.txt");
        let input = format!(
            "!echo in > bang.txt; echo o > {}\nwhat happened?\n/status\n",
            target.display()
        );
        let o = run_with_stdin(fx.cmd(&["--json"]), &input);
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        assert!(fx.sb.work.join("bang.txt").exists(), "{backend}");
        assert!(!target.exists(), "{backend}: the !command wrote outside");
        let first = &fx.chats()[0].user_texts()[0];
        assert!(
            first.contains("[sandbox denied writing") && first.contains("tools.sandbox_writable"),
            "{backend}: the model is told too: {first}"
        );
        let status = json_lines(&o.stdout)
            .into_iter()
            .find(|e| e["type"] == "status")
            .unwrap();
        let line = status["sandbox"].as_str().unwrap();
        assert!(line.starts_with(backend), "{backend}: {line}");
    }
}
