//! The built-in tools' names and the parts of their results other crates
//! read (docs/tools.md#shell). The agent's tools write these; the compaction facts read
//! them; neither knows the other's strings.

use std::fmt;

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolName {
    ReadFile,
    ListDir,
    Grep,
    Shell,
    WriteFile,
    EditFile,
    Recall,
    /// Offered only when the session has skills (docs/skills.md, section "Skills").
    Skill,
    /// Reads a web page as Markdown (docs/tools.md#web-fetch); runs in
    /// eonyx, not in the sandbox, through `crates/web`.
    WebFetch,
    /// Offered only when `memory.enabled` (docs/memory.md, section "Using memory"); the
    /// agent runs it, since it needs the session's memory store.
    Memory,
    /// Delegates work to a child agent in a child session (docs/tools.md#task);
    /// offered while `tools.task` is on and the session is shallower than
    /// `tasks.max_depth`. The agent runs it.
    Task,
    /// Replaces the session's plan (docs/tools.md#plan); offered in every
    /// session and profile. The agent runs it.
    Plan,
    /// Marks the session's goal achieved or blocked (docs/tools.md#goal-update);
    /// offered only while a goal is active, never to a task's child. The
    /// agent runs it.
    GoalUpdate,
    /// Offered instead of the MCP tools when their schemas are deferred
    /// (docs/mcp.md#deferred-schemas): returns one MCP tool's schema.
    McpDescribe,
    /// With deferred schemas, calls an MCP tool by name with its arguments.
    McpCall,
    /// The new output and state of a background job (docs/tools.md#jobs);
    /// offered with `shell`.
    JobOutput,
    /// Stops a background job (SIGTERM to its group, SIGKILL after 2 s).
    JobStop,
}

impl ToolName {
    /// Every built-in tool, in the order the model is offered them (the
    /// MCP tools, or `mcp_describe` and `mcp_call` in their place, come
    /// last; docs/mcp.md#tool-names-and-order).
    pub const ALL: [ToolName; 17] = [
        ToolName::ReadFile,
        ToolName::ListDir,
        ToolName::Grep,
        ToolName::Shell,
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::Recall,
        ToolName::Skill,
        ToolName::WebFetch,
        ToolName::Memory,
        ToolName::Task,
        ToolName::Plan,
        ToolName::GoalUpdate,
        ToolName::McpDescribe,
        ToolName::McpCall,
        ToolName::JobOutput,
        ToolName::JobStop,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::ReadFile => "read_file",
            ToolName::ListDir => "list_dir",
            ToolName::Grep => "grep",
            ToolName::Shell => "shell",
            ToolName::WriteFile => "write_file",
            ToolName::EditFile => "edit_file",
            ToolName::Recall => "recall",
            ToolName::Skill => "skill",
            ToolName::WebFetch => "web_fetch",
            ToolName::Memory => "memory",
            ToolName::Task => "task",
            ToolName::Plan => "plan",
            ToolName::GoalUpdate => "goal_update",
            ToolName::McpDescribe => "mcp_describe",
            ToolName::McpCall => "mcp_call",
            ToolName::JobOutput => "job_output",
            ToolName::JobStop => "job_stop",
        }
    }

    /// The tool a call names, if it is a built-in one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Tools whose results are instructions the model is following (a
    /// skill's body): sent whole, never cut by the tool-output cap nor
    /// collapsed to make room; the tool bounds its own output.
    pub fn kept_whole(self) -> bool {
        matches!(self, ToolName::Skill)
    }

    /// Tools that bound their own output (a `job_output` keeps the head and
    /// the tail of what is new): never cut again by the tool-output cap,
    /// but collapsed like any result when old.
    pub fn cuts_own_output(self) -> bool {
        matches!(self, ToolName::JobOutput | ToolName::JobStop)
    }

    /// [`ToolName::cuts_own_output`] for one call: also a `shell` call
    /// with `"background": true`, whose start result is the job's first
    /// output cut as `job_output` cuts it (SPEC 27: cut once, keeping the
    /// exit line).
    pub fn call_cuts_own_output(name: &str, arguments: &serde_json::Value) -> bool {
        match Self::parse(name) {
            Some(ToolName::Shell) => arguments
                .get("background")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            Some(t) => t.cuts_own_output(),
            None => false,
        }
    }

    /// Tools that change the file named by their `path` argument.
    pub fn writes_files(self) -> bool {
        matches!(self, ToolName::WriteFile | ToolName::EditFile)
    }
}

