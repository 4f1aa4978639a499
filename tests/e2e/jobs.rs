//! Background jobs (docs/tools.md#jobs) through the binary against the fake
//! server: a start returns while the command runs, reads are disjoint and
//! `wait_s` wakes on the exit, nothing of a job outlives `job_stop`,
//! eonyx's exit or `kill -9`, running jobs survive compactions by a
//! summarizer that keeps nothing, and an unseen exit is a notice appended
//! after the earlier messages, which stay byte-identical.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::Path;
use std::time::{Duration, Instant};

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{json_lines, spawn_piped, spawn_with_stdin, stderr};

fn bg(command: &str) -> Reply {
    Reply::tool_call("shell", json!({"command": command, "background": true}))
}

/// One reply starting each of `commands` as a background job.
fn bgs(commands: &[&str]) -> Reply {
    Reply::tool_calls(
        commands
            .iter()
            .map(|c| ("shell", json!({"command": c, "background": true}))),
    )
}

fn output(id: u32, wait_s: u64) -> Reply {
    Reply::tool_call("job_output", json!({"id": id, "wait_s": wait_s}))
}

fn stop(id: u32) -> Reply {
    Reply::tool_call("job_stop", json!({"id": id}))
}

/// The last message of a request: the result of the call before it.
fn last_result(r: &RecordedRequest) -> String {
    content(r.messages().last().unwrap())
}

/// `text` starts with `start` and ends with `end`.
fn assert_edges(text: &str, start: &str, end: &str) {
    assert!(text.starts_with(start), "{text}");
    assert!(text.ends_with(end), "{text}");
}

/// Every process's pid and its command line (NUL-separated arguments).
fn cmdlines() -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        out.push((pid, cmdline));
    }
    out
}

/// Pids of the `sleep` processes whose argument starts with `marker` (the
/// jobs' grandchildren, recorded by their unique argument).
fn sleeps(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (pid, cmdline) in cmdlines() {
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.len() >= 2 && args[0].ends_with("sleep") && args[1].starts_with(marker) {
            out.push(pid);
        }
    }
    out
}

