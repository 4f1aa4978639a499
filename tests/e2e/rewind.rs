//! Rewind, undo and fork through the real binary (issue 27): `/rewind` in
//! batch runs and the REPL, the files it restores, removes or leaves alone,
//! a rewind across a compaction, a kill in the middle of a restore, and
//! forks (`/fork`, `eonyx sessions fork`), asserting on what the fake
//! server was sent and on the session files.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::Path;
use std::time::Duration;

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::{
    Fx, code, content, messages, raw_array, records, run_with_stdin, session_id_of, wait_for,
};
use crate::agent_repl::{prompt_count, start_repl};
use crate::util::{json_lines, spawn_with_stdin, stderr, stdout};

fn rewinds(path: &Path) -> Vec<Value> {
    records(path)
        .into_iter()
        .filter(|r| r["type"] == "rewind")
        .collect()
}

/// The seq of the user message with this text.
fn seq_of(path: &Path, text: &str) -> u64 {
    messages(path)
        .iter()
        .find(|m| m["role"] == "user" && content(m) == text)
        .unwrap_or_else(|| panic!("no user message {text:?}"))["seq"]
        .as_u64()
        .unwrap()
}

#[test]
fn rewind_3_sends_the_earlier_turns_and_the_new_one_and_keeps_the_rewound_ones_in_the_file() {
    let fx = Fx::replying((1..=6).map(|i| Reply::text(format!("answer {i}"))));
    let o = fx.run(&[], "one\ntwo\nthree PELICAN\nfour\nfive\n/rewind 3\nsix\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("rewound 3 turn(s)"),
        "the rewind is reported: {}",
        stderr(&o)
    );
    let chats = fx.agent_requests();
    assert_eq!(chats.len(), 6);
    let last = chats.last().unwrap();
    assert_eq!(last.user_texts(), ["one", "two", "six"]);
    assert!(!last.all_text().contains("answer 3"), "{}", last.raw_body);
    // The file keeps every message, and the rewind record points just
    // before the first rewound turn.
    let path = fx.session();
    let users: Vec<String> = messages(&path)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content)
        .collect();
    assert_eq!(
        users,
        ["one", "two", "three PELICAN", "four", "five", "six"]
    );
    let rw = rewinds(&path);
    assert_eq!(rw.len(), 1);
    assert_eq!(
        rw[0]["to_seq"].as_u64(),
        Some(seq_of(&path, "three PELICAN") - 1)
    );

    // A resumed session sends the same bytes the live one did, plus the
    // new turn.
    fx.fake.push(Reply::text("answer 7"));
    let o = fx.run(&["-c"], "seven\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let resumed = fx.agent_requests().pop().unwrap();
    assert_eq!(resumed.user_texts(), ["one", "two", "six", "seven"]);
    let live = raw_array(&last.raw_body, "messages");
    let again = raw_array(&resumed.raw_body, "messages");
    assert!(
        again.starts_with(&live[..live.len() - 1]),
        "resumed:\n{again}\nlive:\n{live}"
    );

    // `sessions show` marks the rewound messages; export is the file.
    let id = session_id_of(&path);
    let o = fx.run(&["sessions", "show", &id], "");
    let text = stdout(&o);
    let marked: Vec<&str> = text.lines().filter(|l| l.contains("· rewound]")).collect();
    assert_eq!(marked.len(), 6, "three turns of two messages: {text}");
    assert!(text.contains(" rewind · "), "{text}");
    let o = fx.run(&["sessions", "show", "--json", &id], "");
    let shown: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        shown.iter().filter(|r| r["rewound"] == true).count(),
        6,
        "{shown:#?}"
    );
    let o = fx.run(&["sessions", "export", &id], "");
    assert_eq!(o.stdout, std::fs::read(&path).unwrap());
}