/// The argument names other crates read from a built-in tool's call (the
/// compaction facts); the agent's tool schemas declare them, which a test
/// there checks.
pub mod arg {
    /// The address `web_fetch` reads.
    pub const URL: &str = "url";
    /// The file or directory of `read_file`, `list_dir`, `grep`,
    /// `write_file` and `edit_file`.
    pub const PATH: &str = "path";
    /// The command line of `shell`.
    pub const COMMAND: &str = "command";
    /// The regular expression of `grep`.
    pub const PATTERN: &str = "pattern";
    /// The short description of a `task` (listed in the compaction facts).
    pub const DESCRIPTION: &str = "description";
    /// The MCP tool `mcp_describe` and `mcp_call` name.
    pub const TOOL: &str = "tool";
    /// The arguments `mcp_call` passes to the MCP tool.
    pub const ARGUMENTS: &str = "arguments";
}

/// Every MCP tool's name starts with this (`mcp__<server>__<tool>`).
pub const MCP_PREFIX: &str = "mcp__";
/// The longest tool name providers accept (OpenAI: 64).
pub const MAX_TOOL_NAME_BYTES: usize = 64;

/// The name the model sees for `tool` of MCP server `server`
/// (docs/mcp.md#tool-names-and-order): `mcp__<server>__<tool>`, every
/// character outside `[A-Za-z0-9_-]` replaced by `_`, at most 64 bytes;
/// a longer name is cut and ends in `_` and 8 hex digits of a hash of the
/// uncut name, so two long names stay apart.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let full = format!(
        "{MCP_PREFIX}{}__{}",
        sanitize_tool_part(server),
        sanitize_tool_part(tool)
    );
    if full.len() <= MAX_TOOL_NAME_BYTES {
        return full;
    }
    with_hash_suffix(&full, &format!("{server}\0{tool}"))
}

/// `name` cut to leave room for `_xxxxxxxx` (a hash of `key`), so the
/// result is exactly [`MAX_TOOL_NAME_BYTES`] long at most. `name` is ASCII.
pub fn with_hash_suffix(name: &str, key: &str) -> String {
    let suffix = format!("_{:08x}", fnv1a(key.as_bytes()) as u32);
    let keep = MAX_TOOL_NAME_BYTES
        .saturating_sub(suffix.len())
        .min(name.len());
    format!("{}{suffix}", &name[..keep])
}

/// Whether a tool call names an MCP tool (rather than a built-in one).
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

fn sanitize_tool_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 64 bits: a stable hash (std's hasher may change between Rust
/// versions, and tool names must not).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// First word of the result of a denied tool call.
pub const DENIED: &str = "denied";
/// First word of the result of a cancelled tool call.
pub const INTERRUPTED: &str = "interrupted";

/// How a `shell` call ended: the first line of its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellOutcome {
    /// `exit status: N` (128 + signal when killed by one).
    Exited(i32),
    /// `timed out after 2s` (the duration as written).
    TimedOut(String),
    /// `interrupted`: the user cancelled it.
    Interrupted,
    /// `denied…`: never ran.
    Denied,
}

