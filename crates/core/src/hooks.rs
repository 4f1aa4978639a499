//! The hook vocabulary (docs/hooks.md): the eleven events of Claude Code's
//! hook protocol and one configured hook as `eonyx-config` resolves it.
//! Running them is `eonyx-hooks`'s.

use std::fmt;

use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};

/// A point of the agent's life a hook can run at, named as in Claude
/// Code's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PreCompact,
    PostCompact,
    Stop,
    SubagentStart,
    SubagentStop,
    Notification,
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order of the agent's life.
    pub const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::Notification,
        HookEvent::SessionEnd,
    ];

    /// The name in config files and in the hook's `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Notification => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// What the matcher is matched against: the tool name, `source`,
    /// `trigger`, or nothing (every hook of the event runs).
    pub fn matches_on(self) -> MatchOn {
        match self {
            HookEvent::PreToolUse | HookEvent::PostToolUse => MatchOn::ToolName,
            HookEvent::SessionStart => MatchOn::Source,
            HookEvent::PreCompact => MatchOn::Trigger,
            _ => MatchOn::Nothing,
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an event's matcher is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOn {
    ToolName,
    Source,
    Trigger,
    Nothing,
}

/// Default time a hook may run before it is killed with what it started.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;

/// One configured hook command, resolved from a config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookDef {
    pub event: HookEvent,
    /// As written; empty or `*` matches everything.
    pub matcher: String,
    pub command: String,
    pub timeout_secs: u64,
    /// The file it is configured in.
    pub file: Utf8PathBuf,
    /// `false` for an untrusted project's hooks, which are listed but
    /// never run.
    pub runs: bool,
}

/// Every configured hook, global first, then the project's, each file in
/// its own order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HooksConfig {
    pub hooks: Vec<HookDef>,
}

impl HooksConfig {
    /// The hooks that run here (an untrusted project's are left out).
    pub fn running(&self) -> impl Iterator<Item = &HookDef> {
        self.hooks.iter().filter(|h| h.runs)
    }
}

/// The regex a matcher stands for (anchored: it matches the whole name), or
/// `None` for "everything" (empty or `*`).
pub fn matcher_regex(matcher: &str) -> Option<String> {
    let m = matcher.trim();
    (!m.is_empty() && m != "*").then(|| format!("^(?:{m})$"))
}
