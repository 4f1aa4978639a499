//! The `task` tool through the real binary (issue 25): a child agent in a
//! child session, scripted with the fake's tool calls. Parent and child
//! requests are told apart by content (a child's system prompt has the
//! `# Task` section). This file: the helpers the `tasks_*.rs` files share,
//! and one task end to end (isolation, the result, the child's header,
//! title, listing, `-c`, events).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::{Path, PathBuf};

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{json_lines, stderr, stdout};

/// What a child's system prompt says first in its `# Task` section.
pub(crate) const CHILD_MARK: &str = "# Task\n\nYou are a sub-agent of eonyx";

pub(crate) fn is_child(r: &RecordedRequest) -> bool {
    r.system_text().contains(CHILD_MARK)
}

/// The chat requests of children (not summaries), in arrival order.
pub(crate) fn child_requests(fx: &Fx) -> Vec<RecordedRequest> {
    fx.agent_requests().into_iter().filter(is_child).collect()
}

/// The chat requests of the top-level session (not summaries, not children).
pub(crate) fn parent_requests(fx: &Fx) -> Vec<RecordedRequest> {
    fx.agent_requests()
        .into_iter()
        .filter(|r| !is_child(r))
        .collect()
}

/// A `task` call's arguments.
pub(crate) fn task(prompt: &str, description: &str, profile: Option<&str>) -> Value {
    let mut v = json!({"prompt": prompt, "description": description});
    if let Some(p) = profile {
        v["profile"] = json!(p);
    }
    v
}

/// The header line of every session file, by file.
pub(crate) fn headers(fx: &Fx) -> Vec<(PathBuf, Value)> {
    fx.session_files()
        .into_iter()
        .map(|f| {
            let h = records(&f).into_iter().next().unwrap();
            (f, h)
        })
        .collect()
}

/// The only child session file and its header; the only top-level one.
pub(crate) fn parent_and_child(fx: &Fx) -> ((PathBuf, Value), (PathBuf, Value)) {
    let all = headers(fx);
    assert_eq!(all.len(), 2, "one parent, one child: {all:?}");
    let (children, parents): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|(_, h)| h.get("parent").is_some());
    (
        parents.into_iter().next().unwrap(),
        children.into_iter().next().unwrap(),
    )
}

pub(crate) fn id_of(path: &Path) -> String {
    session_id_of(path)
}

/// The stable prefix of a request's system prompt (up to the date line).
pub(crate) fn stable_prefix(r: &RecordedRequest) -> String {
    let system = r.system_text();
    let at = system
        .find("\n\nCurrent date (UTC): ")
        .expect("a date line");
    system[..at].to_owned()
}

