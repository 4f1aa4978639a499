//! User commands at points of the agent's life, in the protocol Claude Code
//! defined (docs/hooks.md), so hook scripts written for it run unchanged.
//!
//! [`Hooks`] holds the hooks that run here (compiled matchers) and runs an
//! event's: [`Hooks::run`] picks the matching hooks (a regex over the whole
//! tool name, Claude Code's names as aliases, or over `source` /
//! `trigger`), runs each distinct command once, all in parallel
//! (`process`), and combines their answers into one [`Outcome`]
//! (`answer`). What an outcome does to the conversation is the agent's.
//!
//! Invariants:
//! - A hook runs as `sh -c` in the project root, outside the sandbox, with
//!   the provider key variables removed and its own process group, which is
//!   killed at its timeout or when the run is dropped.
//! - The stdin JSON has exactly the field names of docs/hooks.md#input.
//! - A hook that cannot start, times out or exits with neither 0 nor 2 is
//!   a warning and blocks nothing.
//! - This crate depends on `eonyx-core` only and never prints.

use std::time::Duration;

use camino::Utf8PathBuf;
use eonyx_core::hooks::{HookDef, HookEvent, MatchOn, matcher_regex};
use regex::Regex;

mod answer;
pub mod claude;
mod input;
mod process;

pub use answer::{HookRun, Outcome, Permission};
pub use input::{Common, CompactTrigger, Payload, StartSource, ToolUse};
pub use process::OUTPUT_CAP_BYTES;

/// A matcher that does not compile (config validates them first, so this
/// only happens with hand-built definitions).
#[derive(Debug, thiserror::Error)]
#[error("{file}: hooks.{event}: matcher `{matcher}` is not a valid regular expression: {source}")]
pub struct HookError {
    pub file: Utf8PathBuf,
    pub event: HookEvent,
    pub matcher: String,
    #[source]
    pub source: regex::Error,
}

/// Where and how hooks run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnv {
    /// The project root: the hooks' working directory and
    /// `EONYX_PROJECT_DIR` / `CLAUDE_PROJECT_DIR`.
    pub project_dir: Utf8PathBuf,
    /// Variables removed from the hooks' environment (the provider keys).
    pub hidden_env: Vec<String>,
}

#[derive(Debug, Clone)]
struct Compiled {
    def: HookDef,
    /// `None`: matches everything.
    regex: Option<Regex>,
}

/// The hooks that run in this project.
#[derive(Debug, Clone)]
pub struct Hooks {
    hooks: Vec<Compiled>,
    env: RunEnv,
}

impl Hooks {
    /// Hooks from resolved definitions; those with `runs: false` (an
    /// untrusted project's) are left out.
    pub fn new<'a>(
        defs: impl IntoIterator<Item = &'a HookDef>,
        env: RunEnv,
    ) -> Result<Self, HookError> {
        let mut hooks = Vec::new();
        for def in defs.into_iter().filter(|d| d.runs) {
            let regex = match matcher_regex(&def.matcher) {
                Some(re) => Some(Regex::new(&re).map_err(|source| HookError {
                    file: def.file.clone(),
                    event: def.event,
                    matcher: def.matcher.clone(),
                    source,
                })?),
                None => None,
            };
            hooks.push(Compiled {
                def: def.clone(),
                regex,
            });
        }
        Ok(Self { hooks, env })
    }

    /// No hooks at all.
    pub fn none(env: RunEnv) -> Self {
        Self {
            hooks: Vec::new(),
            env,
        }
    }

    /// Whether any hook is configured for `event` (nothing to build
    /// otherwise).
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.def.event == event)
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks that match `payload`, each distinct command once, with
    /// the Claude Code tool name when it was selected by one.
    fn selected(&self, payload: &Payload) -> Vec<(&Compiled, Option<&'static str>)> {
        let event = payload.event();
        let mut out: Vec<(&Compiled, Option<&'static str>)> = Vec::new();
        for h in self.hooks.iter().filter(|h| h.def.event == event) {
            let chosen = match (&h.regex, event.matches_on()) {
                (None, _) | (_, MatchOn::Nothing) => Some(None),
                (Some(re), MatchOn::ToolName) => payload.tool().and_then(|call| {
                    if re.is_match(&call.tool_name) {
                        Some(None)
                    } else {
                        claude::aliases(&call.tool_name)
                            .iter()
                            .find(|a| re.is_match(a))
                            .map(|a| Some(*a))
                    }
                }),
                (Some(re), MatchOn::Source | MatchOn::Trigger) => payload
                    .match_text()
                    .filter(|t| re.is_match(t))
                    .map(|_| None),
            };
            if let Some(alias) = chosen
                && !out.iter().any(|(o, _)| o.def.command == h.def.command)
            {
                out.push((h, alias));
            }
        }
        out
    }

    /// Run the hooks of `payload`'s event that match it, in parallel, and
    /// combine their answers. With no matching hook the outcome is empty.
    pub async fn run(&self, common: &Common, payload: &Payload) -> Outcome {
        let selected = self.selected(payload);
        let mut outcome = Outcome::default();
        if selected.is_empty() {
            return outcome;
        }
        let runs = selected.iter().map(|(h, alias)| {
            let input = payload.to_json(common, *alias).to_string();
            let timeout = Duration::from_secs(h.def.timeout_secs.max(1));
            let env = &self.env;
            async move { process::run(&h.def.command, input.as_bytes(), timeout, env).await }
        });
        let results = futures_util::future::join_all(runs).await;
        let tool = payload.tool().map(|c| c.tool_name.clone());
        for ((h, alias), ran) in selected.into_iter().zip(results) {
            let tool = tool.clone();
            answer::add(
                &mut outcome,
                payload.event(),
                &h.def.command,
                ran,
                |v| match (alias, &tool) {
                    (Some(_), Some(t)) => claude::from_claude(t, v),
                    _ => v.clone(),
                },
            );
        }
        outcome
    }
}

/// The answers of hooks that ran together for `event`, read as
/// [`Hooks::run`] reads them: each its exit code and what it wrote to
/// stdout and stderr (as bytes: lossily UTF-8, as from a process);
/// `claude_tool` is the Claude Code tool name the hooks were selected by
/// (their `updatedInput` is renamed back to eonyx's names). For the fuzz
/// target `hook_answer` and tests: the same reading, without processes.
pub fn read_answers<'a>(
    event: HookEvent,
    answers: impl IntoIterator<Item = (i32, &'a [u8], &'a [u8])>,
    claude_tool: Option<&str>,
) -> Outcome {
    let mut outcome = Outcome::default();
    for (code, stdout, stderr) in answers {
        let ran = process::Ran {
            ended: process::Ended::Exited(code),
            stdout: String::from_utf8_lossy(stdout).into_owned(),
            stderr: String::from_utf8_lossy(stderr).into_owned(),
            millis: 0,
        };
        answer::add(&mut outcome, event, "fuzz", ran, |v| match claude_tool {
            Some(t) => claude::from_claude(t, v),
            None => v.clone(),
        });
    }
    outcome
}

#[cfg(test)]
mod tests;
