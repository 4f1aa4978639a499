//! No process of a command or job outlives it, whatever the sandbox (issue
//! 56, docs/tools.md#sandbox): on bubblewrap, on Landlock and with the
//! sandbox off, jobs that leave their process group (`set -m`,
//! `os.setpgid`, GNU `timeout`, `start_new_session`) or kill their parent
//! (`kill -9 $PPID`) leave nothing after `job_stop`, the session's end or
//! `kill -9` of eonyx; a foreground command's `sleep … &` neither keeps
//! `eonyx run` from exiting nor outlives the command. Leftovers are found in
//! `/proc` by a marker no other process uses. (And a job's start result,
//! cut by the job's own cap, is not cut again by the generic one.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::json;

use crate::agent::*;
use crate::jobs::{assert_all_gone, pids_with};
use crate::util::{spawn_with_stdin, stderr};

/// The backends, as `[tools]` TOML: each required, or the sandbox off.
const BACKENDS: [(&str, &str); 3] = [
    (
        "bwrap",
        "sandbox_backend = \"bwrap\"\nsandbox_required = true\n",
    ),
    (
        "landlock",
        "sandbox_backend = \"landlock\"\nsandbox_required = true\n",
    ),
    ("off", "sandbox = \"off\"\n"),
];

fn project(tools: &str) -> Fx {
    let toml = format!("[tools]\n{tools}");
    Fx::with(|c| c.merge_top_toml(&toml).unwrap())
}

fn python() -> &'static str {
    if std::path::Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// Whether a process of the command itself (not eonyx, a keeper or the
/// shell) holds `marker`.
fn leaf_running(marker: &str) -> bool {
    pids_with(marker).iter().any(|pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv0 = String::from_utf8_lossy(cmdline.split(|b| *b == 0).next().unwrap_or_default())
            .into_owned();
        ["sleep", "python3", "timeout"]
            .iter()
            .any(|p| argv0.ends_with(p))
    })
}

/// The five jobs that escape a process group, each with its marker.
fn escapes(base: &str) -> Vec<(String, String)> {
    let py = python();
    (1..=5)
        .map(|k| {
            let m = format!("{base}{k}");
            let command = match k {
                1 => format!("set -m; sleep {m} & wait"),
                // `; :` keeps the shell from exec'ing python: as the
                // session leader the helper's `setsid` makes it (bash execs
                // a lone command), its `setpgid` would fail.
                2 => format!(
                    "{py} -c 'import os, time; os.setpgid(0, 0); time.sleep(600)' {m}; :"
                ),
                3 => format!("timeout 600 sleep {m}"),
                4 => format!(
                    "{py} -c 'import subprocess, sys, time; subprocess.Popen([\"sleep\", sys.argv[1]], start_new_session=True); time.sleep(600)' {m}"
                ),
                _ => format!("sleep {m} & kill -9 $PPID; wait"),
            };
            (m, command)
        })
        .collect()
}

fn bg(command: &str) -> Reply {
    Reply::tool_call("shell", json!({"command": command, "background": true}))
}

/// Runs `cmd` with `input` on stdin to its end, failing (and killing it)
/// if it has not ended within a minute.
fn run_bounded(mut cmd: Command, input: &str) -> Output {
    let child = spawn_with_stdin(&mut cmd, input);
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("eonyx did not exit within a minute of its turn's end");
        }
    }
}

#[test]
fn jobs_that_leave_their_group_leave_nothing_after_job_stop_on_every_backend() {
    for (i, (backend, tools)) in BACKENDS.iter().enumerate() {
        let fx = project(tools);
        let base = format!("86{i}{}", std::process::id() % 1000);
        let jobs = escapes(&base);
        for (_, command) in &jobs {
            fx.fake.push(bg(command));
        }
        for id in 1..=jobs.len() {
            fx.fake
                .push(Reply::tool_call("job_stop", json!({ "id": id })));
        }
        fx.fake.push(Reply::text("stopped"));
        // When the last stop's result arrives, what is left is looked for.
        let left: Arc<Mutex<Option<Vec<u32>>>> = Arc::default();
        let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
        {
            let (left, seen, jobs) = (left.clone(), seen.clone(), jobs.clone());
            fx.fake.set_responder(move |r: &RecordedRequest| {
                let results = r.tool_results();
                if results.len() == jobs.len() {
                    // Every job started (its first second is over).
                    *seen.lock().unwrap() = jobs.iter().map(|(m, _)| leaf_running(m)).collect();
                }
                if results.len() == 2 * jobs.len() {
                    let found = jobs.iter().flat_map(|(m, _)| pids_with(m)).collect();
                    *left.lock().unwrap() = Some(found);
                }
                None
            });
        }
        let out = run_bounded(fx.cmd(&["--allow-shell"]), "start and stop them\n");
        assert_eq!(out.status.code(), Some(0), "{backend}: {}", stderr(&out));
        let seen = seen.lock().unwrap().clone();
        // The kill-the-keeper job may be gone already.
        assert_eq!(&seen[..4], [true; 4], "{backend}: the jobs did not start");
        let left = left.lock().unwrap().clone();
        assert_eq!(left, Some(vec![]), "{backend}: left running after job_stop");
        let results = fx.agent_requests().last().unwrap().tool_results();
        for r in &results[jobs.len()..] {
            assert!(
                r.starts_with("job ") && !r.contains("running for"),
                "{backend}: {r}"
            );
        }
        for (m, _) in &jobs {
            assert_all_gone(m, backend);
        }
    }
}

