//! The attack probe of the permission rules (issue 55), each repro run
//! for real through the binary against the fake model with a harmless
//! `touch` payload: the line is refused (naming the rule where one made
//! the decision) and the payload never runs. Also `eonyx permissions
//! check`, and a task child under `deny read(…)`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::*;
use crate::permissions::{self, with_rules};
use crate::tasks::{child_requests, task};
use crate::util::{stderr, stdout};

/// [`permissions::shell_calls`] for owned lines.
fn shell_calls(fx: &Fx, flags: &[&str], commands: &[String]) -> Vec<String> {
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    permissions::shell_calls(fx, flags, &commands)
}

/// The repros, each with its own payload file `pN`.
fn repros() -> Vec<String> {
    [
        "npm test \r# ; touch P",
        "git status \r# ; touch P",
        "npm test {$(touch P)}>/dev/null",
        "{`touch P`}>/dev/null git status",
        "git status {$(touch P)}</dev/null",
        "npm test &>/dev/null touch P",
        "npm test &>>/dev/null touch P",
        "npm test \u{1b}[2K; touch P",
    ]
    .iter()
    .enumerate()
    .map(|(i, l)| l.replace('P', &format!("p{i}")))
    .collect()
}

#[test]
fn hidden_characters_fd_words_and_and_redirections_run_nothing_under_allow_rules() {
    let fx = with_rules(
        "[permissions]\nallow = [\"shell(npm test:*)\", \"shell(git status)\", \"shell(git status:*)\"]\n",
    );
    let lines = repros();
    let results = shell_calls(&fx, &[], &lines);
    for (i, (line, result)) in lines.iter().zip(&results).enumerate() {
        assert!(
            !fx.sb.work.join(format!("p{i}")).exists(),
            "{line:?} ran its payload: {result}"
        );
    }
    // Those the running shell reads as more than one command are refused
    // (bash reads `&>` as a redirection: there `touch` is npm's argument).
    for (line, result) in lines.iter().zip(&results) {
        if !line.contains("&>") {
            assert!(result.starts_with("denied"), "{line:?}: {result}");
        }
    }
}

/// SPEC 30: what the matcher does not fully understand is covered by no
/// allow rule, bare `shell` included; in batch it is denied, and a line
/// it understands still runs.
#[test]
fn bare_shell_does_not_cover_a_line_that_is_not_understood() {
    let fx = with_rules("[permissions]\nallow = [\"shell\"]\n");
    let mut lines = repros();
    lines.retain(|l| !l.contains("&>"));
    lines.push("touch plain".to_owned());
    let results = shell_calls(&fx, &[], &lines);
    let (plain, hidden) = results.split_last().expect("one result per line");
    for (i, (line, result)) in lines.iter().zip(hidden).enumerate() {
        assert!(result.starts_with("denied"), "{line:?}: {result}");
        assert!(
            !fx.sb.work.join(format!("p{i}")).exists(),
            "{line:?} ran its payload: {result}"
        );
    }
    assert!(fx.sb.work.join("plain").exists(), "touch plain: {plain}");
}

/// Lines the shell grammar's parser could not survive (found by the
/// `shell_split` fuzz campaign): a here-document whose delimiter is only
/// carriage returns or form feeds made it allocate without end, a file
/// descriptor number over `i32` made it panic, brackets left open and
/// nested `${a[…]}` subscripts made it backtrack for hours. Each is
/// refused at once like any line not understood, and the run goes on.
#[test]
fn lines_the_parser_cannot_survive_are_refused_at_once() {
    let fx = with_rules("[permissions]\nallow = [\"shell\", \"shell(touch:*)\"]\n");
    let lines = [
        "touch p0 <<\r\t<\r\t".to_owned(),
        "touch p1 <<\u{c}\t<\u{c}\t".to_owned(),
        "<\u{FFFD}<<\r\r\t<\r\r\t; touch p2".to_owned(),
        "touch p3 9999999999999>>2>".to_owned(),
        "touch p4 2>/dev/null 99999999999>out".to_owned(),
        format!("touch p5; [[z<{}", "(".repeat(40)),
        "touch p6 \"${a[${b[${c[${d[${e[${f[1]}]}]}]}]}]}\"".to_owned(),
        "touch plain".to_owned(),
    ];
    let results = shell_calls(&fx, &[], &lines);
    let (plain, refused) = results.split_last().expect("one result per line");
    for (i, (line, result)) in lines.iter().zip(refused).enumerate() {
        assert!(result.starts_with("denied"), "{line:?}: {result}");
        assert!(!fx.sb.work.join(format!("p{i}")).exists(), "{line:?} ran");
    }
    assert!(fx.sb.work.join("plain").exists(), "touch plain: {plain}");
}

