//! Hooks (docs/hooks.md) through the real binary against the fake: what
//! each answer does (a blocked `shell` call, `allow` in batch, a blocked
//! prompt, a blocking `Stop`), an untrusted project, a hung hook, the
//! environment, bad config, MCP tools. The fixture here is shared with
//! `hooks_events.rs` and `hooks_compaction.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::PathBuf;
use std::process::Output;

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::{Fx, code, content, messages, roles};
use crate::util::{json_lines, stderr, stdout};

/// A project whose global config has `hooks` (TOML, written as in
/// config.toml) and the model at the fake.
pub(crate) fn hooked(hooks_toml: &str) -> Fx {
    hooked_with(hooks_toml, |c| c)
}

pub(crate) fn hooked_with(
    hooks_toml: &str,
    more: impl FnOnce(eonyx_tests::FakeConfig) -> eonyx_tests::FakeConfig,
) -> Fx {
    let toml = hooks_toml.to_owned();
    Fx::with(move |c| more(c.merge_top_toml(&toml).unwrap()))
}

/// One `[[hooks.EVENT]]` entry running `command` (TOML-escaped here).
pub(crate) fn hook(event: &str, matcher: &str, command: &str) -> String {
    // A JSON string is a TOML basic string.
    let q = |s: &str| serde_json::to_string(s).unwrap();
    format!(
        "[[hooks.{event}]]\nmatcher = {}\nhooks = [{{ type = \"command\", command = {} }}]\n",
        q(matcher),
        q(command)
    )
}

/// The command that runs the project's script `name` (written with
/// [`Fx::write_script`]).
pub(crate) fn script(name: &str) -> String {
    format!("sh \"$EONYX_PROJECT_DIR/{name}\"")
}

impl Fx {
    pub(crate) fn write_script(&self, name: &str, body: &str) {
        self.sb.write(format!("work/{name}"), body);
    }

    pub(crate) fn work_file(&self, name: &str) -> PathBuf {
        self.sb.work.join(name)
    }
}

/// The `hook` events of a `--json` run.
pub(crate) fn hook_events(o: &Output) -> Vec<Value> {
    json_lines(&o.stdout)
        .into_iter()
        .filter(|e| e["type"] == "hook")
        .collect()
}

#[test]
fn exit_2_from_pre_tool_use_blocks_the_shell_command_and_the_model_gets_the_reason() {
    let fx = hooked(&hook(
        "PreToolUse",
        "Bash",
        "echo 'no rm in this repo' >&2; exit 2",
    ));
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch ran.txt"}),
        ))
        .push(Reply::text("ok, I will not"));
    let o = fx.run(&["--allow-shell"], "clean up\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.work_file("ran.txt").exists(), "the blocked command ran");
    let result = fx.chats()[1].messages().last().cloned().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(content(&result).contains("no rm in this repo"), "{result}");
    // One line on stderr says which hook blocked what.
    assert!(
        stderr(&o).contains(
            "PreToolUse hook `echo 'no rm in this repo' >&2; exit 2` blocked: no rm in this repo"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn allow_from_a_claude_code_script_runs_the_command_in_batch_without_allow_shell() {
    // Written for Claude Code: tests tool_name == "Bash" and reads
    // tool_input.command.
    let fx = hooked(&hook("PreToolUse", "Bash", &script("allow.sh")));
    fx.write_script(
        "allow.sh",
        r#"input=$(cat)
if printf '%s' "$input" | grep -q '"tool_name":"Bash"' &&
   printf '%s' "$input" | grep -q '"command":"touch allowed.txt"'; then
  echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe"}}'
fi
"#,
    );
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch allowed.txt"}),
        ))
        .push(Reply::text("done"))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch other.txt"}),
        ))
        .push(Reply::text("denied"));
    let o = fx.run(&["--json"], "make it\nmake another\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(fx.work_file("allowed.txt").exists(), "{}", stderr(&o));
    // A command the hook does not allow: batch denies it as usual.
    assert!(!fx.work_file("other.txt").exists());
    let hooks = hook_events(&o);
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    assert_eq!(hooks[0]["event"], "PreToolUse");
    assert_eq!(hooks[0]["decision"], "allow");
    assert_eq!(hooks[0]["exit_code"], 0);
    assert!(hooks[0]["ms"].is_u64());
    assert!(hooks[0]["command"].as_str().unwrap().contains("allow.sh"));
    assert_eq!(hooks[1]["decision"], Value::Null);
}