#[test]
fn an_explore_task_runs_in_a_child_session_and_only_its_answer_reaches_the_parent() {
    let fx = Fx::new();
    fx.sb.write("work/AGENTS.md", "Answer in English.\n");
    fx.sb.write(
        "work/src/retry.rs",
        "// RETRY-POLICY-7731: three attempts, exponential backoff\nfn retry() {}\n",
    );
    let prompt = "Find where the retry policy is defined and report the file.";
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            task(prompt, "find the retry policy", Some("explore")),
        ),
        Reply::tool_call("read_file", json!({"path": "src/retry.rs"})),
        Reply::text("The retry policy is in src/retry.rs (three attempts)."),
        Reply::text("It lives in src/retry.rs."),
    ]);
    let o = fx.run(&["run", "--json", "where is the retry policy?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));

    let parent = parent_requests(&fx);
    let child = child_requests(&fx);
    assert_eq!((parent.len(), child.len()), (2, 2), "{:#?}", fx.chats());
    // The child starts fresh: its first user message is the prompt, and
    // its system prompt is the parent's stable prefix, byte for byte, then
    // the `# Task` section with explore's instructions.
    assert_eq!(child[0].user_texts(), [prompt]);
    assert_eq!(child[0].roles(), ["user"]);
    let parent_prefix = stable_prefix(&parent[0]);
    assert!(parent_prefix.contains("Answer in English."));
    assert!(
        stable_prefix(&child[0]).starts_with(&format!("{parent_prefix}\n\n{CHILD_MARK}")),
        "{}",
        child[0].system_text()
    );
    assert!(child[0].system_text().contains("(profile explore)"));
    assert!(child[0].system_text().contains("read-only"));
    // explore: read-only tools, no shell, no writes, no tasks, no memory.
    assert_eq!(
        child[0].tool_names(),
        ["read_file", "list_dir", "grep", "recall", "plan"]
    );
    let parent_tools = parent[0].tool_names();
    assert_eq!(parent_tools.last().map(String::as_str), Some("task"));
    assert!(parent_tools.contains(&"shell".to_owned()));

    // The child's tool output is in the child's request and in no parent
    // request; the parent gets the header line and the final answer.
    assert!(child[1].raw_body.contains("RETRY-POLICY-7731"));
    for r in &parent {
        assert!(!r.raw_body.contains("RETRY-POLICY-7731"), "{}", r.raw_body);
    }
    let ((parent_file, parent_header), (child_file, child_header)) = parent_and_child(&fx);
    let child_id = id_of(&child_file);
    let result = parent[1].tool_results().pop().unwrap();
    assert_eq!(
        result,
        format!(
            "task session {child_id} · profile explore · 2 steps\n\nThe retry policy is in src/retry.rs (three attempts)."
        )
    );

    // The child's file: header linked to the parent and the call, titled
    // `<parent title>.1`, holding the whole exploration.
    let call_id = messages(&parent_file)[1]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(child_header["parent"], json!(id_of(&parent_file)));
    assert_eq!(child_header["parent_call"], json!(call_id));
    assert_eq!(child_header["profile"], "explore");
    assert_eq!(parent_header["title"], "1");
    assert_eq!(child_header["title"], "1.1");
    assert!(parent_header.get("parent").is_none());
    assert_eq!(
        roles(&messages(&child_file)),
        ["user", "assistant", "tool", "assistant"]
    );
    assert!(content(&messages(&child_file)[2]).contains("RETRY-POLICY-7731"));
    assert_consistent(&child_file);
    assert_consistent(&parent_file);

    // Events: task_started / task_completed, and the child's own events
    // carry `task`.
    let events = json_lines(&o.stdout);
    let started = events.iter().find(|e| e["type"] == "task_started").unwrap();
    assert_eq!(
        started,
        &json!({"type": "task_started", "id": call_id, "session": child_id, "profile": "explore", "description": "find the retry policy"})
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "task_completed")
        .unwrap();
    assert_eq!(
        done,
        &json!({"type": "task_completed", "id": call_id, "session": child_id, "steps": 2, "is_error": false})
    );
    let child_call = events
        .iter()
        .find(|e| e["type"] == "tool_call" && e["name"] == "read_file")
        .unwrap();
    assert_eq!(child_call["task"], json!(call_id));
    let parent_call = events
        .iter()
        .find(|e| e["type"] == "tool_call" && e["name"] == "task")
        .unwrap();
    assert!(parent_call.get("task").is_none(), "{parent_call}");
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "turn_completed")
            .count()
            == 1,
        "the child's turn is not a turn of the run"
    );

    // The listing: the parent with one child; `--all` lists the child too;
    // `--json` has `parent`.
    let o = fx.run(&["sessions"], "");
    let table = stdout(&o);
    assert!(table.lines().next().unwrap().contains("TASKS"), "{table}");
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(!table.contains(&child_id), "{table}");
    let o = fx.run(&["sessions", "--all"], "");
    assert!(stdout(&o).contains(&child_id), "{}", stdout(&o));
    let o = fx.run(&["sessions", "--all", "--json"], "");
    let listed: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let c = listed.iter().find(|s| s["id"] == json!(child_id)).unwrap();
    assert_eq!(c["parent"], json!(id_of(&parent_file)));
    let p = listed.iter().find(|s| s["id"] != json!(child_id)).unwrap();
    assert_eq!(
        (p["parent"].clone(), p["children"].clone()),
        (Value::Null, json!(1))
    );

    // `-c` continues the parent, not its newer child.
    fx.fake.push(Reply::text("still here"));
    let o = fx.run(&["run", "-c", "and the timeout?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let last = fx.chats().pop().unwrap();
    assert!(!is_child(&last));
    assert_eq!(
        last.user_texts(),
        ["where is the retry policy?", "and the timeout?"]
    );
}
