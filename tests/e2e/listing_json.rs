//! `--json` listings written as they are produced (issue 45 part 5):
//! `sessions --json` and `skills --json` come out byte for byte as the
//! whole document built in memory with its keys sorted and pretty-printed
//! (what they were before), with every kind of field: child sessions,
//! costs, titles that need escaping, an empty listing; `memory --json`
//! and `memory review --json` byte for byte as that document on one line.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use serde_json::Value;

use crate::agent::{Fx, code};
use crate::util::{stderr, stdout};

/// `text` as the old listing wrote it: parsed, keys sorted, pretty.
fn sorted_pretty(text: &str) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    v.sort_all_objects();
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

fn session_file(fx: &Fx, id: &str, header_extra: &str, title: &str, usage: bool) {
    let title = serde_json::to_string(title).unwrap();
    let usage = if usage {
        r#","usage":{"prompt_tokens":1200,"completion_tokens":40,"cached_tokens":200}"#
    } else {
        ""
    };
    fx.sb.write(
        format!("data/sessions/{id}.jsonl"),
        format!(
            concat!(
                r#"{{"type":"session","version":1,"id":"{id}","title":{title},"created":"2025-06-15T12:00:00Z","cwd":"/p/src","project":"/p"{extra}}}"#,
                "\n",
                r#"{{"type":"message","seq":1,"ts":"2025-06-15T12:01:00Z","role":"user","content":"hi"}}"#,
                "\n",
                r#"{{"type":"message","seq":2,"ts":"2025-06-15T12:02:00Z","role":"assistant","content":"hello"{usage}}}"#,
                "\n",
            ),
            id = id,
            title = title,
            extra = header_extra,
            usage = usage,
        ),
    );
}

#[test]
fn json_listings_are_byte_identical_to_the_sorted_document() {
    let fx = Fx::with(|c| {
        c.merge_model_toml("pricing = { input = 3.0, output = 15.0 }\n")
            .unwrap()
    });
    let empty = fx.run(&["sessions", "--json"], "");
    assert_eq!(code(&empty), Some(0), "{}", stderr(&empty));
    assert_eq!(stdout(&empty), "[]\n");

    let parent = "20250615T120000-00000001";
    session_file(&fx, parent, r#","model":"fake""#, "plain", true);
    session_file(
        &fx,
        "20250615T120001-00000002",
        &format!(r#","parent":"{parent}","parent_call":"call_1","profile":"explore""#),
        "1.1",
        false,
    );
    session_file(
        &fx,
        "20250615T120002-00000003",
        "",
        "quotes \" back \\ tab \t ünïcödé ✓ </script> 🦀",
        false,
    );
    for args in [
        &["sessions", "--json"][..],
        &["sessions", "--json", "--all"],
        &["sessions", "--json", "--search", "hello"],
        &["sessions", "--json", "--limit", "1"],
    ] {
        let o = fx.run(args, "");
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(out, sorted_pretty(&out), "{args:?}");
        assert!(out.starts_with("[\n  {\n    \"children\": "), "{out}");
    }
    let all = stdout(&fx.run(&["sessions", "--json", "--all"], ""));
    let listed: Vec<Value> = serde_json::from_str(&all).unwrap();
    assert_eq!(listed.len(), 3);
    let with_cost = listed.iter().find(|s| s["id"] == parent).unwrap();
    assert!(with_cost["cost_usd"].is_f64(), "{with_cost}");
    let child = listed.iter().find(|s| s["profile"] == "explore").unwrap();
    assert_eq!(child["parent"], parent);

    fx.sb.write(
        "work/.agents/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Ship it \"now\"\n---\n\nSteps.\n",
    );
    let o = fx.run(&["skills", "--json"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out, sorted_pretty(&out));
    assert!(out.contains("\"name\": \"deploy\""), "{out}");
}

#[test]
fn memory_json_is_byte_identical_to_the_sorted_one_line_document() {
    let fx = Fx::new();
    let run = |args: &[&str]| {
        let o = fx.run(args, "");
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(run(&["memory", "--json"]), "[]\n");
    run(&["memory", "add", "Deploys go through `make ship`."]);
    run(&[
        "memory",
        "add",
        "--global",
        "quotes \" back \\ tab \t ünïcödé ✓ </script> 🦀",
    ]);
    // A line written by hand that does not parse: its id, date and
    // session are null.
    let global = fx.sb.data.join("memory/global.md");
    let mut text = std::fs::read_to_string(&global).unwrap();
    text.push_str("- written by hand, no id\n");
    std::fs::write(&global, text).unwrap();

    let out = run(&["memory", "--json"]);
    let mut v: Value = serde_json::from_str(&out).unwrap();
    v.sort_all_objects();
    assert_eq!(out, serde_json::to_string(&v).unwrap() + "\n");
    assert_eq!(out.lines().count(), 1, "{out}");
    let entries = v.as_array().unwrap();
    assert_eq!(entries.len(), 3, "{out}");
    assert!(entries[0]["id"].is_null(), "{out}");
    assert_eq!(entries[1]["scope"], "global", "{out}");
    assert_eq!(entries[2]["scope"], "project", "{out}");
    assert!(
        out.starts_with(r#"[{"created":null,"id":null,"scope":"global","session":null,"text":"#),
        "{out}"
    );
}

#[test]
fn memory_review_json_is_byte_identical_to_the_sorted_one_line_document() {
    let fx = Fx::new();
    let run = |args: &[&str]| {
        let o = fx.run(args, "");
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(run(&["memory", "review", "--json"]), "[]\n");
    // Three proposals waiting in the inbox, one of another project (not
    // listed), one whose evidence does not exist (`seq` null), one with a
    // text and title that need escaping.
    let project = std::fs::canonicalize(&fx.sb.work).unwrap();
    let project = project.to_str().unwrap();
    let state = serde_json::json!({"proposals": [
        {"id": "k3f", "text": "We use pnpm, never npm", "scope": "project",
         "session": "20261101T100001-a0000001", "seq": 3, "title": "setup",
         "project": project, "proposed": "2026-11-01T10:00:00Z"},
        {"id": "x9q", "text": "elsewhere", "scope": "project",
         "session": "20261101T100002-a0000002", "seq": 1, "title": "other",
         "project": "/somewhere/else", "proposed": "2026-11-01T10:00:00Z"},
        {"id": "b7z", "text": "quotes \" back \\ tab \t ünïcödé ✓ </script> 🦀", "scope": "global",
         "session": "20261101T100003-a0000003", "seq": null, "title": "t \"q\"",
         "project": project, "proposed": "2026-11-01T10:01:00Z"},
    ]});
    fx.sb.write(
        "data/mining/state.json",
        serde_json::to_string_pretty(&state).unwrap(),
    );

    let out = run(&["memory", "review", "--json"]);
    let mut v: Value = serde_json::from_str(&out).unwrap();
    v.sort_all_objects();
    assert_eq!(out, serde_json::to_string(&v).unwrap() + "\n");
    assert_eq!(out.lines().count(), 1, "{out}");
    let listed = v.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{out}");
    assert_eq!(listed[0]["id"], "k3f", "{out}");
    assert!(listed[1]["seq"].is_null(), "{out}");
    assert!(
        out.starts_with(r#"[{"id":"k3f","scope":"project","seq":3,"session":"20261101T100001-a0000001","text":"We use pnpm, never npm","title":"setup"},"#),
        "{out}"
    );
}
