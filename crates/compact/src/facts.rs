//! Exact facts: paths, commands, MCP tool calls and tasks gathered
//! mechanically from the compacted tool calls, merged across compactions
//! and rendered after the model's summary. Never paraphrased by a model.
//!
//! Tasks (child sessions started with the `task` tool) are never dropped:
//! no cap, no trimming, so however often the parent compacts its requests
//! name every child it started (docs/compaction.md#exact-facts).

use std::collections::HashMap;

use eonyx_core::tool::{
    DENIED, INTERRUPTED, ShellOutcome, TaskHeader, ToolName, arg as key, is_file_changed,
    is_mcp_tool,
};
use eonyx_core::{MessageRecord, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Heading of the mechanically built section appended to every summary.
pub const FACTS_HEADING: &str = "## Exact facts";

/// At most this many entries per list are kept (the newest).
pub const MAX_ENTRIES: usize = 200;
/// Longer commands and patterns are shortened (visibly).
const MAX_ITEM_CHARS: usize = 1000;

/// One search (`grep`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchFact {
    pub pattern: String,
    pub path: String,
}

/// One shell command and how it ended last time it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandFact {
    pub command: String,
    /// `exit status: N`, `timed out after Ns`, `denied`, `no result`, …
    pub status: String,
}

/// One MCP tool (by the name the model called), how many times it was
/// called and how its latest call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCallFact {
    pub tool: String,
    /// `ok`, `denied`, `interrupted`, `no result`, or `error: …` (the
    /// first line of the error).
    pub status: String,
    pub calls: u64,
}

/// One child session a `task` call started (or continued).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFact {
    /// The child session's id.
    pub session: String,
    pub profile: String,
    /// The call's `description` (the first one given for this child).
    pub description: String,
}

/// Longer task descriptions are shortened (visibly).
const MAX_DESCRIPTION_CHARS: usize = 200;

/// The `facts` value of a compaction record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searched: Vec<SearchFact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandFact>,
    /// MCP tools called (docs/mcp.md#compaction).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<McpCallFact>,
    /// Every child session started by a `task` call; never capped or
    /// trimmed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskFact>,
    /// Entries dropped because a list passed `MAX_ENTRIES` (200).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
    /// For a mid-turn compaction: the user message that started the turn
    /// that was cut, repeated to the model at the start of the kept messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_request: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Like `ellipsize`, and says how long the whole item was.
fn shorten(s: &str) -> String {
    match eonyx_core::text::cut_chars(s, MAX_ITEM_CHARS) {
        Some(head) => format!("{head}… ({} characters in all)", s.chars().count()),
        None => s.to_owned(),
    }
}

fn arg(args: &Value, key: &str) -> Option<String> {
    match args.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        v => Some(v.to_string()),
    }
}

/// How a shell command ended, from the first line of the tool's result.
pub fn shell_status(result: Option<&str>) -> String {
    let Some(text) = result else {
        return "no result".to_owned();
    };
    match ShellOutcome::from_result(text) {
        Some(o) => o.to_string(),
        None => "status unknown".to_owned(),
    }
}

