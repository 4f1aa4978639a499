//! Child sessions on disk (issue 25): a child continued with `session`
//! appends to its own file, Ctrl-C leaves every file consistent and the
//! interrupted child can be continued, `sessions show` names a parent's
//! children and `sessions delete` takes them with it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::tasks::*;
use crate::util::{spawn_with_stdin, stderr, stdout};

#[test]
fn a_child_continued_with_session_appends_to_its_own_file() {
    let fx = Fx::new();
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            task("count the files", "count files", Some("explore")),
        ),
        Reply::text("there are 3 files"),
        Reply::text("3 files"),
    ]);
    let o = fx.run(&["run", "how many files?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let (_, (child_file, _)) = parent_and_child(&fx);
    let child_id = id_of(&child_file);
    assert_eq!(messages(&child_file).len(), 2);

    // The parent (resumed with -c) continues the same child.
    let again =
        json!({"prompt": "and the directories?", "description": "count dirs", "session": child_id});
    fx.fake.push_all([
        Reply::tool_call("task", again),
        Reply::text("there are 2 directories"),
        Reply::text("2 directories"),
    ]);
    let o = fx.run(&["run", "-c", "and directories?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.session_files().len(), 2, "no new child");
    let msgs = messages(&child_file);
    assert_eq!(roles(&msgs), ["user", "assistant", "user", "assistant"]);
    assert_eq!(content(&msgs[2]), "and the directories?");
    let continued = child_requests(&fx).pop().unwrap();
    assert_eq!(
        continued.user_texts(),
        ["count the files", "and the directories?"],
        "the child resumes its own history"
    );
    let result = parent_requests(&fx)
        .pop()
        .unwrap()
        .tool_results()
        .pop()
        .unwrap();
    assert!(
        result.starts_with(&format!(
            "task session {child_id} · profile explore · 1 step\n\n"
        )),
        "{result}"
    );

    // Another profile than the child's, or a session that is not a task
    // of this one: refused, nothing started.
    let wrong_profile =
        json!({"prompt": "again", "description": "d", "session": child_id, "profile": "general"});
    fx.fake
        .push_all([Reply::tool_call("task", wrong_profile), Reply::text("ok")]);
    let o = fx.run(&["run", "-c", "once more"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let refused = fx.chats().pop().unwrap().tool_results().pop().unwrap();
    assert!(refused.contains("runs with profile explore"), "{refused}");
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            json!({"prompt": "again", "description": "d", "session": child_id}),
        ),
        Reply::text("ok"),
    ]);
    let o = fx.run(&["run", "a new session"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let refused = fx.chats().pop().unwrap().tool_results().pop().unwrap();
    assert!(
        refused.contains("is not a task of this session"),
        "{refused}"
    );
    assert_eq!(messages(&child_file).len(), 4, "the child was not touched");
    assert_eq!(fx.session_files().len(), 3);

    // Opened directly, the child runs as the task it is: its profile's
    // tools and # Task section. `/resume` switches only between the
    // user's own sessions.
    fx.fake.push(Reply::text("still 2 directories"));
    let o = fx.run(&["run", "-s", &child_id, "sure?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let direct = fx.chats().pop().unwrap();
    assert!(is_child(&direct) && direct.system_text().contains("(profile explore)"));
    assert_eq!(
        direct.tool_names(),
        ["read_file", "list_dir", "grep", "recall", "plan"]
    );
    assert_eq!(messages(&child_file).len(), 6);
    let o = fx.run(&[], &format!("/resume {child_id}\n"));
    assert!(
        stderr(&o).contains(&format!("{child_id} is a task session of ")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ctrl_c_stops_running_children_every_file_stays_consistent_and_a_child_can_go_on() {
    let fx = Fx::new();
    let hang = Arc::new(AtomicBool::new(true));
    let h = hang.clone();
    fx.fake.set_responder(move |r| {
        (is_child(r) && h.load(Ordering::SeqCst))
            .then(|| Reply::text("too late").with_delay(Duration::from_secs(60)))
    });
    fx.fake.push(Reply::tool_calls([
        ("task", task("alpha job", "alpha", Some("explore"))),
        ("task", task("beta job", "beta", Some("explore"))),
    ]));
    let child = spawn_with_stdin(&mut fx.cmd(&["run", "go"]), "");
    wait_for("both children asking", Duration::from_secs(20), || {
        fx.chats().len() >= 3
    });
    let (o, _) = ctrl_c(child);
    assert_eq!(code(&o), Some(130), "{}", stderr(&o));

    let all = headers(&fx);
    assert_eq!(all.len(), 3, "{all:?}");
    let parent = all
        .iter()
        .find(|(_, h)| h.get("parent").is_none())
        .unwrap()
        .0
        .clone();
    for (f, _) in &all {
        assert_consistent(f);
    }
    let results: Vec<String> = messages(&parent)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(content)
        .collect();
    assert_eq!(results.len(), 2, "every task call has a result");
    for r in &results {
        assert!(
            r.starts_with("task session ") && r.lines().next().unwrap().ends_with("· interrupted"),
            "{r}"
        );
    }
    let first = results[0].split_whitespace().nth(2).unwrap().to_owned();

    // The interrupted child goes on where it stopped.
    hang.store(false, Ordering::SeqCst);
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            json!({"prompt": "finish the alpha job", "description": "alpha", "session": first}),
        ),
        Reply::text("alpha finished"),
        Reply::text("done"),
    ]);
    let o = fx.run(&["run", "-c", "go on"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let file = fx
        .session_files()
        .into_iter()
        .find(|f| id_of(f) == first)
        .unwrap();
    let msgs = messages(&file);
    assert_eq!(roles(&msgs), ["user", "user", "assistant"], "{msgs:#?}");
    assert_eq!(content(&msgs[2]), "alpha finished");
    assert_consistent(&file);
}

#[test]
fn show_names_a_parents_children_and_delete_takes_them_with_it() {
    let fx = Fx::new();
    fx.fake.push_all([
        Reply::tool_call("task", task("look", "look around", Some("explore"))),
        Reply::text("nothing there"),
        Reply::text("nothing"),
    ]);
    let o = fx.run(&["run", "look"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let ((parent_file, _), (child_file, child_header)) = parent_and_child(&fx);
    let (parent_id, child_id) = (id_of(&parent_file), id_of(&child_file));
    let call = child_header["parent_call"].as_str().unwrap();

    let o = fx.run(&["sessions", "show", &parent_id], "");
    assert!(
        stdout(&o).contains(&format!(
            "task session {child_id} \"1.1\" · profile explore · 2 messages"
        )),
        "{}",
        stdout(&o)
    );
    let o = fx.run(&["sessions", "show", &child_id], "");
    assert!(
        stdout(&o).contains(&format!(
            "a task of session {parent_id} (call {call}) · profile explore"
        )),
        "{}",
        stdout(&o)
    );
    // The child's next request as it would be sent: its # Task section and
    // explore's tools.
    let o = fx.run(
        &["sessions", "show", "--effective", "--json", &child_id],
        "",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let body: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(body.to_string().contains("(profile explore)"));
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "list_dir", "grep", "recall", "plan"]);

    let o = fx.run(&["sessions", "delete", &parent_id], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "deleted {child_id} \"1.1\" (a task of {parent_id})"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("deleted {parent_id} and its 1 task session(s)")),
        "{err}"
    );
    assert!(fx.session_files().is_empty());
}
