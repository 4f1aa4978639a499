//! `"notify": true` on a background `shell` call (docs/tools.md#jobs): in
//! the REPL (a real terminal, tmux) the job's exit starts a turn by itself
//! while the prompt waits with nothing typed; with text typed nothing
//! starts until Enter and the text is kept; batch runs and `run` never
//! start one (the notice goes with the next request).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::json;

use crate::agent::*;
use crate::agent_repl::{Tmux, start_repl};
use crate::repl::{idle, type_text};
use crate::util::stderr;

/// A job that runs until the test creates `go.flag` in the work dir (so it
/// outlives the turn that started it, however slow the machine).
const WAITS: &str = "until [ -e go.flag ]; do sleep 0.1; done; echo done";

fn release(fx: &Fx) {
    std::fs::write(fx.sb.work.join("go.flag"), "").unwrap();
}

fn bg_notify(command: &str) -> Reply {
    Reply::tool_call(
        "shell",
        json!({"command": command, "background": true, "notify": true}),
    )
}

/// The texts of a request's user messages, in order.
fn user_texts(r: &RecordedRequest) -> Vec<String> {
    r.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content)
        .collect()
}

fn is_notice(text: &str, command: &str) -> bool {
    text.starts_with("[job 1 exited 0 after ")
        && text.ends_with(&format!(
            " s: {command} — a notice from eonyx, not user input]"
        ))
}

/// The REPL in tmux with `flags`, waiting at its first prompt; its exit
/// status is printed as `EONYX_EXIT=N`.
fn repl(fx: &Fx, flags: &str) -> Tmux {
    let tmux = start_repl(fx, |env, bin| {
        format!("{env} '{bin}' --new {flags}; echo EONYX_EXIT=$?; sleep 60")
    });
    idle(&tmux, "the prompt");
    tmux
}

/// "start the job": the model's first reply starts it and it says so; back
/// at the prompt.
fn start_the_job(tmux: &Tmux) {
    tmux.send_until("start the job", "the first answer", "started it", 2);
    idle(tmux, "the prompt after the first answer");
}

/// `/exit` at the prompt ends the REPL with 0.
fn exit_ok(tmux: &Tmux, after: &str) {
    idle(tmux, after);
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

#[test]
fn a_notify_job_that_exits_while_the_prompt_waits_starts_a_turn_by_itself() {
    let fx = Fx::replying([
        bg_notify(WAITS),
        Reply::text("started it"),
        Reply::text("the job is done"),
        Reply::text("second answer"),
    ]);
    let tmux = repl(&fx, "--allow-shell");
    start_the_job(&tmux);
    release(&fx);
    // No key pressed: the exit starts the turn.
    let pane = tmux.wait_pane("the turn the exit started", |p| {
        p.contains("the job is done")
    });
    assert!(
        pane.lines()
            .any(|l| l.contains("[job 1 exited 0 after ") && l.contains("not user input]")),
        "the notice is shown as the turn's input:\n{pane}"
    );
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 3, "{pane}");
    let last = reqs[2].messages().last().cloned().unwrap();
    assert_eq!(last["role"], "user");
    assert!(is_notice(&content(&last), WAITS), "{}", content(&last));
    // The REPL goes on as usual.
    idle(&tmux, "the prompt after the notice's turn");
    tmux.send("and now?");
    tmux.wait_pane("the second answer", |p| p.contains("second answer"));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(user_texts(&reqs[3]).last().unwrap(), "and now?");
    // The notice went once.
    let notices = user_texts(&reqs[3])
        .iter()
        .filter(|t| t.contains("a notice from eonyx"))
        .count();
    assert_eq!(notices, 1);
    exit_ok(&tmux, "the prompt after the second answer");
}

#[test]
fn with_text_typed_a_notify_exit_waits_for_enter_and_the_text_is_kept() {
    let fx = Fx::replying([
        bg_notify(WAITS),
        Reply::text("started it"),
        Reply::text("answered the typed text"),
    ]);
    let tmux = repl(&fx, "--allow-shell");
    start_the_job(&tmux);
    type_text(&tmux, "half typed");
    tmux.wait_pane("the typed text", |p| p.contains("half typed"));
    release(&fx);
    tmux.wait_pane("the exit's line", |p| p.contains("job 1 exited 0 after "));
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the answer", |p| p.contains("answered the typed text"));
    // One turn, the typed one, with the notice before the text.
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 3);
    let users = user_texts(&reqs[2]);
    assert_eq!(users.last().unwrap(), "half typed", "{users:?}");
    assert!(is_notice(&users[users.len() - 2], WAITS), "{users:?}");
    exit_ok(&tmux, "the prompt after the answer");
    assert_eq!(fx.agent_requests().len(), 3);
}

