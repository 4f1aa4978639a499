//! Exact facts: paths, commands and tasks gathered mechanically from the
//! compacted tool calls, merged across compactions and rendered after the
//! model's summary. Never paraphrased by a model.
//!
//! Tasks (child sessions started with the `task` tool) are never dropped:
//! no cap, no trimming, so however often the parent compacts its requests
//! name every child it started (docs/compaction.md#exact-facts).

use std::collections::HashMap;

use eonyx_core::tool::{ShellOutcome, TaskHeader, ToolName, arg as key, is_file_changed};
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
            && self.commands.is_empty())
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
        let mut results: HashMap<&str, String> = HashMap::new();
        for r in records {
            if r.message.role == Role::Tool
                && let Some(id) = &r.message.tool_call_id
            {
                results.insert(id.as_str(), r.message.content.text());
            }
        }
        let mut f = Facts::default();
        for r in records {
            for c in &r.message.tool_calls {
                let a = &c.arguments;
                let Some(tool) = ToolName::parse(&c.name) else {
                    continue;
                };
                match tool {
                    // Looking up the conversation itself touches no file.
                    ToolName::Recall => {}
                    // Skills in use are kept by name in the record itself.
                    ToolName::Skill => {}
                    // A note for later sessions touches no file.
                    ToolName::Memory => {}
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
                            let status =
                                shell_status(results.get(c.id.as_str()).map(|s| s.as_str()));
                            f.add_command(CommandFact {
                                command: shorten(&cmd),
                                status,
                            });
                        }
                    }
                    ToolName::Task => {
                        // Only calls that started (or continued) a child.
                        let header = results
                            .get(c.id.as_str())
                            .and_then(|r| TaskHeader::from_result(r));
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
                        let changed = results
                            .get(c.id.as_str())
                            .is_some_and(|r| is_file_changed(r));
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
        for t in newer.tasks {
            self.add_task(t);
        }
        self.omitted += newer.omitted;
        self.omitted += cap(&mut self.read)
            + cap(&mut self.listed)
            + cap(&mut self.searched)
            + cap(&mut self.written)
            + cap(&mut self.commands);
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
                _ => drop(self.commands.drain(..n)),
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
mod tests {
    use super::*;
    use eonyx_core::{Message, ToolCall};
    use serde_json::json;

    fn call(seq: u64, id: &str, name: &str, args: Value) -> MessageRecord {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args,
        });
        MessageRecord {
            seq,
            ts: String::new(),
            message: m,
        }
    }

    fn result(seq: u64, id: &str, text: &str) -> MessageRecord {
        MessageRecord {
            seq,
            ts: String::new(),
            message: Message::tool_result(id, text),
        }
    }

    #[test]
    fn gathers_paths_and_commands_with_status() {
        let recs = vec![
            call(1, "a", "read_file", json!({"path": "src/lib.rs"})),
            result(2, "a", "fn main() {}"),
            call(3, "b", "list_dir", json!({"path": "src"})),
            result(4, "b", "lib.rs"),
            call(5, "c", "grep", json!({"pattern": "TODO", "path": "crates"})),
            result(6, "c", "none"),
            call(7, "d", "shell", json!({"command": "cargo test"})),
            result(8, "d", "exit status: 101\nfailures"),
            call(9, "e", "shell", json!({"command": "sleep 99"})),
            result(10, "e", "timed out after 120s"),
            call(11, "f", "shell", json!({"command": "rm -rf /"})),
            result(12, "f", "denied: shell is not allowed in batch runs"),
            call(
                13,
                "g",
                "write_file",
                json!({"path": "out.txt", "content": "x"}),
            ),
            result(14, "g", "changed out.txt (+1 -0 lines)"),
            call(15, "h", "shell", json!({"command": "true"})),
            call(16, "i", "edit_file", json!({"path": "denied.txt"})),
            result(17, "i", "denied: writing files needs approval"),
            call(18, "j", "edit_file", json!({"path": "nomatch.txt"})),
            result(19, "j", "no match for old_string in nomatch.txt"),
        ];
        let f = Facts::from_records(&recs);
        assert_eq!(f.read, vec!["src/lib.rs"]);
        assert_eq!(f.listed, vec!["src"]);
        assert_eq!(
            f.searched,
            vec![SearchFact {
                pattern: "TODO".into(),
                path: "crates".into()
            }]
        );
        assert_eq!(f.written, vec!["out.txt"]);
        let st: Vec<_> = f.commands.iter().map(|c| c.status.as_str()).collect();
        assert_eq!(
            st,
            vec![
                "exit status: 101",
                "timed out after 120s",
                "denied",
                "no result"
            ]
        );
        let text = f.render();
        assert!(text.starts_with(FACTS_HEADING));
        assert!(text.contains("- `cargo test` → exit status: 101"));
        assert!(text.contains("- `TODO` in `crates`"));
        assert!(text.contains("Files changed:\n- `out.txt`"), "{text}");
    }

    #[test]
    fn merge_keeps_old_entries_and_newest_status() {
        let old = Facts::from_records(&[
            call(1, "a", "read_file", json!({"path": "a.rs"})),
            call(2, "b", "shell", json!({"command": "make"})),
            result(3, "b", "exit status: 2"),
        ]);
        let new = Facts::from_records(&[
            call(4, "c", "read_file", json!({"path": "b.rs"})),
            call(5, "d", "read_file", json!({"path": "a.rs"})),
            call(6, "e", "shell", json!({"command": "make"})),
            result(7, "e", "exit status: 0"),
        ]);
        let m = Facts::from_value(Some(&old.to_value())).merge(new);
        assert_eq!(m.read, vec!["a.rs", "b.rs"]);
        assert_eq!(m.commands.len(), 1);
        assert_eq!(m.commands[0].status, "exit status: 0");
    }

    #[test]
    fn lists_are_capped_visibly() {
        let mut f = Facts::default();
        for i in 0..(MAX_ENTRIES + 5) {
            f = f.merge(Facts {
                read: vec![format!("f{i}")],
                ..Facts::default()
            });
        }
        assert_eq!(f.read.len(), MAX_ENTRIES);
        assert_eq!(f.read[0], "f5");
        assert!(f.render().contains("(5 older entries omitted"));
    }

    #[test]
    fn trim_to_bounds_the_section() {
        let mut f = Facts {
            read: (0..100).map(|i| format!("src/file_{i}.rs")).collect(),
            commands: vec![CommandFact {
                command: "make".into(),
                status: "exit status: 0".into(),
            }],
            ..Facts::default()
        };
        f.trim_to(600);
        let r = f.render();
        assert!(r.chars().count() <= 600, "{}", r.len());
        assert!(r.contains("src/file_99.rs") && !r.contains("src/file_0.rs"));
        assert!(r.contains("`make`"));
        assert!(r.contains("older entries omitted"));
    }

    #[test]
    fn tasks_are_listed_exactly_merged_once_per_child_and_never_trimmed() {
        let task = |seq, id: &str, desc: &str| {
            call(
                seq,
                id,
                "task",
                json!({"prompt": "p", "description": desc, "profile": "explore"}),
            )
        };
        let first = Facts::from_records(&[
            task(1, "a", "find the retry policy"),
            result(
                2,
                "a",
                "task session 20260705T091500-1a2b3c4d · profile explore · 3 steps\n\nIn src/retry.rs.",
            ),
            // Refused before any child existed: nothing to list.
            task(3, "b", "bad"),
            result(4, "b", "unknown profile `nope`; profiles: explore, general"),
        ]);
        assert_eq!(
            first.tasks,
            vec![TaskFact {
                session: "20260705T091500-1a2b3c4d".into(),
                profile: "explore".into(),
                description: "find the retry policy".into()
            }]
        );
        let second = Facts::from_records(&[
            task(5, "c", "look again"),
            result(
                6,
                "c",
                "task session 20260705T091500-1a2b3c4d · profile explore · 1 step · interrupted",
            ),
            task(7, "d", "write the fix"),
            result(
                8,
                "d",
                "task session 20260705T091600-00000002 · profile general · 2 steps\n\ndone",
            ),
        ]);
        let mut merged = Facts::from_value(Some(&first.to_value())).merge(second);
        assert_eq!(merged.tasks.len(), 2, "the continued child once");
        assert_eq!(merged.tasks[0].description, "find the retry policy");
        merged.read = (0..300).map(|i| format!("src/f{i}.rs")).collect();
        merged.trim_to(400);
        assert!(merged.read.is_empty() || merged.read.len() < 300);
        let text = merged.render();
        assert!(
            text.contains("- `20260705T091500-1a2b3c4d` (explore): find the retry policy"),
            "{text}"
        );
        assert!(
            text.contains("- `20260705T091600-00000002` (general): write the fix"),
            "{text}"
        );
        // Only tasks left, over the limit: still every one, and no panic.
        let mut only = Facts {
            tasks: merged.tasks.clone(),
            ..Facts::default()
        };
        only.trim_to(10);
        assert_eq!(only.tasks.len(), 2);
        assert!(!only.is_empty());
    }

    #[test]
    fn strip_facts_returns_the_model_text() {
        assert_eq!(
            strip_facts("## Goal\nx\n\n## Exact facts\n- a"),
            "## Goal\nx"
        );
        assert_eq!(strip_facts("## Exact facts\n- a"), "");
        assert_eq!(strip_facts("plain\n"), "plain");
    }
}