impl ShellOutcome {
    /// The outcome a `shell` result states on its first line, if any.
    pub fn from_result(text: &str) -> Option<Self> {
        let line = text.lines().next().unwrap_or("").trim();
        if let Some(n) = line.strip_prefix("exit status: ") {
            return n.trim().parse().ok().map(ShellOutcome::Exited);
        }
        if let Some(d) = line.strip_prefix("timed out after ") {
            return Some(ShellOutcome::TimedOut(d.trim().to_owned()));
        }
        if line.starts_with(INTERRUPTED) {
            return Some(ShellOutcome::Interrupted);
        }
        line.starts_with(DENIED).then_some(ShellOutcome::Denied)
    }
}

impl fmt::Display for ShellOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShellOutcome::Exited(n) => write!(f, "exit status: {n}"),
            ShellOutcome::TimedOut(d) => write!(f, "timed out after {d}"),
            ShellOutcome::Interrupted => f.write_str(INTERRUPTED),
            ShellOutcome::Denied => f.write_str(DENIED),
        }
    }
}

/// The first line of a successful `write_file` / `edit_file` result:
/// `changed PATH (+A -R lines)`. Only results that start with it count as
/// "files changed" in the compaction facts.
pub fn file_changed_line(path: &str, added: usize, removed: usize) -> String {
    format!("{FILE_CHANGED} {path} (+{added} -{removed} lines)")
}

/// First word of a successful write's result (see [`file_changed_line`]).
pub const FILE_CHANGED: &str = "changed";

/// Whether a write tool's result says the file was changed.
pub fn is_file_changed(result: &str) -> bool {
    result
        .strip_prefix(FILE_CHANGED)
        .is_some_and(|rest| rest.starts_with(' '))
}

/// The first line of a `task` result (docs/tools.md#task): the child
/// session, its profile and how many steps it took, then ` · interrupted`
/// or ` · failed` when it did not reach a final answer:
/// `task session 20260705T091500-1a2b3c4d · profile explore · 3 steps`.
/// The compaction facts read it to list every child exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHeader {
    pub session: String,
    pub profile: String,
    pub steps: u32,
    pub end: TaskEnd,
}

/// How a child's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    /// It gave its final answer (or stopped at `max_steps`).
    Answered,
    /// The user cancelled it (Ctrl-C).
    Interrupted,
    /// A provider or store error stopped it.
    Failed,
}

/// The first words of a `task` result.
const TASK_PREFIX: &str = "task session ";

impl TaskHeader {
    /// The header a `task` result starts with, if it has one (a call that
    /// never started a child, such as one naming an unknown profile, has
    /// none).
    pub fn from_result(text: &str) -> Option<Self> {
        let line = text.lines().next()?.strip_prefix(TASK_PREFIX)?;
        let mut parts = line.split(" · ");
        let session = parts.next()?.trim().to_owned();
        let profile = parts.next()?.strip_prefix("profile ")?.trim().to_owned();
        let steps = parts
            .next()?
            .trim()
            .trim_end_matches("steps")
            .trim_end_matches("step")
            .trim()
            .parse()
            .ok()?;
        let end = match parts.next().map(str::trim) {
            None => TaskEnd::Answered,
            Some(INTERRUPTED) => TaskEnd::Interrupted,
            Some("failed") => TaskEnd::Failed,
            Some(_) => return None,
        };
        (!session.is_empty()).then_some(TaskHeader {
            session,
            profile,
            steps,
            end,
        })
    }
}

impl fmt::Display for TaskHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.steps == 1 { "step" } else { "steps" };
        write!(
            f,
            "{TASK_PREFIX}{} · profile {} · {} {noun}",
            self.session, self.profile, self.steps
        )?;
        match self.end {
            TaskEnd::Answered => Ok(()),
            TaskEnd::Interrupted => write!(f, " · {INTERRUPTED}"),
            TaskEnd::Failed => f.write_str(" · failed"),
        }
    }
}

/// The file that makes a directory a skill (docs/skills.md, section "Skills").
pub const SKILL_FILE: &str = "SKILL.md";

