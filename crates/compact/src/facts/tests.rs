//! The exact facts: gathering, merging, capping and rendering.

use super::*;
use eonyx_core::{Message, ToolCall};
use serde_json::json;

fn call(seq: u64, id: &str, name: &str, args: Value) -> MessageRecord {
    let mut m = Message::assistant("");
    m.tool_calls.push(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    });
    MessageRecord {
        seq,
        ts: String::new(),
        message: m,
    }
}

fn result(seq: u64, id: &str, text: &str) -> MessageRecord {
    MessageRecord {
        seq,
        ts: String::new(),
        message: Message::tool_result(id, text),
    }
}

#[test]
fn gathers_paths_and_commands_with_status() {
    let recs = vec![
        call(1, "a", "read_file", json!({"path": "src/lib.rs"})),
        result(2, "a", "fn main() {}"),
        call(3, "b", "list_dir", json!({"path": "src"})),
        result(4, "b", "lib.rs"),
        call(5, "c", "grep", json!({"pattern": "TODO", "path": "crates"})),
        result(6, "c", "none"),
        call(7, "d", "shell", json!({"command": "cargo test"})),
        result(8, "d", "exit status: 101\nfailures"),
        call(9, "e", "shell", json!({"command": "sleep 99"})),
        result(10, "e", "timed out after 120s"),
        call(11, "f", "shell", json!({"command": "rm -rf /"})),
        result(12, "f", "denied: shell is not allowed in batch runs"),
        call(
            13,
            "g",
            "write_file",
            json!({"path": "out.txt", "content": "x"}),
        ),
        result(14, "g", "changed out.txt (+1 -0 lines)"),
        call(15, "h", "shell", json!({"command": "true"})),
        call(16, "i", "edit_file", json!({"path": "denied.txt"})),
        result(17, "i", "denied: writing files needs approval"),
        call(18, "j", "edit_file", json!({"path": "nomatch.txt"})),
        result(19, "j", "no match for old_string in nomatch.txt"),
    ];
    let f = Facts::from_records(&recs);
    assert_eq!(f.read, vec!["src/lib.rs"]);
    assert_eq!(f.listed, vec!["src"]);
    assert_eq!(
        f.searched,
        vec![SearchFact {
            pattern: "TODO".into(),
            path: "crates".into()
        }]
    );
    assert_eq!(f.written, vec!["out.txt"]);
    let st: Vec<_> = f.commands.iter().map(|c| c.status.as_str()).collect();
    assert_eq!(
        st,
        vec![
            "exit status: 101",
            "timed out after 120s",
            "denied",
            "no result"
        ]
    );
    let text = f.render();
    assert!(text.starts_with(FACTS_HEADING));
    assert!(text.contains("- `cargo test` → exit status: 101"));
    assert!(text.contains("- `TODO` in `crates`"));
    assert!(text.contains("Files changed:\n- `out.txt`"), "{text}");
}

fn error_result(seq: u64, id: &str, text: &str) -> MessageRecord {
    let mut r = result(seq, id, text);
    r.message.is_error = true;
    r
}

#[test]
fn mcp_calls_are_listed_by_tool_name_with_the_latest_status() {
    let recs = vec![
        call(1, "a", "mcp__git__git_status", json!({"repo_path": "."})),
        result(2, "a", "On branch main"),
        call(3, "b", "mcp_describe", json!({"tool": "mcp__time__now"})),
        result(4, "b", "schema"),
        call(
            5,
            "c",
            "mcp_call",
            json!({"tool": "mcp__time__now", "arguments": {}}),
        ),
        error_result(
            6,
            "c",
            "error: MCP tool `now` of server `time` did not answer within 60s (tool_timeout_secs), so the call was cancelled",
        ),
        call(7, "d", "mcp__git__git_status", json!({})),
        error_result(8, "d", "denied: MCP tool calls need approval"),
        call(9, "e", "mcp__web__fetch", json!({})),
    ];
    let f = Facts::from_records(&recs);
    let got: Vec<(&str, &str, u64)> = f
        .mcp
        .iter()
        .map(|c| (c.tool.as_str(), c.status.as_str(), c.calls))
        .collect();
    assert_eq!(
        got,
        [
            (
                "mcp__time__now",
                "error: MCP tool `now` of server `time` did not answer within 60s (tool_timeout_secs), so the call was cancelled",
                1
            ),
            ("mcp__git__git_status", "denied", 2),
            ("mcp__web__fetch", "no result", 1),
        ]
    );
    let text = f.render();
    assert!(
        text.contains("MCP tool calls (latest result):\n- `mcp__time__now` → error: MCP tool"),
        "{text}"
    );
    assert!(
        text.contains("- `mcp__git__git_status` → denied (2 calls)"),
        "{text}"
    );
    // Merged with a later compaction's: counts add up, newest status.
    let later = Facts::from_records(&[
        call(10, "f", "mcp__git__git_status", json!({})),
        result(11, "f", "clean"),
    ]);
    let m = Facts::from_value(Some(&f.to_value())).merge(later);
    let last = m.mcp.last().unwrap();
    assert_eq!(
        (last.tool.as_str(), last.status.as_str(), last.calls),
        ("mcp__git__git_status", "ok", 3)
    );
    // Old records without the list read fine.
    assert!(
        Facts::from_value(Some(&json!({"read": ["a"]})))
            .mcp
            .is_empty()
    );
}

