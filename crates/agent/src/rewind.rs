//! What a rewind does to files (docs/cli.md#rewind-and-fork): from the
//! rewound turns' `undo`s, the plan (per file: restore, remove, nothing to
//! do, or leave alone and say why), and carrying it out.
//!
//! Invariants:
//! - A file is restored only when it still holds exactly what eonyx wrote
//!   last (sha256 after); anything else is left alone and named.
//! - Each file is written (or removed) at most once, atomically: a crash
//!   leaves it restored or untouched, never between two of its versions.
//! - Shell commands are never undone, only listed.

use std::collections::HashMap;
use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::fs::{AtomicWrite, write_atomic};
use eonyx_core::{MessageRecord, Role, ShellOutcome, ToolName, Undo};
use eonyx_store::{FileHistory, sha256_hex};

/// Opens the message a `!command` puts in the conversation (the agent
/// writes it; a rewind lists such commands as not undone).
pub const COMMAND_HEADER: &str = eonyx_core::said::COMMAND_HEADER;

/// A rewound user turn, as listed before asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewoundTurn {
    pub seq: u64,
    /// The user's text.
    pub text: String,
}

/// What happens to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileAction {
    /// Put back its content from before the rewound turns.
    Restore,
    /// The rewound turns created it: remove it.
    Remove,
    /// It already holds its content from before (a rewind interrupted
    /// after restoring it, or the user put it back): nothing to do.
    Unchanged,
    /// Not touched, for the reason given.
    LeftAlone(String),
}

/// One file the rewound turns changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    pub path: Utf8PathBuf,
    /// Relative to the project root when inside it.
    pub shown: String,
    pub action: FileAction,
    /// Said along with a restore that goes back less far than the turns
    /// (an edit by someone else between eonyx's, a content not kept).
    pub note: Option<String>,
    /// sha256 the file must hold to be restored.
    expect: String,
    /// sha256 of the content to put back; `None`: remove.
    target: Option<String>,
    /// The file history holding it (the session's, or a task's).
    from: FileHistory,
}

/// What `/rewind` will do: shown before it is done (the REPL asks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPlan {
    /// The rewind record's target.
    pub to_seq: u64,
    /// The rewound user turns, oldest first.
    pub turns: Vec<RewoundTurn>,
    /// Files the turns changed, newest change first (the order they are
    /// restored in). Empty with `--keep-files`.
    pub files: Vec<FilePlan>,
    /// `shell` commands the turns ran: not undone.
    pub commands: Vec<String>,
    /// `--keep-files`: only the conversation goes back.
    pub keep_files: bool,
}

/// What a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewindReport {
    pub to_seq: u64,
    /// Number of user turns rewound.
    pub turns: usize,
    pub restored: Vec<String>,
    pub removed: Vec<String>,
    /// (file, why it was left alone).
    pub left_alone: Vec<(String, String)>,
    /// (file, why it was restored to a later version than the turns').
    pub notes: Vec<(String, String)>,
    /// Shell commands of the rewound turns (not undone).
    pub not_undone: Vec<String>,
    pub keep_files: bool,
    /// Set when this finished a rewind a crash interrupted.
    pub resumed: bool,
}

/// Where the rewound changes were made: a session's messages (oldest
/// first) and its file history, which holds the contents before them.
#[derive(Debug, Clone)]
pub(crate) struct Changes {
    pub records: Vec<MessageRecord>,
    pub history: FileHistory,
}