#[test]
fn recall_still_finds_a_rewound_message_and_says_so() {
    let fx = Fx::replying([
        Reply::text("noted"),
        Reply::text("ok"),
        Reply::tool_call("recall", json!({"query": "pelican"})),
        Reply::text("found it"),
    ]);
    let o = fx.run(
        &[],
        "the password hint is PELICAN\n/rewind\nhello\nwhat was the hint?\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let result = fx.agent_requests().last().unwrap().tool_results();
    assert_eq!(result.len(), 1);
    assert!(
        result[0].contains("the password hint is PELICAN"),
        "{result:?}"
    );
    assert!(result[0].contains("rewound"), "{result:?}");
}

/// A project with `a.txt` and `b.txt`, and one turn in which the model
/// edits a.txt, creates new.txt, overwrites b.txt and runs a command.
fn edited_project() -> Fx {
    let fx = Fx::new();
    fx.sb.write("work/a.txt", "alpha\n");
    fx.sb.write("work/b.txt", "bravo\n");
    fx.fake
        .push(Reply::tool_calls([
            (
                "edit_file",
                json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
            ),
            (
                "write_file",
                json!({"path": "sub/new.txt", "content": "created\n"}),
            ),
            ("write_file", json!({"path": "b.txt", "content": "BRAVO\n"})),
            ("shell", json!({"command": "echo touched > shell.txt"})),
        ]))
        .push(Reply::text("edited"));
    let o = fx.run(&["--allow-write", "--allow-shell"], "change things\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("ALPHA\n"));
    // Every editing call's result carries its undo.
    let undos: Vec<Value> = messages(&fx.session())
        .into_iter()
        .filter_map(|m| m.get("undo").cloned())
        .collect();
    assert_eq!(undos.len(), 3, "{undos:#?}");
    assert!(undos[1]["before"].is_null(), "a created file: {undos:#?}");
    fx
}

fn read(fx: &Fx, rel: &str) -> Option<String> {
    std::fs::read_to_string(fx.sb.work.join(rel)).ok()
}

#[test]
fn rewind_restores_edited_files_removes_created_ones_and_names_what_it_leaves() {
    let fx = edited_project();
    // Someone else changes b.txt after eonyx did.
    fx.sb.write("work/b.txt", "the user's bravo\n");
    fx.fake.push(Reply::text("fresh start"));
    let o = fx.run(&["-c", "--json"], "/rewind\nstart over\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(
        read(&fx, "sub/new.txt"),
        None,
        "the created file is removed"
    );
    assert_eq!(read(&fx, "b.txt").as_deref(), Some("the user's bravo\n"));
    assert_eq!(read(&fx, "shell.txt").as_deref(), Some("touched\n"));
    let err = stderr(&o);
    assert!(
        err.contains("left alone: b.txt: it was changed since eonyx wrote it"),
        "{err}"
    );
    assert!(
        err.contains("not undone (shell commands): echo touched > shell.txt"),
        "{err}"
    );
    let events = json_lines(&o.stdout);
    let ev = events.iter().find(|e| e["type"] == "rewind").unwrap();
    assert_eq!(ev["restored"], json!(["a.txt"]));
    assert_eq!(ev["removed"], json!(["sub/new.txt"]));
    assert_eq!(ev["left_alone"][0]["path"], "b.txt");
    assert_eq!(ev["not_undone"], json!(["echo touched > shell.txt"]));
    assert_eq!(ev["turns"], 1);
    assert_eq!(ev["keep_files"], false);
    // The next request has none of the rewound turn.
    assert_eq!(
        fx.agent_requests().last().unwrap().user_texts(),
        ["start over"]
    );
}

#[test]
fn keep_files_rewinds_only_the_conversation() {
    let fx = edited_project();
    fx.fake.push(Reply::text("ok"));
    let o = fx.run(&["-c"], "/rewind 1 --keep-files\nnext\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("files left as they are"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("ALPHA\n"));
    assert_eq!(read(&fx, "sub/new.txt").as_deref(), Some("created\n"));
    assert_eq!(fx.agent_requests().last().unwrap().user_texts(), ["next"]);
    // Nothing to rewind past the start: said, and the batch goes on.
    let o = fx.run(&["-c"], "/rewind 5\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("only 1 user turn(s)"), "{}", stderr(&o));
}

#[test]
fn deleting_the_session_deletes_its_file_history() {
    let fx = edited_project();
    let id = session_id_of(&fx.session());
    let history = fx.sb.data.join("file-history").join(&id);
    // The contents before the edits of a.txt and b.txt (new.txt had none).
    assert_eq!(walk(&history).len(), 2, "{:?}", walk(&history));
    let o = fx.run(&["sessions", "delete", &id], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!history.exists(), "{history:?}");
    // The project's files stay as the session left them.
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("ALPHA\n"));
}

#[test]
fn a_rewind_across_a_compaction_gives_the_view_as_of_that_point() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.fake.set_summarizer(|_| Reply::text("SUMMARY-OF-ALPHA"));
    fx.fake
        .push_all((1..=4).map(|i| Reply::text(format!("a{i}"))));
    // alpha, beta, compaction (summarizes alpha), gamma; rewinding gamma
    // goes back to after the compaction: the summary is in force.
    let o = fx.run(&[], "alpha\nbeta\n/compact\ngamma\n/rewind\ndelta\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let last = fx.agent_requests().pop().unwrap();
    assert!(
        last.system_text().contains("SUMMARY-OF-ALPHA"),
        "{}",
        last.system_text()
    );
    assert_eq!(last.user_texts(), ["beta", "delta"]);
    // Rewinding two more turns goes back before the compaction: no
    // summary, and alpha is sent again.
    fx.fake.push(Reply::text("a5"));
    let o = fx.run(&["-c"], "/rewind 2\nepsilon\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let last = fx.agent_requests().pop().unwrap();
    assert!(
        !last.system_text().contains("SUMMARY-OF-ALPHA"),
        "{}",
        last.system_text()
    );
    assert_eq!(last.user_texts(), ["alpha", "epsilon"]);
    assert_eq!(rewinds(&fx.session()).len(), 2);
}

#[test]
fn sessions_fork_at_seq_copies_the_history_and_continues_on_its_own() {
    let fx = Fx::replying([
        Reply::text("a1"),
        Reply::text("a2"),
        Reply::text("a3 in the original"),
    ]);
    let o = fx.run(&[], "one\ntwo\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let original = fx.session();
    let before = std::fs::read(&original).unwrap();
    let id = session_id_of(&original);
    let at = seq_of(&original, "three") - 1;

    let o = fx.run(&["sessions", "fork", &id, "--at", &at.to_string()], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let fork = stdout(&o).trim().to_owned();
    assert_ne!(fork, id);
    assert!(
        stderr(&o).contains(&format!("eonyx -s {fork}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "the original is untouched"
    );
    let fork_path = fx.sb.data.join(format!("sessions/{fork}.jsonl"));
    let recs = records(&fork_path);
    assert_eq!(recs[0]["forked_from"], json!({"id": id, "seq": at}));
    assert_eq!(recs[0]["title"], "2", "the next title");
    let users: Vec<String> = messages(&fork_path)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(content)
        .collect();
    assert_eq!(users, ["one", "two"]);

    // The fork's first request is what the original sent at that point.
    fx.fake
        .push(Reply::text("a3 in the fork"))
        .push(Reply::text("a4"));
    let o = fx.run(&["-s", &fork], "three\nfour\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let chats = fx.agent_requests();
    assert_eq!(chats.len(), 5);
    assert_eq!(
        chats[3].raw_body, chats[2].raw_body,
        "byte-identical requests"
    );
    // Continuing the fork sends its own history.
    let own = &chats[4];
    assert_eq!(own.user_texts(), ["one", "two", "three", "four"]);
    assert!(own.all_text().contains("a3 in the fork"));
    assert!(!own.all_text().contains("a3 in the original"));
    assert_eq!(std::fs::read(&original).unwrap(), before, "still untouched");

    let o = fx.run(&["sessions", "show", &fork], "");
    assert!(
        stdout(&o).contains(&format!("forked from {id} at #{at}")),
        "{}",
        stdout(&o)
    );
    for bad in ["0", "999"] {
        let o = fx.run(&["sessions", "fork", &id, "--at", bad], "");
        assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    }
}

#[test]
fn fork_in_a_batch_run_continues_in_the_fork() {
    let fx = Fx::replying([Reply::text("a1"), Reply::text("a2"), Reply::text("a3")]);
    let o = fx.run(&["--json"], "one\ntwo\n/fork 1\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let events = json_lines(&o.stdout);
    let ev = events.iter().find(|e| e["type"] == "fork").unwrap();
    let files = fx.session_files();
    assert_eq!(files.len(), 2);
    let last = fx.agent_requests().pop().unwrap();
    assert_eq!(last.user_texts(), ["one", "three"]);
    let fork = fx
        .sb
        .data
        .join(format!("sessions/{}.jsonl", ev["id"].as_str().unwrap()));
    let original = files.iter().find(|f| **f != fork).unwrap();
    assert_eq!(ev["forked_from"]["id"], session_id_of(original));
    assert_eq!(
        messages(original).len(),
        4,
        "the original keeps its two turns"
    );
    assert_eq!(messages(&fork).len(), 4, "one, a1, three, a3");
}

#[test]
fn a_kill_during_the_restore_leaves_each_file_restored_or_untouched() {
    let fx = Fx::new();
    let names: Vec<String> = (1..=4).map(|i| format!("f{i}.txt")).collect();
    fx.sb.write("work/edited.txt", "original\n");
    // edited.txt is changed first, so it is restored last (newest change
    // first).
    let mut calls: Vec<(&str, Value)> = vec![(
        "write_file",
        json!({"path": "edited.txt", "content": "changed by eonyx\n"}),
    )];
    calls.extend(names.iter().map(|n| {
        (
            "write_file",
            json!({"path": n, "content": format!("{n} by eonyx\n")}),
        )
    }));
    fx.fake
        .push(Reply::tool_calls(calls))
        .push(Reply::text("wrote"));
    let o = fx.run(&["--allow-write"], "write five files\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let session = fx.session();
    let eonyx_wrote = |n: &str| read(&fx, n).is_some_and(|t| t.contains("eonyx"));

    // The rewind waits a long time after each file it restores: kill it
    // once the first one is done.
    let mut cmd = fx.cmd(&["-c"]);
    cmd.env("EONYX_TEST_REWIND_PAUSE_MS", "120000");
    let mut child = spawn_with_stdin(&mut cmd, "/rewind\n");
    wait_for("the first file restored", Duration::from_secs(30), || {
        !names.iter().all(|n| eonyx_wrote(n))
    });
    child.kill().unwrap();
    let _ = child.wait();

    let restored = names.iter().filter(|n| read(&fx, n).is_none()).count();
    let untouched = names.iter().filter(|n| eonyx_wrote(n)).count();
    assert_eq!(
        restored + untouched,
        names.len(),
        "each file restored or untouched"
    );
    assert!(restored >= 1 && untouched >= 1, "{restored} restored");
    // Newest change first: f4.txt went first, edited.txt is not reached.
    assert_eq!(read(&fx, "f4.txt"), None);
    assert!(eonyx_wrote("f1.txt") && eonyx_wrote("edited.txt"));
    // `Child::kill` is SIGKILL: no temporary file of a restore is left
    // behind in the project either.
    let leftovers: Vec<_> = walk(&fx.sb.work)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".eonyx-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The session is readable and not rewound yet.
    assert!(rewinds(&session).is_empty());
    let o = fx.run(&["sessions", "show", &session_id_of(&session)], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));

    // Resuming finishes the rewind before the next turn.
    fx.fake.push(Reply::text("clean"));
    let o = fx.run(&["-c"], "what now?\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("finished a rewind"), "{}", stderr(&o));
    for n in &names {
        assert_eq!(read(&fx, n), None, "{n}");
    }
    assert_eq!(read(&fx, "edited.txt").as_deref(), Some("original\n"));
    assert_eq!(rewinds(&session).len(), 1);
    assert_eq!(
        fx.agent_requests().last().unwrap().user_texts(),
        ["what now?"]
    );
}

#[test]
fn the_repl_shows_the_turns_and_files_and_asks_before_rewinding() {
    let fx = Fx::new();
    fx.sb.write("work/a.txt", "alpha\n");
    fx.fake
        .push(Reply::tool_call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        ))
        .push(Reply::text("edited a"));
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new --allow-write; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    tmux.send_until("shout the first word", "the answer", "edited a", 2);
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("ALPHA\n"));

    tmux.send("/rewind");
    let pane = tmux.wait_pane("the question", |p| p.contains("rewind? [y]es / [n]o"));
    assert!(pane.contains("rewind 1 turn(s)"), "{pane}");
    assert!(pane.contains("shout the first word"), "{pane}");
    assert!(pane.contains("restore a.txt"), "{pane}");
    tmux.send("n");
    tmux.wait_pane("the refusal", |p| p.contains("nothing rewound"));
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("ALPHA\n"));

    tmux.send("/rewind");
    tmux.wait_pane("the second question", |p| {
        p.matches("rewind? [y]es").count() == 2
    });
    tmux.send("y");
    tmux.wait_pane("the report", |p| p.contains("restored: a.txt"));
    assert_eq!(read(&fx, "a.txt").as_deref(), Some("alpha\n"));
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_eq!(rewinds(&fx.session()).len(), 1);
}

#[test]
fn a_content_holding_a_key_value_is_not_kept_and_the_rewind_says_so() {
    let fx = Fx::new();
    fx.sb
        .write("work/.env", "OPENAI_API_KEY=sk-test-secret-value\n");
    fx.fake
        .push(Reply::tool_call(
            "write_file",
            json!({"path": ".env", "content": "cleared\n"}),
        ))
        .push(Reply::text("cleared"))
        .push(Reply::text("ok"));
    let input = "clear the env file\n/rewind\nnext\n";
    let mut cmd = fx.cmd(&["--allow-write"]);
    cmd.env("OPENAI_API_KEY", "sk-test-secret-value");
    let o = run_with_stdin(cmd, input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("left alone: .env: its earlier content held an API key value"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(&fx, ".env").as_deref(), Some("cleared\n"));
    let undo = messages(&fx.session())
        .into_iter()
        .find_map(|m| m.get("undo").cloned())
        .unwrap();
    assert_eq!(undo["kept"], false);
    // Nothing holding the key is in the file history.
    let history = fx.sb.data.join("file-history");
    for e in walk(&history) {
        let bytes = std::fs::read(&e).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("sk-test-secret-value"),
            "{e:?}"
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_bang_command_and_the_line_after_it_are_one_turn_and_the_command_is_named() {
    let fx = Fx::replying([Reply::text("a1"), Reply::text("a2"), Reply::text("a3")]);
    let o = fx.run(
        &[],
        "first\n!echo made > bang.txt\nwhat did it make?\n/rewind\nsecond\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not undone (shell commands): echo made > bang.txt"),
        "{}",
        stderr(&o)
    );
    // The command's output and the question went together; the file the
    // command made stays.
    assert_eq!(
        fx.agent_requests().last().unwrap().user_texts(),
        ["first", "second"]
    );
    assert_eq!(read(&fx, "bang.txt").as_deref(), Some("made\n"));
}

#[test]
fn a_task_s_file_changes_are_undone_with_the_turn_that_ran_it() {
    let fx = Fx::new();
    fx.sb.write("work/notes.txt", "original\n");
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            json!({"prompt": "rewrite notes.txt", "description": "rewrite the notes", "profile": "general"}),
        ),
        // The child's two steps, then the parent's answer.
        Reply::tool_call(
            "write_file",
            json!({"path": "notes.txt", "content": "by the task\n"}),
        ),
        Reply::text("rewrote it"),
        Reply::text("the task rewrote the notes"),
        Reply::text("back again"),
    ]);
    let o = fx.run(&["--allow-write"], "delegate the notes\n/rewind\nhello\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("restored: notes.txt"), "{}", stderr(&o));
    assert_eq!(read(&fx, "notes.txt").as_deref(), Some("original\n"));
    // The child session keeps its undo and its own file history.
    let child = fx
        .session_files()
        .into_iter()
        .find(|f| records(f)[0].get("parent").is_some())
        .expect("a child session");
    assert!(messages(&child).iter().any(|m| m.get("undo").is_some()));
    let history = fx.sb.data.join("file-history").join(session_id_of(&child));
    assert!(history.is_dir(), "{history:?}");
}
