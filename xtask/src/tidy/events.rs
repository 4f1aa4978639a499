//! The `events` check: events go through the one handle the agent owns
//! (ARCHITECTURE.md, `crates/agent`'s invariants), never a callback handed
//! down. Outside its tests and the handle itself (`events/`),
//! `crates/agent/src` names no `FnMut(AgentEvent)`: no function of the
//! agent, its rooms or its command layer takes an event callback. The
//! frontends may (what they pass to `Events::deliver` or `drain` to show
//! an event is theirs).

use std::path::Path;
use std::sync::LazyLock;

use anyhow::Result;
use regex::Regex;

use super::{Problem, files_with_ext, re, read, rel, report};

/// The agent's sources.
pub const AGENT: &str = "crates/agent/src";

/// The handle, the one place an event callback belongs.
pub const HANDLE: &str = "crates/agent/src/events/";

/// Lines of `src` (tests and comment lines skipped) that name an event
/// callback.
pub fn callbacks(src: &str) -> Vec<usize> {
    static CALLBACK_RE: LazyLock<Regex> =
        LazyLock::new(|| re(r"\bFnMut\s*\(\s*(?:[\w:]+::)?AgentEvent\s*\)"));
    let mut out = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if !code.starts_with("//") && CALLBACK_RE.is_match(line) {
            out.push(i + 1);
        }
    }
    out
}

/// Every event callback in the agent outside its handle.
pub fn check_agent(root: &Path) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    for file in files_with_ext(&root.join(AGENT), ".rs")? {
        let name = rel(root, &file);
        if name.starts_with(HANDLE) || name.ends_with("_tests.rs") {
            continue;
        }
        for line in callbacks(&read(&file)?) {
            problems.push(Problem {
                file: name.clone(),
                line,
                message: "an event callback in the agent".to_owned(),
            });
        }
    }
    Ok(problems)
}

pub fn events_step(root: &Path) -> Result<()> {
    report(
        "events",
        check_agent(root)?,
        "send through the agent's handle (`self.events.send`, a room's `events`) instead of taking a callback; a frontend shows what comes out with `Events::deliver` or `drain` (ARCHITECTURE.md, crates/agent's invariants)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_takes_no_event_callback() {
        let problems = check_agent(&crate::util::workspace_root()).unwrap();
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn a_callback_parameter_is_found_in_any_spelling_and_comments_and_tests_are_not() {
        let src = "\
fn a(sink: &mut (dyn FnMut(AgentEvent) + Send)) {}
// fn b(sink: &mut dyn FnMut(AgentEvent)) {}
fn c(show: impl FnMut( crate::events::AgentEvent )) {}
fn d(ev: AgentEvent) {}
#[cfg(test)]
mod tests { fn e(s: impl FnMut(AgentEvent)) {} }
";
        assert_eq!(callbacks(src), [1, 3]);
    }
}