/// Plan the rewind of `records` (the rewound turns' messages, oldest
/// first) back to `to_seq`; `history` is the session's file history and
/// `tasks` the changes the tasks of those turns made in their own (child)
/// sessions, which are undone with them.
pub(crate) fn plan(
    records: &[MessageRecord],
    to_seq: u64,
    root: &Utf8Path,
    history: &FileHistory,
    tasks: &[Changes],
    keep_files: bool,
) -> RewindPlan {
    let turns = records
        .iter()
        .filter(|r| r.message.role == Role::User)
        .map(|r| RewoundTurn {
            seq: r.seq,
            text: match user_command(&r.message) {
                Some(command) => format!("!{command}"),
                None => r.message.content.text(),
            },
        })
        .collect();
    let mut sources = vec![(records, history)];
    sources.extend(tasks.iter().map(|c| (c.records.as_slice(), &c.history)));
    let files = if keep_files {
        Vec::new()
    } else {
        file_plans(&sources, root)
    };
    RewindPlan {
        to_seq,
        turns,
        files,
        commands: sources
            .iter()
            .flat_map(|(records, _)| shell_commands(records))
            .collect(),
        keep_files,
    }
}

/// The command of a `!command`'s message (the user ran it), if `m` is one.
fn user_command(m: &eonyx_core::Message) -> Option<String> {
    if m.role != Role::User {
        return None;
    }
    let text = m.content.text();
    let rest = text.strip_prefix(COMMAND_HEADER)?;
    let line = rest.trim_start_matches('\n').lines().next()?;
    line.strip_prefix("$ ").map(str::to_owned)
}

/// The shell commands the records ran: `shell` calls (denied ones never
/// ran) and the user's `!command`s, in order.
fn shell_commands(records: &[MessageRecord]) -> Vec<String> {
    let results: HashMap<&str, String> = records
        .iter()
        .filter_map(|r| {
            let id = r.message.tool_call_id.as_deref()?;
            Some((id, r.message.content.text()))
        })
        .collect();
    let mut out = Vec::new();
    for r in records {
        out.extend(user_command(&r.message));
        for c in &r.message.tool_calls {
            if ToolName::parse(&c.name) != Some(ToolName::Shell) {
                continue;
            }
            let outcome = results
                .get(c.id.as_str())
                .and_then(|t| ShellOutcome::from_result(t));
            if outcome == Some(ShellOutcome::Denied) {
                continue;
            }
            out.push(
                c.arguments
                    .get(eonyx_core::tool::arg::COMMAND)
                    .and_then(|v| v.as_str())
                    .map_or_else(|| c.arguments_json(), str::to_owned),
            );
        }
    }
    out
}

/// One change and the history holding its content before.
type Change<'a> = (&'a Undo, &'a FileHistory);

