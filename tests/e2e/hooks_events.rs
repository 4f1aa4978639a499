//! Every hook event at its point with its documented stdin fields
//! (docs/hooks.md#input), through a logging hook; and a hook written with
//! the `cchooks` library (PyPI), run unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::collections::BTreeSet;
use std::process::Command;

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::{Fx, code};
use crate::hooks::{hook, hooked_with, script};
use crate::util::{stderr, stdout};

const COMMON: [&str; 4] = ["session_id", "transcript_path", "cwd", "hook_event_name"];

/// The fields of each event besides [`COMMON`].
fn own_fields(event: &str) -> &'static [&'static str] {
    match event {
        "SessionStart" => &["source"],
        "UserPromptSubmit" => &["prompt"],
        "PreToolUse" => &["tool_name", "tool_input", "tool_use_id"],
        "PostToolUse" => &["tool_name", "tool_input", "tool_use_id", "tool_response"],
        "PreCompact" => &["trigger", "custom_instructions"],
        "PostCompact" => &["trigger", "compact_summary"],
        "Stop" | "SubagentStop" => &["stop_hook_active"],
        "Notification" => &["message"],
        "SessionEnd" => &["reason"],
        _ => &[],
    }
}

/// A logging hook on every event: each input one line of `hooks.log`.
fn logging() -> Fx {
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "Notification",
        "SessionEnd",
    ];
    let toml: String = events
        .iter()
        .map(|e| hook(e, "", &script("log.sh")))
        .collect();
    let fx = hooked_with(&toml, |c| {
        c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap()
    });
    fx.write_script(
        "log.sh",
        "cat >> \"$EONYX_PROJECT_DIR/hooks.log\"\necho >> \"$EONYX_PROJECT_DIR/hooks.log\"\n",
    );
    fx
}

