//! Background jobs in the shell sandbox through the real binary, for each
//! backend: a job's server answers the session's later commands and jobs
//! and nothing else, and `job_stop` ends a confined job by SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::code;
use crate::sandbox::{BACKENDS, project, python};
use crate::util::{json_lines, spawn_with_stdin, stderr};

/// Fetches `http://127.0.0.1:PORT/` up to TRIES times, 0.2 s apart:
/// `status 200`, or `unreachable: <why>` and exit 1.
const FETCH_PY: &str = r#"import sys, time, urllib.request
port, tries = sys.argv[1], int(sys.argv[2])
err = None
for _ in range(tries):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            print("status", r.status)
            sys.exit(0)
    except OSError as e:
        err = e
        time.sleep(0.2)
print("unreachable:", err)
sys.exit(1)
"#;

/// A loopback port free on the host now (the session's namespace has its
/// own ports; the host's is checked for a server that must not be there).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_job_server_answers_the_sessions_later_commands_and_jobs_and_nothing_else_for_each_backend() {
    for backend in BACKENDS {
        let port = free_port();
        let py = python();
        let a = project(backend, "");
        let b = project(backend, "");
        for fx in [&a, &b] {
            fx.sb.write("work/fetch.py", FETCH_PY);
        }
        let fetch = |tries: u32| format!("{py} fetch.py {port} {tries}");
        a.fake.push_all([
            Reply::tool_call(
                "shell",
                json!({"command": format!("{py} -m http.server {port} --bind 127.0.0.1"), "background": true}),
            ),
            Reply::tool_call("shell", json!({"command": fetch(150)})),
            Reply::tool_call("shell", json!({"command": fetch(150), "background": true})),
            Reply::tool_call("job_output", json!({"id": 2, "wait_s": 60})),
            // Holds the server up while another session tries it.
            Reply::tool_call(
                "shell",
                json!({"command": "touch a-ready; while [ ! -e b-done ]; do sleep 0.1; done; echo held"}),
            ),
            Reply::text("done"),
        ]);
        let mut session_a = spawn_with_stdin(&mut a.cmd(&["--allow-shell"]), "serve it\n");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        while !a.sb.work.join("a-ready").exists() {
            if std::time::Instant::now() > deadline || matches!(session_a.try_wait(), Ok(Some(_))) {
                let _ = session_a.kill();
                let o = session_a.wait_with_output().unwrap();
                panic!(
                    "{backend}: session A never got to hold the server: {}",
                    stderr(&o)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // Another session, confined the same way, does not reach it; nor
        // does anything on the host.
        b.fake.push_all([
            Reply::tool_call("shell", json!({"command": fetch(5)})),
            Reply::text("done"),
        ]);
        let o = b.run(&["--allow-shell"], "try it\n");
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        let from_b = b.agent_requests().last().unwrap().tool_results();
        let host = std::net::TcpStream::connect(("127.0.0.1", port));
        std::fs::write(a.sb.work.join("b-done"), "").unwrap();
        let o = session_a.wait_with_output().unwrap();
        assert_eq!(code(&o), Some(0), "{backend}: {}", stderr(&o));
        let results = a.agent_requests().last().unwrap().tool_results();
        assert_eq!(results.len(), 5, "{backend}: {results:#?}");
        assert!(
            results[0].starts_with("job 1 started"),
            "{backend}: {results:#?}"
        );
        assert!(
            results[1].starts_with("exit status: 0\nstatus 200"),
            "{backend}: a later command: {results:#?}"
        );
        assert!(
            format!("{}{}", results[2], results[3]).contains("status 200"),
            "{backend}: a later job: {results:#?}"
        );
        assert!(results[4].ends_with("held\n"), "{backend}: {results:#?}");
        assert!(
            from_b[0].contains("unreachable"),
            "{backend}: another session reached it: {from_b:#?}"
        );
        assert!(
            host.is_err(),
            "{backend}: the host reached the session's server"
        );
    }
}

/// `job_stop` ends a job that does not trap SIGTERM by SIGTERM, not by the
/// SIGKILL 2 s later, and a job that traps it gets to run its trap, for
/// each backend, with the network on (bwrap alone) and off (bwrap through
/// `sandbox-net join`). The keeper used to hand its blocked SIGTERM down
/// to the command, and bwrap, unlike `sh`, keeps the mask it is given: it
/// sat out every SIGTERM; and killing bwrap ends its PID namespace by
/// SIGKILL, so under bubblewrap the SIGTERM goes to the program inside.
#[test]
fn job_stop_ends_a_job_by_sigterm_and_lets_a_trap_run_for_each_backend() {
    for backend in BACKENDS {
        for network in [false, true] {
            let what = format!("{backend}, network {network}");
            let fx = project(backend, &format!("sandbox_network = {network}\n"));
            fx.fake.push_all([
                Reply::tool_call(
                    "shell",
                    json!({"command": "sleep 9879101", "background": true}),
                ),
                Reply::tool_call("job_stop", json!({"id": 1})),
                Reply::tool_call(
                    "shell",
                    json!({"command": "trap 'echo bye > stopped.txt; exit 0' TERM; sleep 9879102 & wait", "background": true}),
                ),
                Reply::tool_call("job_stop", json!({"id": 2})),
                Reply::text("done"),
            ]);
            let o = fx.run(&["--allow-shell", "--json"], "start and stop them\n");
            assert_eq!(code(&o), Some(0), "{what}: {}", stderr(&o));
            let results = fx.agent_requests().last().unwrap().tool_results();
            assert_eq!(results.len(), 4, "{what}: {results:#?}");
            assert!(
                results[0].starts_with("job 1 started: sleep 9879101"),
                "{what}: {results:#?}"
            );
            assert!(
                results[1].starts_with("job 1 killed by SIGTERM after "),
                "{what}: {results:#?}"
            );
            assert!(
                results[3].starts_with("job 2 exited 0 after "),
                "{what}: {results:#?}"
            );
            assert_eq!(
                std::fs::read_to_string(fx.sb.work.join("stopped.txt")).unwrap_or_default(),
                "bye\n",
                "{what}: the trap did not run: {results:#?}"
            );
            let exited: Vec<Value> = json_lines(&o.stdout)
                .into_iter()
                .filter(|e| e["type"] == "job_exited")
                .map(|e| e["status"].clone())
                .collect();
            assert_eq!(
                exited,
                [json!("killed by SIGTERM"), json!("exited 0")],
                "{what}"
            );
        }
    }
}