fn file_plans(sources: &[(&[MessageRecord], &FileHistory)], root: &Utf8Path) -> Vec<FilePlan> {
    // Every change in the order it was made (a task's changes fall between
    // its parent's by time), then per file, oldest first; files newest
    // change first, the order a rewind undoes them in.
    let mut all: Vec<(i128, usize, Change<'_>)> = Vec::new();
    for (records, history) in sources {
        for r in records.iter() {
            if let Some(u) = &r.message.undo {
                let at = eonyx_core::time::parse_rfc3339(&r.ts).map_or(0, |t| t.as_nanosecond());
                all.push((at, all.len(), (&**u, *history)));
            }
        }
    }
    all.sort_by_key(|(at, i, _)| (*at, *i));
    let mut by_path: Vec<(String, Vec<Change<'_>>)> = Vec::new();
    for (_, _, (u, h)) in all {
        match by_path.iter().position(|(p, _)| *p == u.path) {
            Some(i) => {
                let mut entry = by_path.remove(i);
                entry.1.push((u, h));
                by_path.push(entry);
            }
            None => by_path.push((u.path.clone(), vec![(u, h)])),
        }
    }
    let root = root
        .canonicalize_utf8()
        .unwrap_or_else(|_| root.to_path_buf());
    by_path
        .into_iter()
        .rev()
        .map(|(path, changes)| file_plan(Utf8PathBuf::from(path), &changes, &root))
        .collect()
}

/// The plan for one file from its changes (oldest first): undo them
/// newest first as long as they chain (each one's content before is what
/// the one before it wrote) and their earlier content was kept.
fn file_plan(path: Utf8PathBuf, changes: &[Change<'_>], root: &Utf8Path) -> FilePlan {
    let shown = crate::tools::display_path(root, &path);
    let (newest, newest_history) = changes[changes.len() - 1];
    let mut plan = FilePlan {
        path,
        shown,
        action: FileAction::Unchanged,
        note: None,
        expect: newest.after.clone(),
        target: newest.before.clone(),
        from: newest_history.clone(),
    };
    if !newest.kept {
        plan.action = FileAction::LeftAlone(
            "its earlier content held an API key value, so eonyx kept no copy of it".into(),
        );
        return plan;
    }
    for (older, history) in changes.iter().rev().skip(1) {
        if plan.target.as_deref() != Some(older.after.as_str()) {
            plan.note = Some(
                "it was changed by someone else between eonyx's edits: restored to that version"
                    .into(),
            );
            break;
        }
        if !older.kept {
            plan.note = Some(
                "an earlier content held an API key value and was not kept: restored only to the version after it"
                    .into(),
            );
            break;
        }
        plan.target = older.before.clone();
        plan.from = (*history).clone();
    }
    let current = current_hash(&plan.path);
    if let Some(sha) = &plan.target
        && current.as_ref() != Some(sha)
        && !matches!(plan.from.get(sha), Ok(Some(_)))
    {
        plan.action =
            FileAction::LeftAlone("its earlier content is missing from the file history".into());
        return plan;
    }
    plan.action = match current {
        Some(c) if c == plan.expect => match plan.target {
            Some(_) => FileAction::Restore,
            None => FileAction::Remove,
        },
        c if c == plan.target => FileAction::Unchanged,
        None => FileAction::LeftAlone("it was deleted since eonyx wrote it".into()),
        Some(_) => FileAction::LeftAlone("it was changed since eonyx wrote it".into()),
    };
    plan
}

/// sha256 of the file's content; `None` when it does not exist (or
/// cannot be read: then it cannot match either).
fn current_hash(path: &Utf8Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| sha256_hex(&b))
}

/// Carry out the file part of `plan`, file by file in the plan's order
/// (newest change first): each one is checked
/// again (it may have changed while the user was asked), then written or
/// removed once, atomically. `pause` waits after each file (a test hook,
/// `EONYX_TEST_REWIND_PAUSE_MS`).
pub(crate) fn restore(plan: &RewindPlan, pause: Option<Duration>) -> RewindReport {
    let mut report = RewindReport {
        to_seq: plan.to_seq,
        turns: plan.turns.len(),
        not_undone: plan.commands.clone(),
        keep_files: plan.keep_files,
        ..RewindReport::default()
    };
    for f in &plan.files {
        let shown = f.shown.clone();
        match &f.action {
            FileAction::LeftAlone(why) => {
                report.left_alone.push((shown, why.clone()));
                continue;
            }
            FileAction::Unchanged => {
                match f.target {
                    Some(_) => report.restored.push(shown),
                    None => report.removed.push(shown),
                }
                continue;
            }
            FileAction::Restore | FileAction::Remove => {}
        }
        let current = current_hash(&f.path);
        if current.as_deref() != Some(f.expect.as_str()) {
            if current == f.target {
                match f.target {
                    Some(_) => report.restored.push(shown),
                    None => report.removed.push(shown),
                }
            } else {
                report
                    .left_alone
                    .push((shown, "it was changed since eonyx wrote it".into()));
            }
            continue;
        }
        let done = match &f.target {
            Some(sha) => match f.from.get(sha) {
                Ok(Some(bytes)) => {
                    let how = AtomicWrite {
                        durable: true,
                        private: false,
                    };
                    write_atomic(&f.path, &bytes, how).map(|()| true)
                }
                Ok(None) => Ok(false),
                Err(e) => Err(std::io::Error::other(e.to_string())),
            },
            None => std::fs::remove_file(&f.path).map(|()| true),
        };
        match done {
            Ok(true) if f.target.is_some() => report.restored.push(shown),
            Ok(true) => report.removed.push(shown),
            Ok(false) => report.left_alone.push((
                shown,
                "its earlier content is missing from the file history".into(),
            )),
            Err(e) => report
                .left_alone
                .push((shown, format!("it could not be restored: {e}"))),
        }
        if let Some(note) = &f.note {
            report.notes.push((f.shown.clone(), note.clone()));
        }
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::{Message, ToolCall};
    use serde_json::json;

    struct Fx {
        _dir: tempfile::TempDir,
        root: Utf8PathBuf,
        history: FileHistory,
        seq: u64,
        records: Vec<MessageRecord>,
    }

    impl Fx {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = Utf8PathBuf::from_path_buf(dir.path().canonicalize().unwrap()).unwrap();
            let store = eonyx_store::Store::open(&root.join("data")).unwrap();
            let id = eonyx_core::SessionId::parse("20260101T000000-00000001").unwrap();
            std::fs::create_dir_all(root.join("p")).unwrap();
            Self {
                history: store.file_history(&id),
                _dir: dir,
                root,
                seq: 0,
                records: Vec::new(),
            }
        }

        fn push(&mut self, m: Message) {
            self.seq += 1;
            self.records.push(MessageRecord {
                seq: self.seq,
                ts: String::new(),
                message: m,
            });
        }

        /// A tool result recording that eonyx wrote `new` over `old`.
        fn wrote(&mut self, rel: &str, old: Option<&str>, new: &str) {
            let path = self.root.join("p").join(rel);
            let before = old.map(|o| self.history.keep(o.as_bytes()).unwrap());
            std::fs::write(&path, new).unwrap();
            let mut m = Message::tool_result("c", "changed");
            m.undo = Some(Box::new(Undo {
                path: path.to_string(),
                before,
                after: sha256_hex(new.as_bytes()),
                kept: true,
            }));
            self.push(m);
        }

        fn plan(&self) -> RewindPlan {
            plan(
                &self.records,
                0,
                &self.root.join("p"),
                &self.history,
                &[],
                false,
            )
        }

        fn read(&self, rel: &str) -> Option<String> {
            std::fs::read_to_string(self.root.join("p").join(rel)).ok()
        }
    }

    #[test]
    fn edits_are_undone_newest_first_in_one_write_per_file() {
        let mut fx = Fx::new();
        std::fs::write(fx.root.join("p/a.txt"), "v0\n").unwrap();
        fx.push(Message::user("edit a twice, create b"));
        fx.wrote("a.txt", Some("v0\n"), "v1\n");
        fx.wrote("b.txt", None, "new\n");
        fx.wrote("a.txt", Some("v1\n"), "v2\n");
        let plan = fx.plan();
        let actions: Vec<(&str, &FileAction)> = plan
            .files
            .iter()
            .map(|f| (f.shown.as_str(), &f.action))
            .collect();
        assert_eq!(
            actions,
            [
                ("a.txt", &FileAction::Restore),
                ("b.txt", &FileAction::Remove)
            ]
        );
        let report = restore(&plan, None);
        assert_eq!(report.restored, ["a.txt"]);
        assert_eq!(report.removed, ["b.txt"]);
        assert!(report.left_alone.is_empty(), "{report:?}");
        assert_eq!(fx.read("a.txt").as_deref(), Some("v0\n"));
        assert_eq!(fx.read("b.txt"), None);
        // Done again (a crash before the record): nothing left to do, and
        // the files count as restored.
        let again = fx.plan();
        assert!(
            again
                .files
                .iter()
                .all(|f| f.action == FileAction::Unchanged)
        );
        let report = restore(&again, None);
        assert_eq!(
            (report.restored, report.removed),
            (vec!["a.txt".to_owned()], vec!["b.txt".to_owned()])
        );
    }

    #[test]
    fn a_file_changed_since_is_left_alone_and_named() {
        let mut fx = Fx::new();
        fx.push(Message::user("create c"));
        fx.wrote("c.txt", None, "eonyx\n");
        std::fs::write(fx.root.join("p/c.txt"), "the user's\n").unwrap();
        let plan = fx.plan();
        assert_eq!(
            plan.files[0].action,
            FileAction::LeftAlone("it was changed since eonyx wrote it".into())
        );
        let report = restore(&plan, None);
        assert_eq!(report.left_alone[0].0, "c.txt");
        assert_eq!(fx.read("c.txt").as_deref(), Some("the user's\n"));
    }

    #[test]
    fn a_change_between_two_edits_stops_the_chain_there() {
        let mut fx = Fx::new();
        fx.push(Message::user("edit d twice"));
        std::fs::write(fx.root.join("p/d.txt"), "v0\n").unwrap();
        fx.wrote("d.txt", Some("v0\n"), "v1\n");
        // The user edits between the two changes.
        fx.wrote("d.txt", Some("user\n"), "v2\n");
        let plan = fx.plan();
        assert_eq!(plan.files[0].action, FileAction::Restore);
        assert!(plan.files[0].note.is_some());
        restore(&plan, None);
        assert_eq!(fx.read("d.txt").as_deref(), Some("user\n"));
    }

    #[test]
    fn shell_commands_that_ran_are_listed_denied_ones_are_not() {
        let mut fx = Fx::new();
        fx.push(Message::user("run things"));
        let mut call = Message::assistant("");
        for (id, cmd) in [("s1", "cargo build"), ("s2", "rm -rf target")] {
            call.tool_calls.push(ToolCall {
                id: id.into(),
                name: "shell".into(),
                arguments: json!({ "command": cmd }),
            });
        }
        fx.push(call);
        fx.push(Message::tool_result("s1", "exit status: 0\nok"));
        fx.push(Message::tool_result(
            "s2",
            "denied: shell commands need approval",
        ));
        // A `!command` the user ran is one too.
        fx.push(Message::user(format!(
            "{}\n$ git stash\nexit status: 0\nSaved",
            COMMAND_HEADER
        )));
        assert_eq!(fx.plan().commands, ["cargo build", "git stash"]);
        assert_eq!(fx.plan().turns[0].text, "run things");
        assert_eq!(fx.plan().turns[1].text, "!git stash");
    }

    #[test]
    fn a_tasks_changes_are_undone_with_its_history_in_time_order() {
        let mut fx = Fx::new();
        fx.push(Message::user("delegate"));
        std::fs::write(fx.root.join("p/t.txt"), "v0\n").unwrap();
        fx.wrote("t.txt", Some("v0\n"), "v1\n");
        // A task (another session, another history) edits it next.
        let store = eonyx_store::Store::open(&fx.root.join("data")).unwrap();
        let child =
            store.file_history(&eonyx_core::SessionId::parse("20260101T000000-00000002").unwrap());
        let before = child.keep(b"v1\n").unwrap();
        std::fs::write(fx.root.join("p/t.txt"), "v2\n").unwrap();
        let mut m = Message::tool_result("c", "changed");
        m.undo = Some(Box::new(Undo {
            path: fx.root.join("p/t.txt").to_string(),
            before: Some(before),
            after: sha256_hex(b"v2\n"),
            kept: true,
        }));
        let task = Changes {
            records: vec![MessageRecord {
                seq: 1,
                ts: "2999-01-01T00:00:00Z".into(),
                message: m,
            }],
            history: child,
        };
        let plan = plan(
            &fx.records,
            0,
            &fx.root.join("p"),
            &fx.history,
            &[task],
            false,
        );
        assert_eq!(plan.files.len(), 1);
        assert_eq!(plan.files[0].action, FileAction::Restore);
        assert_eq!(plan.files[0].note, None, "the two edits chain");
        restore(&plan, None);
        assert_eq!(fx.read("t.txt").as_deref(), Some("v0\n"));
    }
}