#[test]
fn jobs_that_leave_their_group_leave_nothing_after_the_session_ends_or_kill_9_on_every_backend() {
    for (i, (backend, tools)) in BACKENDS.iter().enumerate() {
        for (n, kill) in [false, true].into_iter().enumerate() {
            let fx = project(tools);
            let base = format!("87{i}{n}{}", std::process::id() % 1000);
            let jobs = escapes(&base);
            for (_, command) in &jobs {
                fx.fake.push(bg(command));
            }
            fx.fake.push(Reply::text("all running"));
            let mut child = fx
                .cmd(&["--allow-shell"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            std::io::Write::write_all(&mut stdin, b"start them\n").unwrap();
            wait_for(
                &format!("{backend}: the turn's end"),
                Duration::from_secs(60),
                || fx.agent_requests().len() > jobs.len(),
            );
            for (m, _) in &jobs[..4] {
                assert!(leaf_running(m), "{backend}: job {m} is not running");
            }
            if kill {
                child.kill().unwrap();
                child.wait().unwrap();
                drop(stdin);
            } else {
                drop(stdin);
                let status = child.wait().unwrap();
                assert!(status.success(), "{backend}");
            }
            let what = if kill {
                "kill -9 of eonyx"
            } else {
                "the session's end"
            };
            for (m, _) in &jobs {
                assert_all_gone(m, &format!("{backend}, after {what}"));
            }
        }
    }
}

#[test]
fn a_foreground_command_that_leaves_a_process_ends_the_run_and_the_process_on_every_backend() {
    for (i, (backend, tools)) in BACKENDS.iter().enumerate() {
        let fx = project(tools);
        let marker = format!("88{i}{}", std::process::id() % 1000);
        fx.fake
            .push(Reply::tool_call(
                "shell",
                json!({"command": format!("sleep {marker} & echo started")}),
            ))
            .push(Reply::text("done"));
        let out = run_bounded(fx.cmd(&["run", "--allow-shell", "start it"]), "");
        assert_eq!(out.status.code(), Some(0), "{backend}: {}", stderr(&out));
        let result = fx.agent_requests().last().unwrap().tool_results();
        assert!(
            result[0].starts_with("exit status: 0\nstarted\n"),
            "{backend}: {result:?}"
        );
        if *backend != "bwrap" {
            assert!(
                result[0].contains("1 process it started was still running; it was stopped"),
                "{backend}: {result:?}"
            );
        }
        assert_all_gone(&marker, backend);
    }
}

#[test]
fn a_timed_out_gnu_timeout_is_killed_with_its_child_on_every_backend() {
    for (i, (backend, tools)) in BACKENDS.iter().enumerate() {
        let fx = project(&format!("{tools}shell_timeout_secs = 1\n"));
        let marker = format!("89{i}{}", std::process::id() % 1000);
        fx.fake
            .push(Reply::tool_call(
                "shell",
                json!({"command": format!("timeout 60 sleep {marker}")}),
            ))
            .push(Reply::text("done"));
        let out = run_bounded(fx.cmd(&["run", "--allow-shell", "wait"]), "");
        assert_eq!(out.status.code(), Some(0), "{backend}: {}", stderr(&out));
        let result = fx.agent_requests().last().unwrap().tool_results();
        assert_eq!(result, ["timed out after 1s\n"], "{backend}");
        assert_all_gone(&marker, backend);
    }
}

#[test]
fn a_job_start_over_the_cap_is_cut_once_keeping_the_newest_output_and_the_exit_line() {
    let fx = project("output_cap_bytes = 2048\n");
    fx.fake
        .push(bg(
            "head -c 20000 /dev/zero | tr '\\0' a; echo; echo NEWEST-LINE",
        ))
        .push(Reply::text("done"));
    let out = run_bounded(fx.cmd(&["run", "--allow-shell", "start it"]), "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = fx.agent_requests().last().unwrap().tool_results()[0].clone();
    assert!(result.starts_with("job 1 started: "), "{result}");
    assert!(
        result.contains("bytes left out (over tools.output_cap_bytes)"),
        "{result}"
    );
    assert!(result.contains("NEWEST-LINE"), "{result}");
    assert!(
        result.ends_with("[job 1 exited 0 within its first second]\n"),
        "{result}"
    );
    assert!(
        !result.contains("[output cut"),
        "cut a second time: {result}"
    );
}

#[test]
fn kill_9_of_eonyx_during_a_foreground_command_leaves_nothing_on_every_backend() {
    for (i, (backend, tools)) in BACKENDS.iter().enumerate() {
        let fx = project(tools);
        let marker = format!("90{i}{}", std::process::id() % 1000);
        fx.fake
            .push(Reply::tool_call(
                "shell",
                json!({"command": format!("set -m; sleep {marker} & sleep {marker}")}),
            ))
            .push(Reply::text("done"));
        let mut child = fx
            .cmd(&["run", "--allow-shell", "wait"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(
            &format!("{backend}: both sleeps"),
            Duration::from_secs(30),
            || {
                pids_with(&marker)
                    .iter()
                    .filter(|pid| {
                        std::fs::read(format!("/proc/{pid}/cmdline"))
                            .is_ok_and(|c| c.starts_with(b"sleep\0"))
                    })
                    .count()
                    == 2
            },
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert_all_gone(&marker, &format!("{backend}, after kill -9 of eonyx"));
    }
}