fn log(fx: &Fx) -> Vec<Value> {
    std::fs::read_to_string(fx.work_file("hooks.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn check_fields(entry: &Value) {
    let event = entry["hook_event_name"].as_str().unwrap();
    let keys: BTreeSet<&str> = entry
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let want: BTreeSet<&str> = COMMON.iter().chain(own_fields(event)).copied().collect();
    assert_eq!(keys, want, "{event}: {entry}");
}

#[test]
fn every_event_fires_at_its_point_with_its_fields() {
    let fx = logging();
    fx.fake.set_summarizer(crate::compaction::echo_summary);
    fx.fake.push_all([
        Reply::tool_call("shell", json!({"command": "echo from-shell"})),
        Reply::text("ran it"),
        Reply::tool_call(
            "task",
            json!({"prompt": "look around", "description": "explore"}),
        ),
        Reply::text("child answer"),
        Reply::text("delegated"),
        Reply::text("second session"),
    ]);
    let input = "run it\ndelegate\n/compact keep the tests\n/new\nhello again\n";
    let o = fx.run(&["--allow-shell", "--json"], input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let entries = log(&fx);
    let names: Vec<String> = entries
        .iter()
        .map(|e| {
            let n = e["hook_event_name"].as_str().unwrap();
            match (e.get("source"), e.get("tool_name"), e.get("reason")) {
                (Some(s), _, _) => format!("{n}:{}", s.as_str().unwrap()),
                (_, Some(t), _) => format!("{n}:{}", t.as_str().unwrap()),
                (_, _, Some(r)) => format!("{n}:{}", r.as_str().unwrap()),
                _ => n.to_owned(),
            }
        })
        .collect();
    assert_eq!(
        names,
        [
            "SessionStart:startup",
            "UserPromptSubmit",
            "PreToolUse:shell",
            "PostToolUse:shell",
            "Stop",
            "UserPromptSubmit",
            "PreToolUse:task",
            "SubagentStart",
            "SubagentStop",
            "PostToolUse:task",
            "Stop",
            "PreCompact",
            "PostCompact",
            "SessionStart:compact",
            "SessionEnd:clear",
            "SessionStart:clear",
            "UserPromptSubmit",
            "Stop",
            "SessionEnd:other",
        ],
        "{entries:#?}"
    );
    for e in &entries {
        check_fields(e);
    }
    let root = std::fs::canonicalize(&fx.sb.work).unwrap();
    let by = |n: &'static str| entries.iter().filter(move |e| e["hook_event_name"] == n);
    for e in &entries {
        assert_eq!(
            std::fs::canonicalize(e["cwd"].as_str().unwrap()).unwrap(),
            root
        );
        let id = e["session_id"].as_str().unwrap();
        assert!(
            e["transcript_path"]
                .as_str()
                .unwrap()
                .ends_with(&format!("{id}.jsonl"))
        );
    }
    let prompt = by("UserPromptSubmit").next().unwrap();
    assert_eq!(prompt["prompt"], "run it");
    let pre = by("PreToolUse").next().unwrap();
    assert_eq!(pre["tool_input"], json!({"command": "echo from-shell"}));
    let post = by("PostToolUse").next().unwrap();
    assert_eq!(post["tool_use_id"], pre["tool_use_id"]);
    let resp = &post["tool_response"];
    assert_eq!(resp["exit_code"], 0);
    assert_eq!(resp["is_error"], false);
    assert!(
        resp["stdout"].as_str().unwrap().contains("from-shell"),
        "{resp}"
    );
    assert!(resp["stderr"].is_string());
    let task_post = by("PostToolUse").nth(1).unwrap();
    assert!(
        task_post["tool_response"]["output"]
            .as_str()
            .unwrap()
            .contains("child answer")
    );
    assert_eq!(by("Stop").next().unwrap()["stop_hook_active"], false);
    assert_eq!(
        by("SubagentStop").next().unwrap()["stop_hook_active"],
        false
    );
    let pre_compact = by("PreCompact").next().unwrap();
    assert_eq!(pre_compact["trigger"], "manual");
    assert_eq!(pre_compact["custom_instructions"], "keep the tests");
    let post_compact = by("PostCompact").next().unwrap();
    assert_eq!(post_compact["trigger"], "manual");
    assert!(
        post_compact["compact_summary"]
            .as_str()
            .unwrap()
            .contains("Active goal")
    );
    // `/new` switched sessions: the second session's events carry its id.
    let first = entries[0]["session_id"].as_str().unwrap();
    let last = entries.last().unwrap()["session_id"].as_str().unwrap();
    assert_ne!(first, last);
    // The JSON events report every run.
    let runs = crate::hooks::hook_events(&o);
    assert_eq!(runs.len(), entries.len());
    assert!(runs.iter().all(|r| r["exit_code"] == 0), "{runs:?}");
}

/// An automatic compaction's `PreCompact` says `auto` and `""`.
#[test]
fn an_automatic_compaction_sends_auto_and_empty_instructions() {
    let fx = logging();
    fx.fake.set_summarizer(crate::compaction::echo_summary);
    let lines: Vec<String> = (1..=4).map(|n| crate::compaction::line(n, 900)).collect();
    let mut cmd = fx.cmd(&[]);
    cmd.env("EONYX_AUTO_COMPACT_TOKENS", "1500");
    let o = crate::agent::run_with_stdin(cmd, &crate::util::input_lines(&lines));
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let entries = log(&fx);
    let pre = entries
        .iter()
        .find(|e| e["hook_event_name"] == "PreCompact")
        .unwrap_or_else(|| panic!("{entries:#?}"));
    check_fields(pre);
    assert_eq!(pre["trigger"], "auto");
    assert_eq!(pre["custom_instructions"], "");
    assert!(
        entries
            .iter()
            .any(|e| e["hook_event_name"] == "SessionStart" && e["source"] == "compact")
    );
}

/// Python with the `cchooks` library installed in a fresh venv, or why not.
fn cchooks_python(dir: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let venv = dir.join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .map_err(|e| format!("no python3 ({e})"))?;
    if !made.status.success() {
        return Err(format!(
            "python3 -m venv failed: {}",
            String::from_utf8_lossy(&made.stderr)
        ));
    }
    let python = venv.join("bin/python");
    let pip = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "cchooks"])
        .output()
        .map_err(|e| format!("pip did not start ({e})"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install cchooks failed (offline?): {}",
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    Ok(python)
}

#[test]
fn a_hook_written_with_cchooks_runs_unchanged() {
    let tools = tempfile::tempdir().unwrap();
    let python = match cchooks_python(tools.path()) {
        Ok(p) => p,
        Err(why) => {
            // Skipped, and said so: no Python or no network here.
            eprintln!("SKIPPED a_hook_written_with_cchooks_runs_unchanged: {why}");
            return;
        }
    };
    // A PreToolUse guard as cchooks' README writes one: Claude Code's
    // tool and argument names, its output helpers.
    let guard = r#"from cchooks import create_context, PreToolUseContext

c = create_context()
assert isinstance(c, PreToolUseContext)
if c.tool_name == "Write" and c.tool_input.get("file_path", "").endswith(".env"):
    c.output.deny("never write .env files")
elif c.tool_name == "Bash" and "rm -rf" in c.tool_input.get("command", ""):
    c.output.exit_block("no rm -rf here")
else:
    c.output.allow("fine")
"#;
    let cmd = format!("\"{}\" \"$EONYX_PROJECT_DIR/guard.py\"", python.display());
    let fx = hooked_with(&hook("PreToolUse", "Write|Bash", &cmd), |c| c);
    fx.sb.write("work/guard.py", guard);
    fx.fake.push_all([
        Reply::tool_call(
            "write_file",
            json!({"path": "prod.env", "content": "X=1\n"}),
        ),
        Reply::tool_call("shell", json!({"command": "rm -rf build"})),
        Reply::tool_call("shell", json!({"command": "touch ok.txt"})),
        Reply::text("done"),
    ]);
    std::fs::create_dir_all(fx.work_file("build")).unwrap();
    let o = fx.run(&[], "go\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.work_file("prod.env").exists(), "{}", stderr(&o));
    assert!(fx.work_file("build").exists(), "{}", stderr(&o));
    assert!(
        fx.work_file("ok.txt").exists(),
        "allow ran it in batch: {}",
        stderr(&o)
    );
    let results = fx.chats().last().unwrap().tool_results();
    assert!(results[0].contains("never write .env files"), "{results:?}");
    assert!(results[1].contains("no rm -rf here"), "{results:?}");
    assert_eq!(stdout(&o), "done\n");
}

#[test]
fn the_repl_runs_notification_when_it_asks_and_lists_the_hooks() {
    use crate::agent_repl::{prompt_count, start_new_repl};
    let toml = format!(
        "{}{}{}",
        hook(
            "Notification",
            "",
            "cat > \"$EONYX_PROJECT_DIR/notify.json\""
        ),
        hook("SessionEnd", "", "cat > \"$EONYX_PROJECT_DIR/end.json\""),
        hook(
            "PreToolUse",
            "Bash",
            "if grep -q forbidden; then echo 'not that one' >&2; exit 2; fi"
        ),
    );
    let fx = hooked_with(&toml, |c| c);
    fx.fake.push_all([
        Reply::tool_call("shell", json!({"command": "touch asked.txt"})),
        Reply::text("ok, not run"),
        Reply::tool_call("shell", json!({"command": "touch forbidden.txt"})),
        Reply::text("blocked"),
    ]);
    let tmux = start_new_repl(&fx);
    tmux.send("make asked.txt");
    tmux.wait_pane("the question", |p| p.contains("[a]lways"));
    let notify = fx.work_file("notify.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&notify).is_ok_and(|t| t.ends_with('}')) {
        assert!(
            std::time::Instant::now() < deadline,
            "no Notification hook ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let n: Value = serde_json::from_str(&std::fs::read_to_string(&notify).unwrap()).unwrap();
    check_fields(&n);
    assert!(
        n["message"].as_str().unwrap().contains("touch asked.txt"),
        "{n}"
    );
    tmux.send_until("n", "the answer", "ok, not run", 2);

    // A blocked call: one line on stderr, no question.
    tmux.send("make forbidden.txt");
    let pane = tmux.wait_pane("the block", |p| {
        p.contains("blocked") && prompt_count(p) >= 3
    });
    assert!(pane.contains("PreToolUse hook"), "{pane}");
    assert!(pane.contains("not that one"), "{pane}");
    assert!(!fx.work_file("forbidden.txt").exists());

    tmux.send("/hooks");
    tmux.wait_pane("the listing", |p| {
        p.contains("EVENT") && p.contains("Notification")
    });
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    let end: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.work_file("end.json")).unwrap()).unwrap();
    check_fields(&end);
    assert_eq!(end["reason"], "prompt_input_exit");
}