/// Most bytes of a `SKILL.md` (or of a file inside a skill) that are read.
/// The `skill` tool's results are not cut by `tools.output_cap_bytes` nor
/// collapsed (a procedure being followed stays whole), so this bounds them.
pub const MAX_SKILL_FILE_BYTES: u64 = 128 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in ToolName::ALL {
            assert_eq!(ToolName::parse(t.as_str()), Some(t));
        }
        assert_eq!(ToolName::parse("apply_patch"), None);
        assert!(ToolName::EditFile.writes_files() && !ToolName::ReadFile.writes_files());
    }

    #[test]
    fn mcp_tool_names_are_sanitized_and_bounded() {
        assert_eq!(mcp_tool_name("git", "git_status"), "mcp__git__git_status");
        assert_eq!(
            mcp_tool_name("my.srv", "get time!"),
            "mcp__my_srv__get_time_"
        );
        assert!(is_mcp_tool("mcp__git__git_status") && !is_mcp_tool("shell"));
        let long = "a".repeat(80);
        let a = mcp_tool_name("srv", &long);
        let b = mcp_tool_name("srv", &format!("{long}b"));
        assert_eq!(a.len(), MAX_TOOL_NAME_BYTES);
        assert_eq!(b.len(), MAX_TOOL_NAME_BYTES);
        assert_ne!(a, b, "cut names stay apart by their hash");
        assert!(a.starts_with("mcp__srv__aaaa"), "{a}");
        // Stable across runs and Rust versions.
        assert_eq!(a, mcp_tool_name("srv", &long));
        assert_eq!(&a[a.len() - 9..a.len() - 8], "_");
        // Non-ASCII is replaced per character, so the cut stays on a boundary.
        let n = mcp_tool_name("srv", &"é".repeat(70));
        assert!(n.is_ascii() && n.len() == MAX_TOOL_NAME_BYTES, "{n}");
    }

    #[test]
    fn shell_outcomes_round_trip_through_their_first_line() {
        for o in [
            ShellOutcome::Exited(0),
            ShellOutcome::Exited(-1),
            ShellOutcome::TimedOut("2.5s".into()),
            ShellOutcome::Interrupted,
            ShellOutcome::Denied,
        ] {
            let text = format!("{o}\nsome output\n");
            assert_eq!(ShellOutcome::from_result(&text), Some(o));
        }
        assert_eq!(
            ShellOutcome::from_result("denied: shell commands need approval"),
            Some(ShellOutcome::Denied)
        );
        assert_eq!(ShellOutcome::from_result("hello"), None);
    }

    #[test]
    fn task_headers_round_trip_through_their_first_line() {
        for (steps, end) in [
            (1, TaskEnd::Answered),
            (3, TaskEnd::Answered),
            (0, TaskEnd::Interrupted),
            (2, TaskEnd::Failed),
        ] {
            let h = TaskHeader {
                session: "20260705T091500-1a2b3c4d".into(),
                profile: "explore".into(),
                steps,
                end,
            };
            let text = format!("{h}\n\nthe answer\n");
            assert_eq!(TaskHeader::from_result(&text), Some(h));
        }
        let h = TaskHeader::from_result(
            "task session 20260705T091500-1a2b3c4d · profile general · 1 step",
        )
        .unwrap();
        assert_eq!((h.profile.as_str(), h.steps), ("general", 1));
        assert_eq!(TaskHeader::from_result("unknown profile `x`"), None);
        assert_eq!(TaskHeader::from_result(""), None);
    }

    #[test]
    fn changed_lines_are_recognised() {
        let l = file_changed_line("src/a b.rs", 2, 1);
        assert_eq!(l, "changed src/a b.rs (+2 -1 lines)");
        assert!(is_file_changed(&l));
        assert!(!is_file_changed("changedx"));
        assert!(!is_file_changed("edit_file: no match"));
    }
}
