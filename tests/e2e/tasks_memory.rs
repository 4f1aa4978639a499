//! A parent never forgets its children (issue 25): after two compactions
//! its requests still name each child (the compaction facts), `recall`
//! finds what a child read, and in the REPL a child's approval question is
//! asked of the same user, labelled with the task, while its progress is
//! one indented line per tool call, never its output.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::agent_repl::{prompt_count, start_new_repl};
use crate::tasks::*;
use crate::util::stderr;

#[test]
fn after_two_compactions_the_parent_still_names_its_child_and_recall_finds_what_it_read() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.sb.write(
        "work/src/retry.rs",
        "// BACKOFF-DETAIL-55: jitter of a quarter second\nfn retry() {}\n",
    );
    // The summaries keep nothing of the task: only the facts can.
    fx.fake
        .set_summarizer(|_| Reply::text("## Active goal\nchat about retries"));
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            task("read src/retry.rs", "read the retry code", Some("explore")),
        ),
        Reply::tool_call("read_file", json!({"path": "src/retry.rs"})),
        Reply::text("src/retry.rs holds the retry loop."),
        Reply::text("noted"),
        Reply::text("second answer"),
        Reply::text("third answer"),
        Reply::tool_call("recall", json!({"query": "BACKOFF-DETAIL-55"})),
        Reply::text("the jitter is a quarter second"),
    ]);
    let o = fx.run(
        &[],
        "look at the retry code\nsecond\n/compact\nthird\n/compact\nwhat was the jitter?\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let summaries = fx.chats().iter().filter(|r| r.is_summarizer()).count();
    assert_eq!(summaries, 2);
    let ((_, _), (child_file, _)) = parent_and_child(&fx);
    let child_id = id_of(&child_file);

    let parent = parent_requests(&fx);
    let asking = parent
        .iter()
        .find(|r| r.last_user_text().as_deref() == Some("what was the jitter?"))
        .unwrap();
    // Two compactions later the task call itself is long gone from the
    // messages, but the summary section names the child exactly.
    let system = asking.system_text();
    assert!(
        system.contains(&format!("- `{child_id}` (explore): read the retry code")),
        "{system}"
    );
    let messages: Vec<_> = asking
        .messages()
        .into_iter()
        .filter(|m| m["role"] != "system")
        .collect();
    let messages = serde_json::to_string(&messages).unwrap();
    assert!(!messages.contains(&child_id), "{messages}");
    assert!(!asking.all_text().contains("BACKOFF-DETAIL-55"));

    // recall (scope session) searches the session's children too.
    let last = parent.last().unwrap();
    let found = last.tool_results().pop().unwrap();
    assert!(found.starts_with("recall: 1 match"), "{found}");
    assert!(
        found.contains(&format!("[session {child_id} · seq 3 · tool · ")),
        "{found}"
    );
    assert!(found.contains("BACKOFF-DETAIL-55: jitter of a quarter second"));

    // scope project: every session of the project and their children.
    fx.fake.push_all([
        Reply::tool_call(
            "recall",
            json!({"query": "BACKOFF-DETAIL-55", "scope": "project"}),
        ),
        Reply::text("found it"),
    ]);
    let o = fx.run(&["run", "a new session: what was the jitter?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let found = fx.chats().pop().unwrap().tool_results().pop().unwrap();
    assert!(
        found.contains(&format!("[session {child_id} · seq 3 · tool · ")),
        "{found}"
    );
}

#[test]
fn repl_asks_the_user_for_a_childs_shell_command_labelled_with_the_task() {
    let fx = Fx::new();
    fx.fake.push_all([
        Reply::tool_call("task", task("create the marker", "make the marker", None)),
        Reply::tool_call("shell", json!({"command": "touch child_marker.txt"})),
        Reply::text("CHILD-FINAL-TEXT marker made"),
        Reply::text("The task made the marker."),
    ]);
    let tmux = start_new_repl(&fx);
    tmux.send("make the marker through a task");
    let pane = tmux.wait_pane("the question", |p| p.contains("[a]lways"));
    assert!(
        pane.contains("allow: [task: make the marker] run shell command: touch child_marker.txt?"),
        "{pane}"
    );
    // The child's progress: one indented line for its tool call.
    assert!(
        pane.contains("  │ make the marker: → shell {\"command\":\"touch child_marker.txt\"}"),
        "{pane}"
    );
    tmux.send("y");
    let pane = tmux.wait_pane("the answer", |p| {
        p.contains("The task made the marker.") && prompt_count(p) >= 2
    });
    assert!(fx.sb.work.join("child_marker.txt").exists());
    // The child's own answer is the parent's tool result, not shown.
    assert!(!pane.contains("CHILD-FINAL-TEXT"), "{pane}");
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}
