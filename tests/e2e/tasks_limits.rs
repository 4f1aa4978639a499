//! Tasks within limits (issue 25): a child never gets a tool or a
//! permission its parent lacks, `tools.task` and `tasks.max_depth` decide
//! who may start tasks, and several tasks of one step run concurrently
//! (asserted on the order the fake received requests, not on time) with
//! their results in call order.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::json;

use crate::agent::*;
use crate::tasks::*;
use crate::util::stderr;

#[test]
fn a_child_never_gets_a_permission_or_tool_its_parent_lacks() {
    let fx = Fx::new();
    // No --allow-shell: the general child's shell call is denied, as its
    // parent's would be.
    fx.fake.push_all([
        Reply::tool_call("task", task("make the marker", "make the marker", None)),
        Reply::tool_call("shell", json!({"command": "touch by_child.txt"})),
        Reply::text("I could not run it."),
        Reply::text("The task could not run it."),
    ]);
    let o = fx.run(&["run", "delegate it"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.sb.work.join("by_child.txt").exists());
    let child = child_requests(&fx);
    assert_eq!(child.len(), 2);
    let denied = child[1].tool_results().pop().unwrap();
    assert!(
        denied.starts_with("denied") && denied.contains("--allow-shell"),
        "{denied}"
    );
    // general: the parent's tools, less `task` (max_depth 1).
    let mut parent_tools = parent_requests(&fx)[0].tool_names();
    assert_eq!(parent_tools.pop().as_deref(), Some("task"));
    assert_eq!(child[0].tool_names(), parent_tools);
    assert!(child[0].system_text().contains("(profile general)"));

    // explore with every flag given: shell and writes are not its tools,
    // so calls to them are refused and nothing runs.
    fx.fake.clear_requests();
    fx.fake.push_all([
        Reply::tool_call("task", task("look around", "look around", Some("explore"))),
        Reply::tool_calls([
            ("shell", json!({"command": "touch by_explore.txt"})),
            ("write_file", json!({"path": "written.txt", "content": "x"})),
            ("task", task("nested", "nested", None)),
        ]),
        Reply::text("done looking"),
        Reply::text("ok"),
    ]);
    let o = fx.run(&["run", "--allow-shell", "--allow-write", "look"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.sb.work.join("by_explore.txt").exists());
    assert!(!fx.sb.work.join("written.txt").exists());
    let child = child_requests(&fx);
    assert_eq!(child.len(), 2, "no grandchild ran");
    let names = child[0].tool_names();
    for missing in ["shell", "write_file", "edit_file", "task", "memory"] {
        assert!(!names.contains(&missing.to_owned()), "{names:?}");
    }
    let refused = child[1].tool_results();
    assert_eq!(refused.len(), 3);
    for r in &refused {
        assert!(
            r.starts_with("unknown tool `") && r.contains("not available to profile explore"),
            "{r}"
        );
    }

    // With --allow-shell the general child may run what its parent may.
    fx.fake.clear_requests();
    fx.fake.push_all([
        Reply::tool_call("task", task("make the marker", "make the marker", None)),
        Reply::tool_call("shell", json!({"command": "touch by_child.txt"})),
        Reply::text("made it"),
        Reply::text("made"),
    ]);
    let o = fx.run(&["run", "--allow-shell", "delegate it"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(fx.sb.work.join("by_child.txt").exists());
    for f in fx.session_files() {
        assert_consistent(&f);
    }
}

#[test]
fn tools_task_and_max_depth_decide_who_may_start_tasks() {
    // An untrusted project may turn tasks off.
    let fx = Fx::new();
    fx.sb
        .write("work/eonyx.json", r#"{"tools": {"task": false}}"#);
    fx.fake.push(Reply::text("fine"));
    let o = fx.run(&["run", "hi"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.chats()[0].tool_names().contains(&"task".to_owned()));
    assert!(!stderr(&o).contains("ignoring"), "{}", stderr(&o));
    // `--profile explore` narrows the user's own session the same way.
    fx.fake.push(Reply::text("fine"));
    let o = fx.run(&["run", "--profile", "explore", "hi"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(
        fx.chats().pop().unwrap().tool_names(),
        ["read_file", "list_dir", "grep", "recall", "plan"]
    );

    // max_depth 2: a general child may start its own task (titled
    // `1.1.1`), an explore child still may not.
    let fx = Fx::with(|c| c.merge_top_toml("[tasks]\nmax_depth = 2\n").unwrap());
    fx.fake.push_all([
        Reply::tool_call("task", task("split the work", "split the work", None)),
        Reply::tool_call(
            "task",
            task("read one file", "read one file", Some("explore")),
        ),
        Reply::text("the file is empty"),
        Reply::text("the grandchild says it is empty"),
        Reply::text("all done"),
    ]);
    let o = fx.run(&["run", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let children = child_requests(&fx);
    assert_eq!(children.len(), 3, "{children:#?}");
    assert!(children[0].tool_names().contains(&"task".to_owned()));
    assert!(!children[1].tool_names().contains(&"task".to_owned()));
    let mut titles: Vec<String> = headers(&fx)
        .into_iter()
        .map(|(_, h)| h["title"].as_str().unwrap().to_owned())
        .collect();
    titles.sort();
    assert_eq!(titles, ["1", "1.1", "1.1.1"]);
    let last = parent_requests(&fx).pop().unwrap();
    assert!(
        last.tool_results()[0].ends_with("the grandchild says it is empty"),
        "{:?}",
        last.tool_results()
    );
}

/// The first words of a child's prompt say which task a request is.
fn job(r: &RecordedRequest) -> String {
    r.user_texts().first().cloned().unwrap_or_default()
}

#[test]
fn two_tasks_of_one_step_run_concurrently_and_return_in_call_order() {
    let fx = Fx::new();
    fx.sb.write("work/a.txt", "alpha\n");
    fx.sb.write("work/b.txt", "beta\n");
    fx.fake.set_responder(|r| {
        if !is_child(r) {
            return None;
        }
        let second_step = !r.tool_results().is_empty();
        let name = if job(r).starts_with("alpha") {
            "A"
        } else {
            "B"
        };
        Some(match (name, second_step) {
            // Each child's first answer is held until both children have
            // asked (parent + 2 requests): only concurrent children get it.
            (n, false) => {
                let path = format!("{}.txt", n.to_lowercase());
                Reply::tool_call("read_file", json!({ "path": path })).hold_until(3)
            }
            (n, true) => Reply::text(format!("{n} DONE")),
        })
    });
    fx.fake.push_all([
        Reply::tool_calls([
            (
                "task",
                task("alpha job: read a.txt", "alpha", Some("explore")),
            ),
            (
                "task",
                task("beta job: read b.txt", "beta", Some("explore")),
            ),
        ]),
        Reply::text("both done"),
    ]);
    let o = fx.run(&["run", "--json", "do both"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));

    let order: Vec<String> = fx
        .agent_requests()
        .iter()
        .map(|r| {
            if !is_child(r) {
                "P".to_owned()
            } else {
                let n = if job(r).starts_with("alpha") {
                    "A"
                } else {
                    "B"
                };
                format!("{n}{}", 1 + usize::from(!r.tool_results().is_empty()))
            }
        })
        .collect();
    // Both children's first requests reached the fake before either got
    // an answer (each second request needs the first answer).
    let at = |s: &str| order.iter().position(|o| o == s).unwrap();
    assert!(at("A1") < at("B2") && at("B1") < at("A2"), "{order:?}");
    assert_eq!((order[0].as_str(), order[5].as_str()), ("P", "P"));
    // The results come back in call order, whichever finished first.
    let last = parent_requests(&fx).pop().unwrap();
    let results = last.tool_results();
    assert_eq!(results.len(), 2);
    assert!(results[0].ends_with("A DONE"), "{results:?}");
    assert!(results[1].ends_with("B DONE"), "{results:?}");
    let titles: Vec<String> = headers(&fx)
        .into_iter()
        .filter_map(|(_, h)| {
            h.get("parent")
                .map(|_| h["title"].as_str().unwrap().to_owned())
        })
        .collect();
    let mut sorted = titles.clone();
    sorted.sort();
    assert_eq!(sorted, ["1.1", "1.2"]);

    // tasks.max_parallel = 1: one after the other.
    let fx2 = Fx::with(|c| c.merge_top_toml("[tasks]\nmax_parallel = 1\n").unwrap());
    fx2.fake.set_responder(|r| {
        is_child(r).then(|| {
            if r.tool_results().is_empty() {
                Reply::tool_call("list_dir", json!({}))
            } else {
                Reply::text("listed")
            }
        })
    });
    fx2.fake.push_all([
        Reply::tool_calls([
            ("task", task("alpha job", "alpha", Some("explore"))),
            ("task", task("beta job", "beta", Some("explore"))),
        ]),
        Reply::text("both done"),
    ]);
    let o = fx2.run(&["run", "do both"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let jobs: Vec<(String, usize)> = child_requests(&fx2)
        .iter()
        .map(|r| (job(r), r.tool_results().len()))
        .collect();
    assert_eq!(
        jobs,
        [
            ("alpha job".to_owned(), 0),
            ("alpha job".to_owned(), 1),
            ("beta job".to_owned(), 0),
            ("beta job".to_owned(), 1)
        ]
    );
}