#[test]
fn a_deny_rule_names_what_hides_behind_characters_wrappers_and_scripts() {
    let fx = with_rules("[permissions]\nallow = [\"shell\"]\ndeny = [\"shell(touch:*)\"]\n");
    let mut lines = repros();
    lines.retain(|l| !l.contains("&>"));
    for (i, l) in [
        "env sh -c 'touch P'",
        "timeout 5 sh -c 'touch P'",
        "nice sh -c 'touch P'",
        "command eval 'touch P'",
        "bash -c -- 'touch P'",
        "nohup sh -c 'touch P' >/dev/null",
        "xargs -I{} sh -c 'touch P' <<< x",
    ]
    .iter()
    .enumerate()
    {
        lines.push(l.replace('P', &format!("w{i}")));
    }
    let results = shell_calls(&fx, &["--allow-shell"], &lines);
    for (line, result) in lines.iter().zip(&results) {
        assert!(
            result.starts_with("denied by the permission rule `shell(touch:*)`"),
            "{line:?}: {result}"
        );
    }
    let made: Vec<_> = std::fs::read_dir(&fx.sb.work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('p') || n.starts_with('w'))
        .collect();
    assert!(made.is_empty(), "payloads ran: {made:?}");
}

#[test]
fn an_ask_rule_sees_past_global_options_and_is_denied_in_batch_naming_it() {
    let fx =
        with_rules("[permissions]\nallow = [\"shell(git:*)\"]\nask = [\"shell(git push:*)\"]\n");
    let lines: Vec<String> = [
        "git -C . push",
        "git --no-pager push",
        "git -c push.default=current push",
        "git --git-dir=.git push",
        "git push \r# x",
    ]
    .map(str::to_owned)
    .to_vec();
    let results = shell_calls(&fx, &[], &lines);
    for (line, result) in lines.iter().zip(&results) {
        assert!(
            result.contains("`shell(git push:*)`") && result.contains("no one to ask"),
            "{line:?}: {result}"
        );
    }
}

#[test]
fn no_prefix_covers_an_option_that_runs_code_or_writes_a_file() {
    let fx = with_rules(
        "[permissions]\nallow = [\"shell(find .:*)\", \"shell(git diff:*)\", \"shell(git log:*)\", \
         \"shell(python3 -c:*)\", \"shell(sed:*)\"]\n",
    );
    fx.sb.write("work/a.txt", "a\n");
    let lines: Vec<String> = [
        "find . -exec touch d0 ';'",
        "find . -fprint d1",
        "git diff --output=d2",
        "git log --output=d3",
        "python3 -c 'open(\"d4\", \"w\")'",
        "sed -n 's/a/touch d5/ep' a.txt",
        "sed -i.d6 s/a/b/ a.txt",
    ]
    .map(str::to_owned)
    .to_vec();
    let results = shell_calls(&fx, &[], &lines);
    for (i, (line, result)) in lines.iter().zip(&results).enumerate() {
        assert!(result.starts_with("denied"), "{line:?}: {result}");
        assert!(
            !fx.sb.work.join(format!("d{i}")).exists() && !fx.sb.work.join("a.txt.d6").exists(),
            "{line:?} ran"
        );
    }
    // The same prefix still covers the program's harmless options.
    let results = shell_calls(&fx, &[], &["find . -name a.txt".to_owned()]);
    assert!(results[0].starts_with("exit status: 0"), "{results:?}");
}

#[test]
fn permissions_check_prints_the_decision_the_rule_and_the_commands() {
    let fx = with_rules(
        "[permissions]\nallow = [\"shell(git:*)\"]\nask = [\"shell(git push:*)\"]\ndeny = [\"shell(touch:*)\"]\n",
    );
    let o = fx.run(
        &["permissions", "check", "--", "git", "-C", ".", "push"],
        "",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("decision: ask\n"), "{out}");
    assert!(
        out.contains("rule: shell(git push:*) (in the `ask` list of "),
        "{out}"
    );
    assert!(out.contains("config.toml"), "{out}");
    assert!(out.contains("`git` `-C` `.` `push`"), "{out}");

    let o = fx.run(
        &[
            "--json",
            "permissions",
            "check",
            "--",
            "npm test \r# ; touch x",
        ],
        "",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["rules"][0]["rule"], "shell(touch:*)", "{v}");
    assert_eq!(v["understood"], false, "{v}");
    let words: Vec<&Value> = v["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["words"])
        .collect();
    assert!(words.contains(&&json!(["touch", "x"])), "{v}");

    let o = fx.run(&["permissions", "check", "--", "git status -s"], "");
    let out = stdout(&o);
    assert!(out.starts_with("decision: allow\n"), "{out}");
    assert!(out.contains("rule: shell(git:*)"), "{out}");
    assert!(!fx.sb.work.join("x").exists());
}

#[test]
fn a_task_child_obeys_deny_read_rules() {
    let fx = with_rules("[permissions]\ndeny = [\"read(secret/**)\"]\n");
    fx.sb.write("work/secret/key.txt", "TOPSECRET-VALUE\n");
    fx.fake.push_all([
        Reply::tool_call(
            "task",
            task("read the key", "read the key", Some("explore")),
        ),
        Reply::tool_calls([
            ("read_file", json!({ "path": "secret/key.txt" })),
            ("grep", json!({ "pattern": "TOPSECRET" })),
            ("grep", json!({ "pattern": "TOPSECRET", "path": "secret" })),
        ]),
        Reply::text("child done"),
        Reply::text("parent done"),
    ]);
    let o = fx.run(&["--allow-shell", "run", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let child = child_requests(&fx);
    assert!(!child.is_empty());
    let last = child.last().unwrap().body.to_string();
    assert!(last.contains("read(secret/**)"), "{last}");
    for req in fx.chats() {
        assert!(
            !req.body.to_string().contains("TOPSECRET-VALUE"),
            "the secret was sent"
        );
    }
}