/// Pids of the processes whose command line holds `marker` (the keeper,
/// the shell and its grandchildren).
pub(crate) fn pids_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (pid, cmdline) in cmdlines() {
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // A zombie has an empty command line; it is gone but for its entry.
        if cmdline.contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// Waits (bounded) until no process holds `marker`; fails naming them.
pub(crate) fn assert_all_gone(marker: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = pids_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: processes of the job are left: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (bounded) until `n` `sleep`s with `marker` run; their pids.
fn wait_for(marker: &str, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = sleeps(marker);
        if found.len() >= n {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "the job never started `{marker}`: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn job_records(session: &Path) -> Vec<Value> {
    records(session)
        .into_iter()
        .filter(|r| r["type"] == "job")
        .collect()
}

#[test]
fn a_start_returns_while_the_job_runs_reads_are_disjoint_and_wait_s_wakes_on_the_exit() {
    let fx = Fx::new();
    fx.fake.push_all([
        bg("echo one; sleep 2; echo two; exec sleep 20"),
        output(1, 30),
        bg("sleep 2; exit 3"),
        output(2, 60),
        output(1, 0),
        stop(1),
        Reply::text("done"),
    ]);
    let o = fx.run(&["--allow-shell", "--json"], "run them\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 7, "{}", stderr(&o));

    // The start came back with its first second, before `two` was printed.
    let started = last_result(&reqs[1]);
    assert_eq!(
        started,
        "job 1 started: echo one; sleep 2; echo two; exec sleep 20\none\n"
    );
    // The start and end of each later result.
    for (i, start, end) in [
        // The next read has only what is new.
        (
            2,
            "job 1 running for ",
            " s: echo one; sleep 2; echo two; exec sleep 20\ntwo\n",
        ),
        // wait_s returned at job 2's exit, while job 1 (20 s) still ran.
        (4, "job 2 exited 3 after ", ""),
        (5, "job 1 running for ", "exec sleep 20\n(no new output)\n"),
        // (SIGTERM, or SIGKILL 2 s later on a machine too loaded to let it end.)
        (6, "job 1 killed by SIG", ""),
    ] {
        assert_edges(&last_result(&reqs[i]), start, end);
    }
    // Exits the model saw get no notice.
    for r in &reqs {
        assert!(
            !r.all_text().contains("a notice from eonyx"),
            "{}",
            r.all_text()
        );
    }

    // The session file says what started and how it ended.
    let jobs = job_records(&fx.session());
    let brief: Vec<(u64, &str, Option<&str>)> = jobs
        .iter()
        .map(|j| {
            (
                j["id"].as_u64().unwrap(),
                j["event"].as_str().unwrap(),
                j["status"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        brief,
        [
            (1, "started", None),
            (2, "started", None),
            (2, "exited", Some("exited 3")),
            (1, "exited", jobs[3]["status"].as_str()),
        ]
    );
    assert!(
        jobs[3]["status"]
            .as_str()
            .unwrap()
            .starts_with("killed by SIG")
    );
    // --json events.
    let events = json_lines(&o.stdout);
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| t.starts_with("job_"))
        .collect();
    assert_eq!(
        kinds,
        ["job_started", "job_started", "job_exited", "job_exited"]
    );
    // The whole output is in the log, private to the user.
    let log = events.iter().find(|e| e["type"] == "job_started").unwrap()["log"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(log.ends_with("/1.log"), "{log}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&log).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // `sessions delete` takes the logs with the session.
    let id = session_id_of(&fx.session());
    let o = fx.run(&["sessions", "delete", &id], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!Path::new(&log).exists(), "{log} outlived its session");
}

#[test]
fn job_stop_and_the_end_of_the_batch_leave_no_process_grandchildren_included() {
    let fx = Fx::new();
    // Each job starts a grandchild in the background and waits.
    fx.fake.push_all([
        bg("sleep 9873101 & sleep 9873102 & wait"),
        bg("sleep 9873201 & sleep 9873202; wait"),
        stop(1),
        Reply::text("one left running"),
    ]);
    let mut child = spawn_with_stdin(&mut fx.cmd(&["--allow-shell"]), "start both\n");
    // (The batch ends when stdin ends: after the input above.) Both jobs'
    // grandchildren are seen running before it ends.
    let mut seen = [false, false];
    let mut status = None;
    crate::agent::wait_for("eonyx's end", Duration::from_secs(60), || {
        for (i, m) in ["987310", "987320"].iter().enumerate() {
            seen[i] |= sleeps(m).len() == 2;
        }
        status = child.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success());
    assert_eq!(seen, [true, true]);
    let err = {
        let mut s = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut s).unwrap();
        s
    };
    assert_all_gone("987310", "after job_stop");
    assert_all_gone("987320", "after eonyx's normal exit");
    assert!(
        err.contains("stopped background job 2 (sleep 9873201 & sleep 9873202; wait)"),
        "{err}"
    );
    let jobs = job_records(&fx.session());
    assert_eq!(jobs.last().unwrap()["id"], 2);
    assert!(
        jobs.last().unwrap()["status"]
            .as_str()
            .unwrap()
            .starts_with("killed by SIG")
    );
}

#[test]
fn kill_9_of_eonyx_takes_its_jobs_and_their_grandchildren() {
    let fx = Fx::new();
    fx.fake.push_all([
        bg("sleep 9874101 & sleep 9874102 & wait"),
        Reply::text("running"),
    ]);
    // stdin stays open: eonyx waits for the next line when it is killed.
    let (mut child, mut stdin) = spawn_piped(&mut fx.cmd(&["--allow-shell"]));
    std::io::Write::write_all(&mut stdin, b"start it\n").unwrap();
    let pids = wait_for("987410", 2);
    assert_eq!(pids.len(), 2, "{pids:?}");
    // The turn is over (the answer came back) before the kill.
    crate::agent::wait_for("the turn's end", Duration::from_secs(30), || {
        fx.agent_requests().len() >= 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert_all_gone("987410", "after kill -9 of eonyx");

    // Resumed, the session says the job ended with that process.
    fx.fake.push(Reply::text("ok"));
    let o = fx.run(&["-c", "--allow-shell"], "and now?\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "job 1 (sleep 9874101 & sleep 9874102 & wait) ended with the earlier eonyx process"
        ),
        "{}",
        stderr(&o)
    );
    let last = fx.agent_requests().pop().unwrap();
    assert!(
        last.all_text()
            .contains("[job 1 ended with the earlier eonyx process: sleep 9874101"),
        "{}",
        last.all_text()
    );
}

#[test]
fn a_running_job_is_in_every_request_after_two_compactions_by_a_summarizer_that_keeps_nothing() {
    let fx = Fx::with(|c| c.merge_model_toml("compaction.keep_turns = 1").unwrap());
    fx.fake.set_forgetful_summarizer();
    fx.fake
        .push_all([bg("sleep 9875101"), Reply::text("started")]);
    let input = "start the server\nsecond\n/compact\nthird\n/compact\nwhere are we?\n";
    let o = fx.run(&["--allow-shell", "--json"], input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let compactions = json_lines(&o.stdout)
        .into_iter()
        .filter(|e| e["type"] == "compaction")
        .count();
    assert_eq!(compactions, 2, "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 5, "{}", stderr(&o));
    for r in &reqs[1..] {
        assert!(r.all_text().contains("sleep 9875101"), "{}", r.all_text());
    }
    let last = reqs.last().unwrap();
    let system = last.system_text();
    assert!(
        system.contains("## Background jobs running at this compaction (kept verbatim by eonyx)\n- job 1: sleep 9875101 (started "),
        "{system}"
    );
    // No message holds it any more: only the pinned section does.
    let messages = last.non_system_json();
    assert!(!messages.contains("sleep 9875101"), "{messages}");
    assert_all_gone("9875101", "after the batch");
}

#[test]
fn an_unseen_exit_is_a_notice_appended_after_earlier_messages_that_stay_byte_identical() {
    let fx = Fx::new();
    fx.fake.push_all([
        bg("sleep 3; echo finished"),
        // A foreground command that outlasts the job.
        Reply::tool_call("shell", json!({"command": "sleep 6"})),
        Reply::text("saw it"),
    ]);
    let o = fx.run(&["--allow-shell"], "go\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 3);
    let before = reqs[1].messages();
    let after = reqs[2].messages();
    // Every message of the earlier request is sent again unchanged.
    assert_eq!(&after[..before.len()], &before[..]);
    // Then the foreground result, then the notice.
    assert_eq!(after.len(), before.len() + 3, "{after:#?}");
    assert_eq!(after[before.len() + 1]["role"], "tool");
    let notice = &after[before.len() + 2];
    assert_eq!(notice["role"], "user");
    let text = content(notice);
    assert!(text.starts_with("[job 1 exited 0 after "), "{text}");
    assert!(
        text.ends_with(" s: sleep 3; echo finished — a notice from eonyx, not user input]"),
        "{text}"
    );
}

#[test]
fn max_jobs_refuses_one_more_naming_the_running_ones_and_bad_input_is_an_error() {
    let fx = Fx::with(|c| c.merge_top_toml("[tools]\nmax_jobs = 1").unwrap());
    fx.fake.push_all([
        bg("sleep 9876101"),
        bg("sleep 9876102"),
        output(7, 0),
        Reply::tool_call("job_output", json!({"id": 1, "wait_s": 90})),
        stop(1),
        bg("sleep 9876103"),
        Reply::text("done"),
    ]);
    let o = fx.run(&["--allow-shell"], "go\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(
        last_result(&reqs[2]),
        "not started: 1 jobs are running, the most tools.max_jobs allows: job 1 (sleep 9876101); stop one with job_stop first"
    );
    let unknown = last_result(&reqs[3]);
    assert!(
        unknown.starts_with("no job 7 in this session; its jobs: job 1 (running: sleep 9876101)"),
        "{unknown}"
    );
    assert_eq!(
        last_result(&reqs[4]),
        "invalid arguments for job_output: wait_s must be between 0 and 60 seconds, got 90"
    );
    // The refused start took no id.
    assert!(
        last_result(&reqs[6]).starts_with("job 2 started: sleep 9876103"),
        "{}",
        last_result(&reqs[6])
    );
    assert_all_gone("987610", "after the batch");
}

#[test]
fn slash_jobs_lists_and_stops_and_the_model_hears_of_the_stop() {
    let fx = Fx::new();
    fx.fake
        .push_all([bg("sleep 9877101"), Reply::text("started it")]);
    let o = fx.run(
        &["--allow-shell"],
        "start it\n/jobs\n/jobs stop 1\n/jobs stop 9\n/jobs\nwhat happened?\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let listed = err
        .lines()
        .find(|l| l.starts_with("job 1  running  "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(listed.contains("  sleep 9877101  "), "{listed}");
    assert!(listed.ends_with("/1.log"), "{listed}");
    assert!(err.contains("no job 9 in this session"), "{err}");
    assert!(
        err.lines().any(|l| l.starts_with("job 1  killed by SIG")),
        "{err}"
    );
    let last = fx.agent_requests().pop().unwrap();
    assert!(
        last.all_text().contains("[job 1 killed by SIG"),
        "{}",
        last.all_text()
    );
    assert_all_gone("9877101", "after /jobs stop");
}

/// Each `shell` result of the last request, in order.
fn shell_results(fx: &Fx) -> Vec<String> {
    let last = fx.chats().pop().unwrap();
    last.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(content)
        .collect()
}

#[test]
fn a_background_start_passes_the_same_permission_rules_as_a_foreground_one() {
    let with_rules = || {
        Fx::with(|c| {
            c.merge_top_toml(
                "[permissions]\nallow = [\"shell(sleep:*)\"]\ndeny = [\"shell(rm:*)\"]\n",
            )
            .unwrap()
        })
    };
    let fx = with_rules();
    fx.sb.write("work/keep.txt", "keep\n");
    // Without --allow-shell: the allow prefix starts a job; an unlisted
    // command, and the allowed prefix chained to another, do not.
    fx.fake.push_all([
        bgs(&[
            "sleep 98781011",
            "sleep 98781012 && touch made",
            "touch made",
        ]),
        Reply::text("done"),
    ]);
    let o = fx.run(&["run", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let results = shell_results(&fx);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].starts_with("job 1 started: sleep 98781011"),
        "{results:?}"
    );
    for r in &results[1..] {
        assert!(r.starts_with("denied"), "{results:?}");
        assert!(r.contains("--allow-shell"), "{results:?}");
    }
    assert!(!fx.sb.work.join("made").exists(), "{results:?}");
    let started: Vec<Value> = job_records(&fx.session())
        .into_iter()
        .filter(|r| r["event"] == "started")
        .collect();
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0]["command"], "sleep 98781011");
    assert_all_gone("98781011", "after the batch");

    // With --allow-shell: the deny rule still stops a background start,
    // alone or inside a compound line, and nothing of it runs.
    let fx = with_rules();
    fx.sb.write("work/keep.txt", "keep\n");
    fx.fake.push_all([
        bgs(&["rm keep.txt", "sleep 98781013; rm -f keep.txt"]),
        Reply::text("done"),
    ]);
    let o = fx.run(&["--allow-shell", "run", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let results = shell_results(&fx);
    assert_eq!(results.len(), 2, "{results:?}");
    for r in &results {
        assert!(
            r.starts_with("denied by the permission rule `shell(rm:*)`"),
            "{results:?}"
        );
    }
    assert!(fx.sb.work.join("keep.txt").exists(), "{results:?}");
    assert!(sleeps("98781013").is_empty());
    assert!(job_records(&fx.session()).is_empty());
}
