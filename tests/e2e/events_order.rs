//! Events and questions in the order they happened (issue 58: events go
//! through one handle the agent owns, shown while the frontend awaits
//! it). The REPL in tmux: a question is drawn below everything the step
//! showed before it (the model's text, the call it asks about, a task's
//! progress), never above; and a batch's `--json` events keep the turn's
//! order with a task's events inside it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::agent_repl::{prompt_count, start_new_repl};
use crate::tasks::task;
use crate::util::{json_lines, stderr};

/// Where `needle` first is on the screen.
fn at(pane: &str, needle: &str) -> usize {
    pane.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not on the screen:\n{pane}"))
}

#[test]
fn a_question_is_drawn_below_the_text_the_call_and_the_task_progress_before_it() {
    let fx = Fx::new();
    fx.fake.push_all([
        Reply::tool_call("shell", json!({"command": "touch parent_asked.txt"}))
            .with_text("LOOKING-FIRST at the tree"),
        Reply::tool_call("task", task("make the child file", "child work", None)),
        Reply::tool_call("shell", json!({"command": "touch child_asked.txt"})),
        Reply::text("CHILD-FINAL done"),
        Reply::text("ALL-DONE both files"),
    ]);
    let tmux = start_new_repl(&fx);
    tmux.send("make both files");

    let pane = tmux.wait_pane("the first question", |p| p.contains("[a]lways"));
    let question = at(&pane, "run shell command: touch parent_asked.txt?");
    let call = at(&pane, "→ shell {\"command\":\"touch parent_asked.txt\"}");
    let text = at(&pane, "LOOKING-FIRST at the tree");
    assert!(text < call && call < question, "{pane}");
    tmux.send("y");

    let pane = tmux.wait_pane("the child's question", |p| {
        p.contains("[task: child work] run shell command: touch child_asked.txt?")
    });
    let question = at(
        &pane,
        "[task: child work] run shell command: touch child_asked.txt?",
    );
    let progress = at(
        &pane,
        "│ child work: → shell {\"command\":\"touch child_asked.txt\"}",
    );
    assert!(progress < question, "{pane}");
    tmux.send("y");

    tmux.wait_pane("the answer", |p| {
        p.contains("ALL-DONE both files") && prompt_count(p) >= 2
    });
    assert!(fx.sb.work.join("parent_asked.txt").exists());
    assert!(fx.sb.work.join("child_asked.txt").exists());
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

#[test]
fn a_batchs_json_events_keep_the_turns_order_with_the_tasks_inside_it() {
    let fx = Fx::new();
    fx.fake.push_all([
        Reply::tool_call("task", task("list the files", "lister", None)),
        Reply::tool_call("list_dir", json!({"path": "."})),
        Reply::text("CHILD-FINAL listed"),
        Reply::text("PARENT-FINAL the files are listed"),
    ]);
    let out = fx.run(&["run", "--json", "list the files through a task"], "");
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let events = json_lines(&out.stdout);
    let kinds: Vec<String> = events
        .iter()
        .map(|e| {
            let kind = e["type"].as_str().unwrap_or("?").to_owned();
            match e.get("task") {
                Some(t) if !t.is_null() => format!("task:{kind}"),
                _ => kind,
            }
        })
        .filter(|k| k.contains("tool_") || k.contains("task_"))
        .collect();
    let pos = |k: &str| {
        kinds
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    // The parent's task call, the child's call and result inside it, the
    // task's end, then the parent's result for the task call.
    assert!(pos("tool_call") < pos("task:tool_call"), "{kinds:?}");
    assert!(pos("task:tool_call") < pos("task:tool_result"), "{kinds:?}");
    assert!(pos("task:tool_result") < pos("task_completed"), "{kinds:?}");
    assert!(pos("task_completed") < pos("tool_result"), "{kinds:?}");
}