#[test]
fn a_batch_and_run_never_start_a_turn_for_a_notify_exit() {
    // Batch: the job ends while the batch waits for its next line. The
    // next line's turn runs a foreground command, so the exit is recorded
    // (up to half a second after the process ends) before its last request.
    let command = format!("{WAITS}; touch ended.flag");
    let fx = Fx::replying([
        bg_notify(&command),
        Reply::text("started it"),
        Reply::tool_call("shell", json!({"command": "sleep 2"})),
        Reply::text("answered next"),
    ]);
    let mut run = eonyx_tests::Paced::spawn(&mut fx.cmd(&["--json", "--allow-shell"])).unwrap();
    run.send("start the job").unwrap();
    run.wait_for(|e| e["type"] == "turn_completed").unwrap();
    release(&fx);
    let flag = fx.sb.work.join("ended.flag");
    wait_for("the job's end", std::time::Duration::from_secs(20), || {
        flag.exists()
    });
    run.send("next").unwrap();
    let (status, err, _) = run.finish().unwrap();
    assert!(status.success(), "{err}");
    // No turn of its own: the two lines' requests only, the notice in the
    // second line's turn, once.
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(user_texts(&reqs[2]).last().unwrap(), "next");
    let users = user_texts(&reqs[3]);
    let notices: Vec<&String> = users.iter().filter(|t| is_notice(t, &command)).collect();
    assert_eq!(notices.len(), 1, "{users:?}");

    // `run`: the job ends during the turn; its notice goes with the next
    // request and no turn follows the run's one.
    let fx = Fx::replying([
        bg_notify("sleep 2; echo done"),
        Reply::tool_call("shell", json!({"command": "sleep 4"})),
        Reply::text("all done"),
    ]);
    let o = fx.run(&["--allow-shell", "run", "start it"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 3);
    let last = reqs[2].messages().last().cloned().unwrap();
    assert!(
        is_notice(&content(&last), "sleep 2; echo done"),
        "{}",
        content(&last)
    );
}

/// A Ctrl-C during a turn leaves a SIGINT byte in the line editor's signal
/// pipe: a resize at a later prompt must not take it as the user's Ctrl-C
/// (which exits), and a notify exit still starts its turn.
#[test]
fn after_ctrl_c_in_a_turn_a_resize_keeps_the_text_and_a_notify_exit_still_starts_a_turn() {
    let fx = Fx::replying([
        Reply::tool_call("shell", json!({"command": "sleep 30"})),
        bg_notify(WAITS),
        Reply::text("started it"),
        Reply::text("saw the end"),
    ]);
    let tmux = repl(&fx, "--allow-shell");
    tmux.send("wait a while");
    tmux.wait_pane("the command", |p| p.contains("sleep 30"));
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the interrupt", |p| p.contains("interrupted"));
    idle(&tmux, "the prompt after the interrupt");
    tmux.send("start the job");
    tmux.wait_pane("the job's start", |p| p.contains("started it"));
    idle(&tmux, "the prompt after the start");
    type_text(&tmux, "hello");
    tmux.wait_pane("the typed text", |p| p.contains("> hello"));
    for x in ["150", "200"] {
        let st = tmux
            .cmd()
            .args(["resize-window", "-t", "repl", "-x", x, "-y", "50"])
            .status()
            .unwrap();
        assert!(st.success());
    }
    // Still reading, the text kept: one more letter lands after it.
    type_text(&tmux, "!");
    tmux.wait_pane("the text after the resize", |p| p.contains("> hello!"));
    tmux.keys(&["C-u"]);
    idle(&tmux, "the cleared prompt");
    release(&fx);
    tmux.wait_pane("the turn the exit started", |p| p.contains("saw the end"));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 4);
    let users = user_texts(&reqs[3]);
    assert!(is_notice(users.last().unwrap(), WAITS), "{users:?}");
    exit_ok(&tmux, "the prompt after the notice's turn");
}

/// An exit while an approval question waits does not end the question: the
/// notice goes in that turn's next request, and no turn follows by itself.
#[test]
fn a_notify_exit_during_an_approval_question_waits_and_goes_in_the_turn() {
    let fx = Fx::replying([
        bg_notify(&format!("{WAITS}; touch ended.flag")),
        Reply::text("started it"),
        Reply::tool_call("shell", json!({"command": "touch asked.txt"})),
        Reply::text("touched it"),
        Reply::text("bye then"),
    ]);
    let tmux = repl(&fx, "");
    tmux.send("start the job");
    tmux.wait_pane("the first question", |p| p.matches("[a]lways").count() == 1);
    tmux.send("y");
    tmux.wait_pane("the first answer", |p| p.contains("started it"));
    idle(&tmux, "the prompt after the start");
    tmux.send("touch it");
    tmux.wait_pane("the second question", |p| {
        p.matches("[a]lways").count() == 2
    });
    release(&fx);
    let flag = fx.sb.work.join("ended.flag");
    wait_for("the job's end", std::time::Duration::from_secs(20), || {
        flag.exists()
    });
    // The question still waits for its answer.
    tmux.send("y");
    tmux.wait_pane("the answer", |p| p.contains("touched it"));
    assert!(fx.sb.work.join("asked.txt").exists());
    idle(&tmux, "the prompt after the answer");
    tmux.send("bye");
    tmux.wait_pane("the last answer", |p| p.contains("bye then"));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 5);
    // The notice is in the request after the answered call, or in the next
    // user turn's (when the keeper saw the exit only after that call).
    let with_notice: Vec<usize> = (0..reqs.len())
        .filter(|&i| {
            user_texts(&reqs[i])
                .iter()
                .any(|t| t.contains("a notice from eonyx"))
        })
        .collect();
    assert!(
        with_notice.first().is_some_and(|&i| i == 3 || i == 4),
        "{with_notice:?}"
    );
    assert_eq!(user_texts(&reqs[4]).last().unwrap(), "bye");
    exit_ok(&tmux, "the prompt after the last answer");
}
