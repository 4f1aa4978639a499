//! Interruptions and failures through the real binary: Ctrl-C during a
//! reply and a shell command, a failed append, an unusable sessions dir,
//! exit codes for usage errors, a closed stdout.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::{Command, Stdio};
use std::time::Duration;

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::util::{stderr, stdout};

#[test]
fn sigint_during_a_slow_reply_exits_130_and_the_session_resumes() {
    let fx = Fx::with_notes("content\n");
    fx.fake
        .push(read_notes())
        .push(Reply::text("too late").with_delay(Duration::from_secs(8)));
    let child = fx
        .cmd(&["run", "read it slowly"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the second request", Duration::from_secs(20), || {
        fx.chats().len() == 2
    });
    let (o, took) = ctrl_c(child);
    assert_eq!(code(&o), Some(130), "{}", stderr(&o));
    assert!(
        took < Duration::from_secs(5),
        "Ctrl-C did not cancel the wait"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));

    let session = fx.session();
    assert_eq!(roles(&messages(&session)), ["user", "assistant", "tool"]);
    assert_consistent(&session);

    fx.fake.push(Reply::text("resumed fine"));
    let o = fx.run(&["run", "-c", "go on"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "resumed fine\n");
    let last = fx.chats().pop().unwrap();
    assert_eq!(last.roles(), ["user", "assistant", "tool", "user"]);
    assert_consistent(&session);
}

#[test]
fn sigint_during_a_shell_command_answers_the_call_and_resumes() {
    let fx = Fx::replying([
        Reply::tool_call(
            "shell",
            json!({"command": "sleep 20 && touch too_late.txt"}),
        ),
        Reply::text("unreachable"),
    ]);
    let child = fx
        .cmd(&["run", "--allow-shell", "sleep a while"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the tool call", Duration::from_secs(20), || {
        fx.session_files()
            .first()
            .is_some_and(|p| messages(p).len() >= 2)
    });
    std::thread::sleep(Duration::from_millis(300));
    let (o, took) = ctrl_c(child);
    assert_eq!(code(&o), Some(130), "{}", stderr(&o));
    assert!(
        took < Duration::from_secs(5),
        "Ctrl-C did not stop the shell"
    );
    assert_eq!(fx.chats().len(), 1, "no model call after the interrupt");

    let session = fx.session();
    let msgs = messages(&session);
    assert_eq!(roles(&msgs), ["user", "assistant", "tool"]);
    assert!(content(&msgs[2]).contains("interrupted"), "{}", msgs[2]);
    assert_consistent(&session);

    fx.fake.push(Reply::text("ok then"));
    let o = fx.run(&["run", "-c", "never mind"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let last = fx.chats().pop().unwrap();
    assert_eq!(last.roles(), ["user", "assistant", "tool", "user"]);
    assert!(!fx.sb.work.join("too_late.txt").exists());
}

/// Run eonyx with a file-size limit (RLIMIT_FSIZE: `ulimit -f`, in 512-byte
/// blocks for dash, 1024 for bash) and SIGXFSZ ignored, so writes past the
/// limit fail with EFBIG — a write failure that bites root too.
fn limited(fx: &Fx, blocks: u32, args: &[&str]) -> Command {
    let c = fx.sb.eonyx();
    let mut sh = Command::new("sh");
    sh.current_dir(&fx.sb.work);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_eonyx"))
        .args(args);
    sh
}

#[test]
fn a_failed_append_aborts_the_turn_before_any_further_model_call() {
    let fx = Fx::new();
    // A tool result too big for the file-size limit: the user message and
    // the tool call are saved, the result cannot be.
    fx.sb.write("work/big.txt", "x".repeat(40_000));
    fx.fake
        .push(Reply::tool_call("read_file", json!({"path": "big.txt"})))
        .push(Reply::text("must not be asked"));
    let o = run_with_stdin(limited(&fx, 32, &["run", "read big.txt"]), "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("cannot save to the session file"), "{err}");
    assert!(err.contains(".jsonl"), "the message names the file: {err}");
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert_eq!(
        fx.chats().len(),
        1,
        "a model call happened after the failed append"
    );
    // What was saved is intact; the unanswered call is answered on resume.
    let session = fx.session();
    assert_eq!(roles(&messages(&session)), ["user", "assistant"]);
    fx.fake.clear_requests();
    fx.fake.push(Reply::text("back"));
    let o = fx.run(&["run", "-c", "again"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_consistent(&session);
    assert_eq!(fx.chats()[0].roles(), ["user", "assistant", "tool", "user"]);

    // The first append of a turn failing (the file is already past the
    // limit): no model call at all, and the file is unchanged.
    fx.fake.clear_requests();
    let before = std::fs::read(&session).unwrap();
    let blocks = u32::try_from(before.len() / 1024)
        .unwrap()
        .saturating_sub(1)
        .max(1);
    let o = run_with_stdin(limited(&fx, blocks, &["run", "-c", "one more"]), "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot save to the session file"),
        "{}",
        stderr(&o)
    );
    assert!(fx.chats().is_empty(), "the model was asked past the disk");
    assert_eq!(std::fs::read(&session).unwrap(), before);
}

#[test]
fn an_unusable_sessions_dir_fails_with_a_clear_message_and_no_model_call() {
    let fx = Fx::new();
    // A file where the sessions directory should be.
    fx.sb.write("data/sessions", "not a directory");
    let o = fx.run(&[], "hello\n");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert!(err.contains("sessions"), "names the path: {err}");
    assert!(fx.chats().is_empty());
}

#[test]
fn exit_codes_for_usage_errors_and_a_closed_stdout_is_quiet() {
    let fx = Fx::new();
    let o = fx.run(&["--no-such-flag"], "");
    assert_eq!(code(&o), Some(2));
    let o = fx.run(&["-c", "-s", "20200101T000000-00000000"], "x\n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    // Batch -c with no session: a usage error, nothing sent.
    let o = fx.run(&["-c"], "x\n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(fx.chats().is_empty());

    // A provider that is down: a runtime failure.
    let down = Fx::with(|c| c.set("base_url", "http://127.0.0.1:9/v1"));
    let o = down.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(!stderr(&o).is_empty());

    // Closed stdout (`eonyx ... | head -0`): exits quietly.
    for _ in 0..3 {
        fx.fake.push(Reply::text("a".repeat(100)));
        assert_eq!(code(&fx.run(&["run", "make a session"], "")), Some(0));
    }
    for args in [&["sessions"][..], &["run", "another answer"][..]] {
        fx.fake.push(Reply::text("answer ".repeat(20_000)));
        let mut child = fx
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = wait_output(child, Duration::from_secs(30));
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            !err.to_lowercase().contains("broken pipe") && !err.contains("error"),
            "{args:?}: {err}"
        );
    }
}
