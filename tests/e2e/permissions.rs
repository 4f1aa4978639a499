//! Permission rules (docs/tools.md#permission-rules) through the real
//! binary against the fake: what runs in batch without `--allow-shell`,
//! what never slips through a prefix, deny over allow and over the flag,
//! exact rules, write globs, an untrusted project's rules, bad rules, and
//! `eonyx permissions`. The REPL's `p` is in `permissions_repl.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::*;
use crate::util::{stderr, stdout};

/// A project whose global config.toml has `permissions_toml` (a
/// `[permissions]` table as written).
pub(crate) fn with_rules(permissions_toml: &str) -> Fx {
    let toml = permissions_toml.to_owned();
    Fx::with(move |c| c.merge_top_toml(&toml).unwrap())
}

/// Runs a batch turn in which the model calls `shell` once per command
/// (all in one step), with `flags`; returns each call's result text.
pub(crate) fn shell_calls(fx: &Fx, flags: &[&str], commands: &[&str]) -> Vec<String> {
    fx.fake
        .push(Reply::tool_calls(
            commands.iter().map(|c| ("shell", json!({ "command": c }))),
        ))
        .push(Reply::text("done"));
    let mut args = flags.to_vec();
    args.extend(["run", "go"]);
    let o = fx.run(&args, "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    tool_results(fx, commands.len())
}

/// The last `n` tool results the model received.
fn tool_results(fx: &Fx, n: usize) -> Vec<String> {
    let chats = fx.chats();
    let msgs = chats.last().unwrap().messages();
    let tools: Vec<String> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(content)
        .collect();
    assert!(tools.len() >= n, "{tools:?}");
    tools[tools.len() - n..].to_vec()
}

#[test]
fn an_allowed_prefix_runs_in_batch_and_nothing_chained_to_it_does() {
    let fx = with_rules("[permissions]\nallow = [\"shell(echo hi:*)\", \"shell(touch made:*)\"]\n");
    let results = shell_calls(&fx, &[], &["touch made", "echo hi there"]);
    assert!(results[0].starts_with("exit status: 0"), "{results:?}");
    assert!(results[1].contains("hi there"), "{results:?}");
    assert!(fx.sb.work.join("made").exists());

    let sneaky = [
        "echo hi && touch x1",
        "echo hi; touch x2",
        "echo hi touch x3 | sh",
        "echo hi $(touch x4)",
        "echo hi `touch x5`",
        "echo hi > x6",
        "echo hi & touch x7",
        "echo hi\ntouch x8",
        "echo hi 'unbalanced; touch x9",
    ];
    let results = shell_calls(&fx, &[], &sneaky);
    for (i, (line, result)) in sneaky.iter().zip(&results).enumerate() {
        assert!(
            !fx.sb.work.join(format!("x{}", i + 1)).exists(),
            "{line:?} ran: {result}"
        );
        assert!(result.starts_with("denied"), "{line:?}: {result}");
        assert!(result.contains("--allow-shell"), "{line:?}: {result}");
    }
    // Whole words: `echo hix` is not `echo hi`.
    let results = shell_calls(&fx, &[], &["echo hix"]);
    assert!(results[0].starts_with("denied"), "{results:?}");
}

#[test]
fn a_deny_rule_holds_under_allow_shell_and_beats_allow() {
    let fx = with_rules("[permissions]\nallow = [\"shell\"]\ndeny = [\"shell(rm:*)\"]\n");
    fx.sb.write("work/keep.txt", "keep\n");
    let results = shell_calls(
        &fx,
        &["--allow-shell"],
        &["rm keep.txt", "ls && rm -f keep.txt", "touch ok"],
    );
    assert!(fx.sb.work.join("keep.txt").exists(), "{results:?}");
    for r in &results[..2] {
        assert!(
            r.starts_with("denied by the permission rule `shell(rm:*)`"),
            "{r}"
        );
        assert!(r.contains("config.toml"), "{r}");
    }
    assert!(results[2].starts_with("exit status: 0"), "{results:?}");
    // Without the flag: bare `shell` allows the rest, deny still wins.
    let results = shell_calls(&fx, &[], &["rm keep.txt", "touch ok2"]);
    assert!(fx.sb.work.join("keep.txt").exists(), "{results:?}");
    assert!(fx.sb.work.join("ok2").exists(), "{results:?}");
}

#[test]
fn an_ask_rule_is_denied_in_batch_even_with_allow_shell() {
    let fx = with_rules("[permissions]\nask = [\"shell(touch asked:*)\"]\n");
    let results = shell_calls(&fx, &["--allow-shell"], &["touch asked", "touch free"]);
    assert!(!fx.sb.work.join("asked").exists(), "{results:?}");
    assert!(fx.sb.work.join("free").exists(), "{results:?}");
    assert!(results[0].contains("`shell(touch asked:*)`"), "{results:?}");
    assert!(results[0].contains("no one to ask"), "{results:?}");
}

#[test]
fn an_exact_rule_matches_exactly() {
    let fx = with_rules("[permissions]\nallow = [\"shell(touch a.txt)\"]\n");
    let results = shell_calls(&fx, &[], &["touch a.txt b.txt", "touch  a.txt"]);
    assert!(!fx.sb.work.join("b.txt").exists(), "{results:?}");
    assert!(results[0].starts_with("denied"), "{results:?}");
    // Whitespace runs count as one space.
    assert!(results[1].starts_with("exit status: 0"), "{results:?}");
    assert!(fx.sb.work.join("a.txt").exists());
}

#[test]
fn a_write_glob_allows_inside_and_not_a_path_that_leaves_it() {
    let fx = with_rules("[permissions]\nallow = [\"write(src/**)\"]\n");
    std::fs::create_dir_all(fx.sb.work.join("src")).unwrap();
    std::fs::create_dir_all(fx.sb.work.join("docs")).unwrap();
    fx.fake
        .push(Reply::tool_calls([
            (
                "write_file",
                json!({"path": "src/lib/a.rs", "content": "inside\n"}),
            ),
            (
                "write_file",
                json!({"path": "src/../docs/b.md", "content": "outside\n"}),
            ),
        ]))
        .push(Reply::text("done"));
    let o = fx.run(&["run", "write"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let results = tool_results(&fx, 2);
    assert_eq!(
        std::fs::read_to_string(fx.sb.work.join("src/lib/a.rs")).unwrap(),
        "inside\n",
        "{results:?}"
    );
    assert!(!fx.sb.work.join("docs/b.md").exists(), "{results:?}");
    assert!(results[1].starts_with("denied"), "{results:?}");
}

#[test]
fn an_untrusted_projects_allow_rules_do_nothing_until_it_is_trusted() {
    let fx = Fx::new();
    fx.sb.write(
        "work/eonyx.json",
        r#"{"permissions": {"allow": ["shell(touch allowed:*)"], "deny": ["shell(rm:*)"]}}"#,
    );
    fx.sb.write("work/keep.txt", "keep\n");
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch allowed"}),
        ))
        .push(Reply::text("done"));
    let o = fx.run(&["run", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!fx.sb.work.join("allowed").exists());
    let err = stderr(&o);
    assert_eq!(
        err.matches("permission rule(s) are ignored").count(),
        1,
        "{err}"
    );
    assert!(err.contains("eonyx trust"), "{err}");

    // Its deny applies, even with --allow-shell.
    let results = shell_calls(&fx, &["--allow-shell"], &["rm keep.txt"]);
    assert!(fx.sb.work.join("keep.txt").exists(), "{results:?}");
    assert!(results[0].contains("eonyx.json"), "{results:?}");

    let listed = fx.run(&["permissions"], "");
    assert_eq!(code(&listed), Some(0), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("no: project not trusted"),
        "{}",
        stdout(&listed)
    );

    let t = fx.run(&["trust"], "");
    assert_eq!(code(&t), Some(0), "{}", stderr(&t));
    let results = shell_calls(&fx, &[], &["touch allowed"]);
    assert!(fx.sb.work.join("allowed").exists(), "{results:?}");
}

#[test]
fn a_rule_that_does_not_parse_is_a_config_error_naming_file_and_rule() {
    for (rule, says) in [
        ("bash(ls)", "unknown tool `bash`"),
        ("shell(ls", "unbalanced parentheses"),
        ("shell(:*)", "empty prefix"),
    ] {
        let fx = with_rules(&format!("[permissions]\ndeny = [{rule:?}]\n"));
        let o = fx.run(&["run", "hi"], "");
        assert_eq!(code(&o), Some(2), "{rule}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("config.toml"), "{err}");
        assert!(err.contains(&format!("{rule:?}")), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(fx.chats().is_empty());
    }
}

#[test]
fn permissions_lists_every_rule_numbered_and_forget_names_the_file_to_edit() {
    let fx =
        with_rules("[permissions]\nallow = [\"shell(cargo test:*)\"]\ndeny = [\"shell(rm:*)\"]\n");
    fx.sb.write(
        "work/eonyx.json",
        r#"{"permissions": {"ask": ["write(docs/**)"]}}"#,
    );
    let o = fx.run(&["permissions", "--json"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    assert_eq!(rows[0]["number"], 1);
    assert_eq!(rows[0]["list"], "allow");
    assert_eq!(rows[0]["rule"], "shell(cargo test:*)");
    assert!(rows[0]["file"].as_str().unwrap().ends_with("config.toml"));
    assert_eq!(rows[1]["list"], "deny");
    assert_eq!(rows[2]["list"], "ask");
    assert!(rows[2]["file"].as_str().unwrap().ends_with("eonyx.json"));
    assert_eq!(rows[2]["applies"], true);

    let o = fx.run(&["permissions"], "");
    let out = stdout(&o);
    assert!(out.lines().next().unwrap().starts_with("#  LIST"), "{out}");
    assert!(out.contains("shell(rm:*)"), "{out}");

    let o = fx.run(&["permissions", "forget", "2"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("permissions.deny"), "{err}");
    assert!(err.contains("config.toml"), "{err}");
    assert!(err.contains("edit that file"), "{err}");

    let o = fx.run(&["permissions", "forget", "9"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("there is no permission rule 9"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_hooks_allow_never_passes_a_deny_rule_and_its_deny_beats_an_allow_rule() {
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    let rules = "[permissions]\nallow = [\"shell(touch denied-by-hook:*)\"]\nask = [\"shell(touch asked:*)\"]\ndeny = [\"shell(rm:*)\"]\n";
    let fx = with_rules(&format!(
        "{rules}{}",
        crate::hooks::hook("PreToolUse", "shell", allow)
    ));
    fx.sb.write("work/keep.txt", "keep\n");
    // The hook allows everything: the deny rule still holds; the ask rule
    // is answered by the hook (nothing is asked in batch).
    let results = shell_calls(&fx, &[], &["rm keep.txt", "touch asked"]);
    assert!(fx.sb.work.join("keep.txt").exists(), "{results:?}");
    assert!(results[0].contains("`shell(rm:*)`"), "{results:?}");
    assert!(fx.sb.work.join("asked").exists(), "{results:?}");

    let deny = r#"echo 'not this one' >&2; exit 2"#;
    let fx = with_rules(&format!(
        "{rules}{}",
        crate::hooks::hook("PreToolUse", "shell", deny)
    ));
    let results = shell_calls(&fx, &["--allow-shell"], &["touch denied-by-hook"]);
    assert!(!fx.sb.work.join("denied-by-hook").exists(), "{results:?}");
    assert!(results[0].contains("not this one"), "{results:?}");
}

/// Saves `rule` in the project's rule file under the data dir, as `p` in
/// the REPL does.
fn save_rule(fx: &Fx, list: eonyx_core::permissions::RuleList, rule: &str) {
    let work = camino::Utf8PathBuf::from_path_buf(fx.sb.work.canonicalize().unwrap()).unwrap();
    let data = camino::Utf8PathBuf::from_path_buf(fx.sb.data.clone()).unwrap();
    let root = eonyx_config::paths::find_project(&work).root;
    let file = eonyx_config::permissions::saved_path(&data, &root);
    assert!(eonyx_config::permissions::save_rule(&file, &root, list, rule).unwrap());
}

#[test]
fn slash_permissions_lists_and_forgets_in_a_batch() {
    use eonyx_core::permissions::RuleList;
    let fx = with_rules("[permissions]\ndeny = [\"shell(rm:*)\"]\n");
    save_rule(&fx, RuleList::Allow, "shell(echo hello:*)");
    let o = fx.run(
        &["--new"],
        "/permissions\n/permissions forget 1\n/permissions forget 9\n/permissions forget x\n/permissions forget 2\n/permissions\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    // Listed as `eonyx permissions` numbers them: config first, saved next.
    let listing: Vec<&str> = err.lines().filter(|l| l.contains("shell(")).collect();
    assert!(
        listing[0].starts_with("1 ") && listing[0].contains("shell(rm:*)"),
        "{err}"
    );
    assert!(
        listing[1].starts_with("2 ") && listing[1].contains("(saved)"),
        "{err}"
    );
    assert!(err.contains("#  LIST"), "{err}");
    // A config rule names the file to edit; a bad number or argument is
    // declined; the saved rule is forgotten, on disk too.
    assert!(err.contains("`permissions.deny` list of"), "{err}");
    assert!(err.contains("edit that file"), "{err}");
    assert!(err.contains("there is no permission rule 9"), "{err}");
    assert!(err.contains("usage: /permissions [forget N]"), "{err}");
    assert!(
        err.contains("forgot rule 2: allow `shell(echo hello:*)`"),
        "{err}"
    );
    let o = fx.run(&["permissions", "--json"], "");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["rule"], "shell(rm:*)");
}

#[test]
fn slash_permissions_lists_and_forgets_in_an_acp_session() {
    use eonyx_core::permissions::RuleList;
    let fx = with_rules("[permissions]\ndeny = [\"shell(rm:*)\"]\n");
    save_rule(&fx, RuleList::Ask, "shell(git push:*)");
    let (mut c, s) = crate::acp_util::started(&fx);
    let mut said = |line: &str| c.said(&s, line);
    let list = said("/permissions");
    assert!(list.contains("shell(rm:*)"), "{list}");
    assert!(list.contains("shell(git push:*)"), "{list}");
    assert!(list.contains("(saved)"), "{list}");
    let t = said("/permissions forget 1");
    assert!(t.contains("edit that file"), "{t}");
    let t = said("/permissions forget 2");
    assert!(t.contains("forgot rule 2: ask `shell(git push:*)`"), "{t}");
    let list = said("/permissions");
    assert!(!list.contains("git push"), "{list}");
    c.finish_ok();
    assert!(
        fx.agent_requests().is_empty(),
        "a command reached the model"
    );
}

#[test]
fn a_deny_read_rule_holds_inside_the_project_whatever_the_flags() {
    let fx =
        with_rules("[permissions]\ndeny = [\"read(secret/**)\"]\nask = [\"read(notes/**)\"]\n");
    fx.sb.write("work/secret/key.txt", "TOPSECRET-VALUE\n");
    fx.sb.write("work/notes/todo.txt", "ASKED-NOTE-BODY\n");
    fx.sb.write("work/open.txt", "visible text\n");
    fx.fake
        .push(Reply::tool_calls([
            ("read_file", json!({ "path": "secret/key.txt" })),
            ("read_file", json!({ "path": "src/../secret/key.txt" })),
            ("grep", json!({ "pattern": "TOPSECRET", "path": "secret" })),
            ("read_file", json!({ "path": "notes/todo.txt" })),
            ("read_file", json!({ "path": "open.txt" })),
            ("grep", json!({ "pattern": "TOPSECRET|ASKED" })),
        ]))
        .push(Reply::text("done"));
    let o = fx.run(&["--allow-shell", "--allow-write", "run", "read them"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let results = tool_results(&fx, 6);
    for r in &results[..2] {
        assert!(
            r.contains("denied by the permission rule `read(secret/**)`"),
            "{results:?}"
        );
    }
    // A search passes over the files rules keep from being read.
    assert!(results[2].contains("1 files not searched"), "{results:?}");
    assert!(results[3].contains("`read(notes/**)`"), "{results:?}");
    assert!(results[4].contains("visible text"), "{results:?}");
    assert!(results[5].contains("no matches"), "{results:?}");
    assert!(results[5].contains("2 files not searched"), "{results:?}");
    for req in fx.chats() {
        let body = req.body.to_string();
        assert!(!body.contains("TOPSECRET-VALUE"), "the secret was sent");
        assert!(!body.contains("ASKED-NOTE-BODY"), "the asked note was sent");
    }
}
