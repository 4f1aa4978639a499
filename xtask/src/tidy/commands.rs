//! The `commands` check: the frontends render only (ARCHITECTURE.md, "The
//! command layer"). Outside their tests, `crates/cli/src` and
//! `crates/acp/src` hold no slash-command name as a string of its own
//! (`"/status"`, or a bare `"status"` matched in a `match` arm) — which
//! commands exist and what they do is `eonyx_agent::commands` — and no
//! goal loop or goal hand-off: `goal_continuation`, and continuing or
//! pausing a goal after a turn (`continue_goal`, `pause_after`,
//! `pause_goal`, `run_goal`); a frontend hands what the user sent to
//! `commands::user_turn` (or `turn` then `after_turn`), which does both.
//! The names come from the layer's table (`"/name"` strings in
//! `crates/agent/src/commands/table.rs`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Result, bail};
use regex::Regex;

use super::{Problem, files_with_ext, re, read, rel, report};

/// The table every name comes from.
pub const TABLE: &str = "crates/agent/src/commands/table.rs";

/// The frontends' sources.
pub const FRONTENDS: &[&str] = &["crates/cli/src", "crates/acp/src"];

/// Every command name and alias of the table's source (`"/name"` strings
/// standing alone), without the `/`.
pub fn command_names(table: &str) -> BTreeSet<String> {
    static NAME_RE: LazyLock<Regex> = LazyLock::new(|| re(r#""/([a-z][a-z-]*)""#));
    let body = without_tests(table);
    NAME_RE
        .captures_iter(&body)
        .map(|c| c[1].to_owned())
        .collect()
}

/// `src` up to its first `#[cfg(test)]` line (test modules come last).
fn without_tests(src: &str) -> String {
    let mut out = String::new();
    for line in src.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Lines of a frontend's `src` that name a command of `names`, run a goal
/// loop or hand a goal on after a turn, with what was found. Comment lines and tests are skipped.
pub fn frontend_violations(src: &str, names: &BTreeSet<String>) -> Vec<(usize, String)> {
    static SLASHED_RE: LazyLock<Regex> = LazyLock::new(|| re(r#""/([a-z][a-z-]*)""#));
    static ARM_RE: LazyLock<Regex> = LazyLock::new(|| re(r#""([a-z][a-z-]*)"\s*(?:=>|\||if\b)"#));
    static LOOP_RE: LazyLock<Regex> = LazyLock::new(|| re(r"\bgoal_continuation\s*\("));
    static HAND_OFF_RE: LazyLock<Regex> =
        LazyLock::new(|| re(r"\b(continue_goal|pause_after|pause_goal|run_goal)\s*\("));
    let mut out = Vec::new();
    for (i, line) in without_tests(src).lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        for c in SLASHED_RE.captures_iter(line) {
            if names.contains(&c[1]) {
                out.push((i + 1, format!("the command name \"/{}\"", &c[1])));
            }
        }
        for c in ARM_RE.captures_iter(line) {
            if names.contains(&c[1]) {
                out.push((i + 1, format!("a match on the command name \"{}\"", &c[1])));
            }
        }
        if LOOP_RE.is_match(line) {
            out.push((i + 1, "a goal loop (`goal_continuation`)".to_owned()));
        }
        for c in HAND_OFF_RE.captures_iter(line) {
            out.push((i + 1, format!("a goal hand-off (`{}`)", &c[1])));
        }
    }
    out
}

/// Every place a frontend names a command, runs a goal loop or hands a
/// goal on.
pub fn check_frontends(root: &Path) -> Result<Vec<Problem>> {
    let names = command_names(&read(&root.join(TABLE))?);
    if names.is_empty() {
        bail!("{TABLE}: no command names found; the `commands` check reads its \"/name\" strings");
    }
    let mut problems = Vec::new();
    for dir in FRONTENDS {
        for file in files_with_ext(&root.join(dir), ".rs")? {
            for (line, what) in frontend_violations(&read(&file)?, &names) {
                problems.push(Problem {
                    file: rel(root, &file),
                    line,
                    message: format!("{what} in a frontend"),
                });
            }
        }
    }
    Ok(problems)
}

pub fn commands_step(root: &Path) -> Result<()> {
    report(
        "commands",
        check_frontends(root)?,
        "frontends render only: ask eonyx_agent::commands (parse, offered, help, find) and render its Shown and Outcome; what the user sends goes to commands::user_turn (or turn, then after_turn), which continues or pauses the goal (ARCHITECTURE.md, \"The command layer\")",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> BTreeSet<String> {
        command_names(
            "pub const COMMANDS: &[Command] = &[\n    cmd(\"/status\", \"\", \"model, /compact\", None),\n    Command { aliases: &[\"/quit\"], ..cmd(\"/exit\", \"\", \"leave\") },\n];\n#[cfg(test)]\nmod tests { const X: &str = \"/nope\"; }\n",
        )
    }

    #[test]
    fn the_workspace_frontends_name_no_command() {
        let problems = check_frontends(&crate::util::workspace_root()).unwrap();
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn names_are_the_tables_standalone_strings() {
        let n: Vec<String> = names().into_iter().collect();
        assert_eq!(n, ["exit", "quit", "status"]);
    }

    #[test]
    fn a_frontend_matching_a_name_looping_or_handing_on_a_goal_is_reported() {
        let src = "\
fn f(cmd: &str) {
    match cmd {
        \"/status\" => {}
        \"exit\" | \"quit\" => {}
        _ => {}
    }
    // \"/status\" in a comment is fine
    printer.info(\"type /status for more\");
    let json = v[\"status\"];
    while let Some(i) = agent.goal_continuation(&mut sink)? {}
    Ok(()) => commands::continue_goal(agent, &mut fe, None).await,
    Err(e) => commands::pause_after(agent, &mut fe, &e),
}
#[cfg(test)]
mod tests { fn t() { complete(\"/status\"); } }
";
        let found = frontend_violations(src, &names());
        assert_eq!(
            found,
            [
                (3, "the command name \"/status\"".to_owned()),
                (4, "a match on the command name \"exit\"".to_owned()),
                (4, "a match on the command name \"quit\"".to_owned()),
                (10, "a goal loop (`goal_continuation`)".to_owned()),
                (11, "a goal hand-off (`continue_goal`)".to_owned()),
                (12, "a goal hand-off (`pause_after`)".to_owned()),
            ]
        );
    }
}