/// How an MCP call ended, from its result.
fn mcp_status(result: Option<&(String, bool)>) -> String {
    let Some((text, is_error)) = result else {
        return "no result".to_owned();
    };
    let first = text.lines().next().unwrap_or("").trim();
    if first.starts_with(DENIED) {
        "denied".to_owned()
    } else if first.starts_with(INTERRUPTED) {
        "interrupted".to_owned()
    } else if *is_error {
        let line = first.strip_prefix("error: ").unwrap_or(first);
        format!("error: {}", eonyx_core::text::ellipsize(line, 160))
    } else {
        "ok".to_owned()
    }
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

impl Facts {
    /// Read the `facts` of a previous compaction record (unknown or
    /// malformed values give empty facts: they are rebuilt from now on).
    pub fn from_value(v: Option<&Value>) -> Self {
        v.and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && !self.has_trimmable()
    }

    /// Whether a list that may be trimmed has entries (all but `tasks`).
    fn has_trimmable(&self) -> bool {
        !(self.read.is_empty()
            && self.listed.is_empty()
            && self.searched.is_empty()
            && self.written.is_empty()
            && self.commands.is_empty()
            && self.mcp.is_empty())
    }

    /// Add a child session once (a continuation keeps the first entry).
    fn add_task(&mut self, t: TaskFact) {
        if !self.tasks.iter().any(|o| o.session == t.session) {
            self.tasks.push(t);
        }
    }

    /// Gather the facts of the tool calls in `records` (calls and results
    /// are matched by id).
    pub fn from_records(records: &[MessageRecord]) -> Self {
        let mut results: HashMap<&str, (String, bool)> = HashMap::new();
        for r in records {
            if r.message.role == Role::Tool
                && let Some(id) = &r.message.tool_call_id
            {
                results.insert(id.as_str(), (r.message.content.text(), r.message.is_error));
            }
        }
        let mut f = Facts::default();
        for r in records {
            for c in &r.message.tool_calls {
                let a = &c.arguments;
                let result = results.get(c.id.as_str());
                let Some(tool) = ToolName::parse(&c.name) else {
                    if is_mcp_tool(&c.name) {
                        f.add_mcp(McpCallFact {
                            tool: shorten(&c.name),
                            status: mcp_status(result),
                            calls: 1,
                        });
                    }
                    continue;
                };
                match tool {
                    // Reading a schema touches nothing.
                    ToolName::McpDescribe => {}
                    ToolName::McpCall => {
                        if let Some(name) = arg(a, key::TOOL) {
                            f.add_mcp(McpCallFact {
                                tool: shorten(&name),
                                status: mcp_status(result),
                                calls: 1,
                            });
                        }
                    }
                    // Looking up the conversation itself touches no file.
                    ToolName::Recall => {}
                    // Skills in use are kept by name in the record itself.
                    ToolName::Skill => {}
                    // A note for later sessions touches no file.
                    ToolName::Memory => {}
                    // A page read touches no file; what it said is the
                    // summary's to keep.
                    ToolName::WebFetch => {}
                    // The plan and the goal are pinned by the compaction
                    // record itself (docs/compaction.md#what-is-pinned).
                    ToolName::Plan | ToolName::GoalUpdate => {}
                    // A job's command is listed with the `shell` call
                    // that started it; the running ones are pinned.
                    ToolName::JobOutput | ToolName::JobStop => {}
                    ToolName::ReadFile => {
                        if let Some(p) = arg(a, key::PATH) {
                            push_unique(&mut f.read, shorten(&p));
                        }
                    }
                    ToolName::ListDir => {
                        let p = arg(a, key::PATH).unwrap_or_else(|| ".".to_owned());
                        push_unique(&mut f.listed, shorten(&p));
                    }
                    ToolName::Grep => {
                        let s = SearchFact {
                            pattern: shorten(&arg(a, key::PATTERN).unwrap_or_default()),
                            path: shorten(&arg(a, key::PATH).unwrap_or_else(|| ".".to_owned())),
                        };
                        push_unique(&mut f.searched, s);
                    }
                    ToolName::Shell => {
                        if let Some(cmd) = arg(a, key::COMMAND) {
                            let status = shell_status(result.map(|(s, _)| s.as_str()));
                            f.add_command(CommandFact {
                                command: shorten(&cmd),
                                status,
                            });
                        }
                    }
                    ToolName::Task => {
                        // Only calls that started (or continued) a child.
                        let header = result.and_then(|(r, _)| TaskHeader::from_result(r));
                        if let Some(h) = header {
                            let description = arg(a, key::DESCRIPTION).unwrap_or_default();
                            f.add_task(TaskFact {
                                session: h.session,
                                profile: h.profile,
                                description: eonyx_core::text::ellipsize(
                                    description.trim(),
                                    MAX_DESCRIPTION_CHARS,
                                ),
                            });
                        }
                    }
                    ToolName::WriteFile | ToolName::EditFile => {
                        // Only writes that happened: not denied, not failed.
                        let changed = result.is_some_and(|(r, _)| is_file_changed(r));
                        if changed && let Some(p) = arg(a, key::PATH) {
                            push_unique(&mut f.written, shorten(&p));
                        }
                    }
                }
            }
        }
        f
    }

    fn add_command(&mut self, c: CommandFact) {
        // The latest run of a command wins (moved to the end).
        self.commands.retain(|o| o.command != c.command);
        self.commands.push(c);
    }

    fn add_mcp(&mut self, mut c: McpCallFact) {
        // The latest call's status wins (moved to the end); calls add up.
        if let Some(i) = self.mcp.iter().position(|o| o.tool == c.tool) {
            c.calls += self.mcp.remove(i).calls;
        }
        self.mcp.push(c);
    }

    /// `self` (older) merged with `newer`: lists keep first-seen order, a
    /// re-run command takes its newest status, each list keeps its newest
    /// `MAX_ENTRIES` (200). `turn_request` is not carried over.
    pub fn merge(mut self, newer: Facts) -> Facts {
        for p in newer.read {
            push_unique(&mut self.read, p);
        }
        for p in newer.listed {
            push_unique(&mut self.listed, p);
        }
        for s in newer.searched {
            push_unique(&mut self.searched, s);
        }
        for p in newer.written {
            push_unique(&mut self.written, p);
        }
        for c in newer.commands {
            self.add_command(c);
        }
        for c in newer.mcp {
            self.add_mcp(c);
        }
        for t in newer.tasks {
            self.add_task(t);
        }
        self.omitted += newer.omitted;
        self.omitted += cap(&mut self.read)
            + cap(&mut self.listed)
            + cap(&mut self.searched)
            + cap(&mut self.written)
            + cap(&mut self.commands)
            + cap(&mut self.mcp);
        self.turn_request = newer.turn_request;
        self
    }

    /// Drop the oldest entries (longest list first) until the rendered
    /// section has at most `max_chars` characters; dropped entries are
    /// counted in `omitted`. Tasks are never dropped.
    pub fn trim_to(&mut self, max_chars: usize) {
        while self.render().chars().count() > max_chars && self.has_trimmable() {
            let lens = [
                self.read.len(),
                self.listed.len(),
                self.searched.len(),
                self.written.len(),
                self.commands.len(),
                self.mcp.len(),
            ];
            let (which, len) = lens
                .iter()
                .copied()
                .enumerate()
                .max_by_key(|(_, l)| *l)
                .unwrap_or((0, 0));
            let n = len.div_ceil(4).max(1);
            match which {
                0 => drop(self.read.drain(..n)),
                1 => drop(self.listed.drain(..n)),
                2 => drop(self.searched.drain(..n)),
                3 => drop(self.written.drain(..n)),
                4 => drop(self.commands.drain(..n)),
                _ => drop(self.mcp.drain(..n)),
            }
            self.omitted += n as u64;
        }
    }

    /// The `## Exact facts` section (empty string when there are none).
    pub fn render(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "{FACTS_HEADING}\nRecorded mechanically from the tool calls of the compacted conversation (exact, not paraphrased).\n"
        );
        let mut list = |title: &str, items: Vec<String>| {
            if !items.is_empty() {
                out.push_str(&format!("\n{title}:\n"));
                for i in items {
                    out.push_str(&format!("- {i}\n"));
                }
            }
        };
        let q = |s: &String| format!("`{}`", one_line(s));
        list("Files read", self.read.iter().map(q).collect());
        list("Directories listed", self.listed.iter().map(q).collect());
        list(
            "Searches",
            self.searched
                .iter()
                .map(|s| format!("`{}` in `{}`", one_line(&s.pattern), one_line(&s.path)))
                .collect(),
        );
        list("Files changed", self.written.iter().map(q).collect());
        list(
            "Shell commands (latest result)",
            self.commands
                .iter()
                .map(|c| format!("`{}` → {}", one_line(&c.command), c.status))
                .collect(),
        );
        list(
            "MCP tool calls (latest result)",
            self.mcp
                .iter()
                .map(|c| {
                    let times = if c.calls == 1 {
                        String::new()
                    } else {
                        format!(" ({} calls)", c.calls)
                    };
                    format!("`{}` → {}{times}", one_line(&c.tool), c.status)
                })
                .collect(),
        );
        list(
            "Tasks (child sessions; continue one with the task tool's `session`, or `recall` what it said)",
            self.tasks
                .iter()
                .map(|t| {
                    format!(
                        "`{}` ({}): {}",
                        t.session,
                        one_line(&t.profile),
                        t.description.replace('\n', " ")
                    )
                })
                .collect(),
        );
        if self.omitted > 0 {
            out.push_str(&format!(
                "\n({} older entries omitted to keep this list short.)\n",
                self.omitted
            ));
        }
        out.truncate(out.trim_end().len());
        out
    }
}

fn one_line(s: &str) -> String {
    s.replace('\n', "\\n").replace('`', "'")
}

fn cap<T>(list: &mut Vec<T>) -> u64 {
    if list.len() > MAX_ENTRIES {
        let n = list.len() - MAX_ENTRIES;
        list.drain(..n);
        n as u64
    } else {
        0
    }
}

/// The model-written part of a stored summary (without the facts section).
pub fn strip_facts(summary: &str) -> &str {
    let cut = if summary.starts_with(FACTS_HEADING) {
        Some(0)
    } else {
        summary.find(&format!("\n{FACTS_HEADING}\n"))
    };
    match cut {
        Some(i) => summary[..i].trim_end(),
        None => summary.trim_end(),
    }
}

#[cfg(test)]
mod tests;