#[test]
fn merge_keeps_old_entries_and_newest_status() {
    let old = Facts::from_records(&[
        call(1, "a", "read_file", json!({"path": "a.rs"})),
        call(2, "b", "shell", json!({"command": "make"})),
        result(3, "b", "exit status: 2"),
    ]);
    let new = Facts::from_records(&[
        call(4, "c", "read_file", json!({"path": "b.rs"})),
        call(5, "d", "read_file", json!({"path": "a.rs"})),
        call(6, "e", "shell", json!({"command": "make"})),
        result(7, "e", "exit status: 0"),
    ]);
    let m = Facts::from_value(Some(&old.to_value())).merge(new);
    assert_eq!(m.read, vec!["a.rs", "b.rs"]);
    assert_eq!(m.commands.len(), 1);
    assert_eq!(m.commands[0].status, "exit status: 0");
}

#[test]
fn lists_are_capped_visibly() {
    let mut f = Facts::default();
    for i in 0..(MAX_ENTRIES + 5) {
        f = f.merge(Facts {
            read: vec![format!("f{i}")],
            ..Facts::default()
        });
    }
    assert_eq!(f.read.len(), MAX_ENTRIES);
    assert_eq!(f.read[0], "f5");
    assert!(f.render().contains("(5 older entries omitted"));
}

#[test]
fn trim_to_bounds_the_section() {
    let mut f = Facts {
        read: (0..100).map(|i| format!("src/file_{i}.rs")).collect(),
        commands: vec![CommandFact {
            command: "make".into(),
            status: "exit status: 0".into(),
        }],
        ..Facts::default()
    };
    f.trim_to(600);
    let r = f.render();
    assert!(r.chars().count() <= 600, "{}", r.len());
    assert!(r.contains("src/file_99.rs") && !r.contains("src/file_0.rs"));
    assert!(r.contains("`make`"));
    assert!(r.contains("older entries omitted"));
}

#[test]
fn tasks_are_listed_exactly_merged_once_per_child_and_never_trimmed() {
    let task = |seq, id: &str, desc: &str| {
        call(
            seq,
            id,
            "task",
            json!({"prompt": "p", "description": desc, "profile": "explore"}),
        )
    };
    let first = Facts::from_records(&[
        task(1, "a", "find the retry policy"),
        result(
            2,
            "a",
            "task session 20260705T091500-1a2b3c4d · profile explore · 3 steps\n\nIn src/retry.rs.",
        ),
        // Refused before any child existed: nothing to list.
        task(3, "b", "bad"),
        result(4, "b", "unknown profile `nope`; profiles: explore, general"),
    ]);
    assert_eq!(
        first.tasks,
        vec![TaskFact {
            session: "20260705T091500-1a2b3c4d".into(),
            profile: "explore".into(),
            description: "find the retry policy".into()
        }]
    );
    let second = Facts::from_records(&[
        task(5, "c", "look again"),
        result(
            6,
            "c",
            "task session 20260705T091500-1a2b3c4d · profile explore · 1 step · interrupted",
        ),
        task(7, "d", "write the fix"),
        result(
            8,
            "d",
            "task session 20260705T091600-00000002 · profile general · 2 steps\n\ndone",
        ),
    ]);
    let mut merged = Facts::from_value(Some(&first.to_value())).merge(second);
    assert_eq!(merged.tasks.len(), 2, "the continued child once");
    assert_eq!(merged.tasks[0].description, "find the retry policy");
    merged.read = (0..300).map(|i| format!("src/f{i}.rs")).collect();
    merged.trim_to(400);
    assert!(merged.read.is_empty() || merged.read.len() < 300);
    let text = merged.render();
    assert!(
        text.contains("- `20260705T091500-1a2b3c4d` (explore): find the retry policy"),
        "{text}"
    );
    assert!(
        text.contains("- `20260705T091600-00000002` (general): write the fix"),
        "{text}"
    );
    // Only tasks left, over the limit: still every one, and no panic.
    let mut only = Facts {
        tasks: merged.tasks.clone(),
        ..Facts::default()
    };
    only.trim_to(10);
    assert_eq!(only.tasks.len(), 2);
    assert!(!only.is_empty());
}

#[test]
fn strip_facts_returns_the_model_text() {
    assert_eq!(
        strip_facts("## Goal\nx\n\n## Exact facts\n- a"),
        "## Goal\nx"
    );
    assert_eq!(strip_facts("## Exact facts\n- a"), "");
    assert_eq!(strip_facts("plain\n"), "plain");
}