#[test]
fn deny_and_updated_input_from_json_answers() {
    let deny = r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"writes go through the formatter"}}'"#;
    let rewrite = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"file_path":"redirected.txt","content":"moved"}}}'"#;
    let fx = hooked(&format!(
        "{}{}",
        hook("PreToolUse", "Edit", deny),
        hook("PreToolUse", "Write", rewrite)
    ));
    fx.sb.write("work/a.txt", "one\n");
    fx.fake
        .push(Reply::tool_call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        ))
        .push(Reply::tool_call(
            "write_file",
            json!({"path": "b.txt", "content": "x\n"}),
        ))
        .push(Reply::text("done"));
    let o = fx.run(&[], "edit and write\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(fx.work_file("a.txt")).unwrap(),
        "one\n"
    );
    let denied = fx.chats()[1].messages().last().cloned().unwrap();
    assert!(
        content(&denied).contains("writes go through the formatter"),
        "{denied}"
    );
    // `updatedInput` (in Claude Code's names) replaced the arguments, and
    // `allow` approved the write in batch.
    assert!(!fx.work_file("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(fx.work_file("redirected.txt")).unwrap(),
        "moved"
    );
}

#[test]
fn a_blocked_prompt_sends_nothing_and_the_next_line_goes_on() {
    let fx = hooked(&hook(
        "UserPromptSubmit",
        "",
        r#"if grep -q password; then echo 'prompt mentions a password' >&2; exit 2; fi"#,
    ));
    fx.fake.push(Reply::text("fine"));
    let o = fx.run(&[], "my password is hunter2\nwhat now?\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let chats = fx.chats();
    assert_eq!(chats.len(), 1, "the blocked prompt was sent");
    assert_eq!(chats[0].user_texts(), ["what now?"]);
    assert!(
        stderr(&o).contains("prompt mentions a password"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "fine\n");
    let saved = messages(&fx.session());
    assert_eq!(roles(&saved), ["user", "assistant"]);
    assert!(!content(&saved[0]).contains("hunter2"));
}

/// `eonyx run --goal` ends its session as a plain run does: the
/// `SessionEnd` hooks run (reason `other`) once the goal's turns are over.
#[test]
fn session_end_hooks_run_after_a_goal_run_as_after_a_plain_run() {
    let fx = hooked(&hook(
        "SessionEnd",
        "",
        "cat >> \"$EONYX_PROJECT_DIR/end.log\"; echo >> \"$EONYX_PROJECT_DIR/end.log\"",
    ));
    let ends = || -> Vec<Value> {
        std::fs::read_to_string(fx.work_file("end.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    fx.fake.push_all([
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "it is reached"}),
        ),
        Reply::text("reached"),
    ]);
    let o = fx.run(&["run", "--goal", "reach the end", "start"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("goal achieved"), "{}", stderr(&o));
    let after_goal = ends();
    assert_eq!(after_goal.len(), 1, "{after_goal:?}");
    assert_eq!(after_goal[0]["hook_event_name"], "SessionEnd");
    assert_eq!(after_goal[0]["reason"], "other");

    fx.fake.push(Reply::text("plain"));
    let o = fx.run(&["run", "a plain turn"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let all = ends();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1]["reason"], "other");
}

#[test]
fn prompt_context_is_appended_to_the_user_message() {
    let fx = hooked(&hook(
        "UserPromptSubmit",
        "",
        "echo 'branch: main, 2 files changed'",
    ));
    fx.fake.push(Reply::text("ok"));
    let o = fx.run(&[], "status?\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let user = fx.chats()[0].messages().last().cloned().unwrap();
    let text = content(&user);
    assert!(text.starts_with("status?"), "{text}");
    assert!(text.contains("branch: main, 2 files changed"), "{text}");
    // The system prompt (the stable prefix) has none of it.
    assert!(!fx.chats()[0].system_text().contains("branch: main"));
}

#[test]
fn a_blocking_stop_hook_adds_a_turn_and_lets_it_stop_the_second_time() {
    let fx = hooked(&hook("Stop", "", &script("stop.sh")));
    fx.write_script(
        "stop.sh",
        r#"if grep -q '"stop_hook_active":true'; then exit 0; fi
echo 'run the tests before you stop' >&2
exit 2
"#,
    );
    fx.fake
        .push(Reply::text("all done"))
        .push(Reply::text("tests pass"));
    let o = fx.run(&[], "fix it\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let chats = fx.chats();
    assert_eq!(chats.len(), 2);
    let last_user = chats[1].last_user_text().unwrap();
    assert!(
        last_user.contains("run the tests before you stop"),
        "{last_user}"
    );
    assert!(stdout(&o).contains("tests pass"), "{}", stdout(&o));
}

#[test]
fn a_stop_hook_that_never_lets_go_is_stopped_after_a_few_blocks() {
    let fx = hooked(&hook("Stop", "", "echo 'keep going' >&2; exit 2"));
    let o = fx.run(&[], "go\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    // The first answer plus one per allowed block.
    // (eonyx_agent::MAX_STOP_BLOCKS = 3.)
    assert_eq!(fx.chats().len(), 1 + 3);
    assert!(stderr(&o).contains("stopping anyway"), "{}", stderr(&o));
}

#[test]
fn an_untrusted_projects_hooks_never_run_and_a_notice_says_how_to_trust_it() {
    let fx = Fx::new();
    fx.sb.write(
        "work/eonyx.json",
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch started"}]}]}}"#,
    );
    fx.fake.push(Reply::text("hi"));
    let o = fx.run(&[], "hello\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.work_file("started").exists(), "an untrusted hook ran");
    let err = stderr(&o);
    assert_eq!(err.matches("hook(s) do not run").count(), 1, "{err}");
    assert!(err.contains("eonyx.json"), "{err}");
    assert!(err.contains("eonyx trust"), "{err}");

    let listed = fx.run(&["hooks"], "");
    assert_eq!(code(&listed), Some(0), "{}", stderr(&listed));
    let out = stdout(&listed);
    assert!(out.contains("SessionStart"), "{out}");
    assert!(out.contains("touch started"), "{out}");
    assert!(out.contains("no: project not trusted"), "{out}");

    // Trusted, they run.
    let t = fx.run(&["trust"], "");
    assert_eq!(code(&t), Some(0), "{}", stderr(&t));
    fx.fake.push(Reply::text("hi"));
    let o = fx.run(&[], "hello\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(fx.work_file("started").exists(), "{}", stderr(&o));
}

#[test]
fn a_hung_hook_is_killed_with_its_children_at_its_timeout() {
    let fx = hooked(
        "[[hooks.SessionStart]]\nhooks = [{ type = \"command\", timeout = 1, command = \"sleep 300 & echo $! > \\\"$EONYX_PROJECT_DIR/child.pid\\\"; wait\" }]\n",
    );
    fx.fake.push(Reply::text("hi"));
    let o = fx.run(&["run", "hello"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("timed out and was killed"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "hi\n");
    let pid = std::fs::read_to_string(fx.work_file("child.pid")).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let mut gone = false;
    for _ in 0..100 {
        let state = std::fs::read_to_string(&stat).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(gone, "the hook's child {} still runs", pid.trim());
}

#[test]
fn a_hook_sees_the_project_dirs_and_no_provider_key() {
    const KEY: &str = "sk-test-HOOK-SECRET-8841";
    const CORP: &str = "corp-HOOK-SECRET-1177";
    let fx = hooked_with(
        &hook(
            "SessionStart",
            "",
            "env > \"$EONYX_PROJECT_DIR/env.txt\"; pwd > \"$EONYX_PROJECT_DIR/pwd.txt\"",
        ),
        |c| c.set("api_key_env", "CORP_LLM_TOKEN"),
    );
    fx.fake.push(Reply::text("hi"));
    let mut cmd = fx.cmd(&["run", "hello"]);
    cmd.env("OPENAI_API_KEY", KEY).env("CORP_LLM_TOKEN", CORP);
    let o = crate::agent::run_with_stdin(cmd, "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let env = std::fs::read_to_string(fx.work_file("env.txt")).unwrap();
    assert!(!env.contains(KEY) && !env.contains(CORP), "{env}");
    assert!(
        !env.contains("OPENAI_API_KEY=") && !env.contains("CORP_LLM_TOKEN="),
        "{env}"
    );
    let root = std::fs::canonicalize(&fx.sb.work).unwrap();
    let root = root.to_str().unwrap();
    assert!(env.contains(&format!("EONYX_PROJECT_DIR={root}")), "{env}");
    assert!(env.contains(&format!("CLAUDE_PROJECT_DIR={root}")), "{env}");
    let pwd = std::fs::read_to_string(fx.work_file("pwd.txt")).unwrap();
    assert_eq!(
        std::fs::canonicalize(pwd.trim()).unwrap().to_str().unwrap(),
        root
    );
}

#[test]
fn bad_hook_config_is_an_error_naming_the_file_and_the_key() {
    for (toml, key) in [
        (
            "[[hooks.PreTooluse]]\nhooks = [{ command = \"true\" }]\n",
            "unknown key `hooks.PreTooluse`; did you mean `PreToolUse`?",
        ),
        (
            "[[hooks.PreToolUse]]\nmatcher = \"Edit(\"\nhooks = [{ command = \"true\" }]\n",
            "hooks.PreToolUse[0].matcher",
        ),
        (
            "[[hooks.Stop]]\nhooks = [{ type = \"command\" }]\n",
            "hooks.Stop[0].hooks[0].command",
        ),
    ] {
        let fx = hooked(toml);
        let o = fx.run(&["hooks"], "");
        assert_eq!(code(&o), Some(2), "{toml}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("config.toml"), "{err}");
        assert!(err.contains(key), "{toml}: {err}");
    }
}

#[test]
fn eonyx_hooks_and_config_list_the_hooks_with_their_file() {
    let fx = hooked(&format!(
        "{}{}",
        hook("PostToolUse", "Edit|Write", "cargo fmt"),
        hook("SessionStart", "compact", "cat notes.md")
    ));
    let o = fx.run(&["hooks"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("EVENT"), "{out}");
    assert!(
        lines[1].starts_with("SessionStart") && lines[1].contains("compact"),
        "{out}"
    );
    assert!(
        lines[2].contains("Edit|Write") && lines[2].contains("cargo fmt"),
        "{out}"
    );
    assert!(
        lines[2].contains("config.toml") && lines[2].ends_with("yes"),
        "{out}"
    );

    let o = fx.run(&["hooks", "--json"], "");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[1]["event"], "PostToolUse");
    assert_eq!(v[1]["timeout"], 60);
    assert_eq!(v[1]["runs"], true);

    let o = fx.run(&["config"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("hooks.PostToolUse[0]"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{}", stdout(&o)));
    assert!(
        line.contains("cargo fmt") && line.contains("config.toml"),
        "{line}"
    );
}

#[test]
fn mcp_tools_go_through_pre_and_post_tool_use_with_their_own_names() {
    use crate::mcp::{server, with_servers_and};
    let allow = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#;
    let toml = format!(
        "{}{}",
        hook("PreToolUse", "mcp__.*", allow),
        hook(
            "PostToolUse",
            "mcp__t__echo",
            "cat > \"$EONYX_PROJECT_DIR/post.json\""
        ),
    );
    let fx = with_servers_and(&server("t", &[], ""), |c| c.merge_top_toml(&toml).unwrap());
    fx.fake
        .push(Reply::tool_call(
            "mcp__t__echo",
            json!({"text": "through the hook"}),
        ))
        .push(Reply::text("done"));
    // Batch, no --allow-mcp: the hook's allow approves the call.
    let o = fx.run(&["--json"], "echo it\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.chats()[1].tool_results(), ["through the hook"]);
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.work_file("post.json")).unwrap()).unwrap();
    assert_eq!(post["tool_name"], "mcp__t__echo");
    assert_eq!(post["tool_input"], json!({"text": "through the hook"}));
    assert_eq!(post["tool_response"]["output"], "through the hook");
    assert_eq!(post["tool_response"]["is_error"], false);
    let events: Vec<String> = hook_events(&o)
        .iter()
        .map(|h| format!("{}:{}", h["event"], h["decision"]))
        .collect();
    assert_eq!(events, ["\"PreToolUse\":\"allow\"", "\"PostToolUse\":null"]);
}
