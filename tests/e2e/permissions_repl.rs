//! `p` (always in this project) in the REPL (tmux): the rule saved under
//! the data dir (never in the repository), a new REPL and a batch run
//! following it, `eonyx permissions forget` bringing the question back,
//! and no `p` for a compound line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Command;

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::agent_repl::{prompt_count, start_new_repl};
use crate::util::{stderr, stdout};

fn git_status(fx: &Fx) -> String {
    let o = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(&fx.sb.work)
        .output()
        .unwrap();
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The last tool result the model received.
fn last_tool_result(fx: &Fx) -> String {
    let chats = fx.chats();
    let msgs = chats.last().unwrap().messages();
    content(msgs.iter().rev().find(|m| m["role"] == "tool").unwrap())
}

fn shell(command: &str) -> Reply {
    Reply::tool_call("shell", json!({ "command": command }))
}

#[test]
fn p_saves_a_project_rule_in_the_data_dir_that_later_sessions_follow_until_forgotten() {
    let fx = Fx::new();
    let st = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&fx.sb.work)
        .status()
        .unwrap();
    assert!(st.success());
    let before = git_status(&fx);

    fx.fake
        .push(shell("echo one && echo two"))
        .push(Reply::text("compound refused"))
        .push(shell("echo hello world"))
        .push(Reply::text("said hello"));
    let tmux = start_new_repl(&fx);

    // A compound line: no `p`.
    tmux.send("run two things");
    let pane = tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 1);
    assert!(!pane.contains("[p]roject"), "{pane}");
    tmux.send_until("n", "the answer", "compound refused", 2);

    tmux.send("say hello");
    let pane = tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 2);
    assert!(
        pane.contains("[p]roject: always here (shell(echo hello:*))"),
        "{pane}"
    );
    tmux.send("p");
    let pane = tmux.wait_pane("the answer", |p| {
        p.contains("said hello") && prompt_count(p) >= 3
    });
    assert!(
        pane.contains("saved the permission rule allow `shell(echo hello:*)`"),
        "{pane}"
    );
    assert!(last_tool_result(&fx).contains("hello world"));
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    drop(tmux);

    // Saved under the data dir, the repository untouched.
    let dir = fx.sb.data.join("permissions");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    assert!(saved.contains("\"shell(echo hello:*)\""), "{saved}");
    assert_eq!(git_status(&fx), before);

    // A new REPL runs it without asking.
    fx.fake
        .push(shell("echo hello again"))
        .push(Reply::text("said it again"));
    let tmux = start_new_repl(&fx);
    tmux.send("say hello again");
    let pane = tmux.wait_pane("the answer", |p| {
        p.contains("said it again") && prompt_count(p) >= 2
    });
    assert!(!pane.contains("[a]lways"), "{pane}");
    assert!(last_tool_result(&fx).contains("hello again"));
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    drop(tmux);

    // So does a batch run, without --allow-shell.
    fx.fake
        .push(shell("echo hello batch"))
        .push(Reply::text("batch done"));
    let o = fx.run(&["run", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(last_tool_result(&fx).contains("hello batch"));

    // Listed as saved; forgetting it brings the question back.
    let o = fx.run(&["permissions"], "");
    assert!(stdout(&o).contains("shell(echo hello:*)"), "{}", stdout(&o));
    assert!(stdout(&o).contains("(saved)"), "{}", stdout(&o));
    let o = fx.run(&["permissions", "forget", "1"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("forgot rule 1"), "{}", stderr(&o));

    fx.fake
        .push(shell("echo hello once more"))
        .push(Reply::text("asked again"));
    let tmux = start_new_repl(&fx);
    tmux.send("say hello once more");
    tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 1);
    tmux.send_until("y", "the answer", "asked again", 2);
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_eq!(git_status(&fx), before);
}

#[test]
fn an_ask_rule_is_asked_every_time_whatever_always_answered() {
    let fx = Fx::with(|c| {
        c.merge_top_toml("[permissions]\nask = [\"shell(touch asked:*)\"]\n")
            .unwrap()
    });
    fx.fake
        .push(shell("echo first"))
        .push(Reply::text("first done"))
        .push(shell("touch asked"))
        .push(Reply::text("second done"));
    let tmux = start_new_repl(&fx);

    // "always" for shell commands, this session.
    tmux.send("first");
    tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 1);
    tmux.send_until("a", "the answer", "first done", 2);
    assert!(last_tool_result(&fx).contains("first"));

    // The ask rule's command is asked all the same, yes or no only.
    tmux.send("second");
    let pane = tmux.wait_pane("the rule's question", |p| {
        p.contains("a permission rule asks every time")
    });
    assert!(pane.contains("touch asked"), "{pane}");
    // `a` is no answer to it: asked again.
    tmux.send("a");
    tmux.wait_pane("the question again", |p| {
        p.matches("a permission rule asks every time").count() == 2
    });
    tmux.send_until("n", "the answer", "second done", 3);
    assert!(!fx.sb.work.join("asked").exists());
    assert!(
        last_tool_result(&fx).contains("denied"),
        "{}",
        last_tool_result(&fx)
    );

    // `/permissions` lists the rule here too.
    tmux.send("/permissions");
    let pane = tmux.wait_pane("the list", |p| p.contains("#  LIST"));
    assert!(pane.contains("ask   shell(touch asked:*)"), "{pane}");
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

/// The probe's forged question: a command that ends by erasing its line
/// (`ESC[2K`, carriage return) and printing a harmless question over it.
/// The screen shows the escapes and the whole command, and `n` runs
/// nothing.
#[test]
fn the_question_shows_hidden_characters_escaped_and_the_whole_command() {
    let fx = Fx::new();
    let forged = format!(
        "npm test{}; touch forged.txt #\u{1b}[2K\rallow: run shell command: npm test",
        " ".repeat(130)
    );
    fx.fake.push(shell(&forged)).push(Reply::text("not run"));
    let tmux = start_new_repl(&fx);
    tmux.send("run the tests");
    let pane = tmux.wait_pane("the question", |p| p.contains("[y]es / [n]o"));
    assert!(
        pane.contains("; touch forged.txt #\\x1b[2K\\rallow: run shell command: npm test"),
        "{pane}"
    );
    // The long command is shown whole above a short prompt, not forged
    // into one.
    assert!(pane.contains("allow the above? [y]es / [n]o"), "{pane}");
    assert!(
        !pane.contains("allow: run shell command: npm test? [y]es"),
        "{pane}"
    );
    tmux.send_until("n", "the answer", "not run", 2);
    assert!(!fx.sb.work.join("forged.txt").exists());
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}
