//! `write_file` and `edit_file` (docs/tools.md#editing): exact content, exact matches,
//! atomic writes that keep the file's mode and line endings, a unified diff
//! shown before asking, and a warning when the file changed on disk since
//! the model last saw it.
//!
//! Invariants:
//! - A failed call (no match, several matches, denial, limit) changes
//!   nothing on disk.
//! - A change is made only after the content before it is kept in the
//!   session's file history (or found to hold a key value, and marked not
//!   undoable); its result carries the `undo`
//!   (docs/session-format.md#undo).
//! - A successful call's result starts with
//!   [`eonyx_core::tool::file_changed_line`]; the compaction facts count only
//!   those as "files changed".

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::fs::{AtomicWrite, write_atomic};
use eonyx_core::tool::file_changed_line;
use eonyx_core::{ToolName, Undo};
use serde::Deserialize;
use serde_json::Value;

use super::{
    ApprovalKind, CallEnv, Decision, ToolContext, ToolError, ToolOutput, UndoStore, approve,
    looks_binary, parse_args, resolve_path,
};

/// A file change, for the diff on stderr and the `file_changed` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// As shown: relative to the project root when inside it.
    pub path: String,
    /// Lines added and removed.
    pub added: usize,
    pub removed: usize,
    /// Unified diff (`--- a/PATH`, `+++ b/PATH`, hunks), LF line endings.
    pub diff: String,
    /// The file did not exist before.
    pub created: bool,
}

/// What the model last saw of each file in this session (read or written):
/// size and modification time. Shared by the tools of one agent.
#[derive(Debug, Clone, Default)]
pub struct SeenFiles(Arc<Mutex<HashMap<Utf8PathBuf, Stamp>>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

fn stamp_of(path: &Utf8Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
    })
}

impl SeenFiles {
    /// Remember `path` as it is on disk now.
    pub fn record(&self, path: &Utf8Path) {
        if let Some(s) = stamp_of(path) {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(path.to_path_buf(), s);
        }
    }

    /// Forget everything (a new or resumed session).
    pub fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Whether `path` was seen in this session and differs on disk now.
    fn changed_since_seen(&self, path: &Utf8Path) -> bool {
        let seen = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .copied();
        seen.is_some_and(|s| stamp_of(path) != Some(s))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Whether `path` (inside `root`) is `.git/…` or an `eonyx.json` anywhere
/// under the root: writes there always need the user's yes.
pub(crate) fn is_protected(root: &Utf8Path, path: &Utf8Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let mut parts = rel.components().map(|c| c.as_str()).peekable();
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        if part.eq_ignore_ascii_case(".git")
            || (last && part.eq_ignore_ascii_case(eonyx_core::paths::PROJECT_FILE))
        {
            return true;
        }
    }
    false
}

/// The text of a denied write.
pub const WRITE_DENIED: &str = "denied: writing files needs the user's approval; the user can \
     allow it by running eonyx with --allow-write (or tools.write = \"allow\" in config)";

pub(super) async fn write_file(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let ctx = env.ctx;
    let args: WriteArgs = parse_args(ToolName::WriteFile, args)?;
    let target = Target::open(ToolName::WriteFile, &args.path, ctx)?;
    if looks_binary(args.content.as_bytes()) {
        return Err(ToolError::Usage(format!(
            "write_file: the content for {} contains NUL bytes; only text files can be written",
            target.shown
        )));
    }
    target.check_size(args.content.len() as u64, ctx)?;
    let stale = target.exists && ctx.seen.changed_since_seen(&target.path);
    if stale {
        return Err(ToolError::Usage(format!(
            "{} changed on disk since you last read or wrote it in this session (probably the \
             user's edit); nothing written. Read it again with read_file, then retry",
            target.shown
        )));
    }
    let old = target.current_text(ctx).await?;
    target.commit(old, args.content, false, env).await
}

pub(super) async fn edit_file(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let ctx = env.ctx;
    let args: EditArgs = parse_args(ToolName::EditFile, args)?;
    let target = Target::open(ToolName::EditFile, &args.path, ctx)?;
    let shown = &target.shown;
    let old = target.current_text(ctx).await?;
    let new = match &old {
        None if args.old_string.is_empty() => args.new_string.clone(),
        None => {
            return Err(ToolError::Usage(format!(
                "{shown}: no such file; to create it, use write_file or edit_file with an empty \
                 old_string"
            )));
        }
        Some(text) if args.old_string.is_empty() => {
            if !text.is_empty() {
                return Err(ToolError::Usage(format!(
                    "edit_file: old_string is empty but {shown} exists and is not empty; give \
                     the text to replace, or use write_file to replace the whole file"
                )));
            }
            args.new_string.clone()
        }
        Some(text) => replace(
            text,
            &args.old_string,
            &args.new_string,
            args.replace_all,
            shown,
        )?,
    };
    if old.as_deref() == Some(new.as_str()) {
        return Err(ToolError::Usage(format!(
            "edit_file: old_string and new_string are the same; {shown} is unchanged"
        )));
    }
    target.check_size(new.len() as u64, ctx)?;
    let stale = target.exists && ctx.seen.changed_since_seen(&target.path);
    target.commit(old, new, stale, env).await
}

/// Replace `old` by `new` in `text`: exactly one match, or every match with
/// `all`. A CRLF file is matched and written with CRLF even when the model
/// sends LF.
fn replace(text: &str, old: &str, new: &str, all: bool, shown: &str) -> Result<String, ToolError> {
    let crlf = text.contains("\r\n") && !has_bare_lf(text);
    let (text_n, old_n, new_n) = if crlf && !old.contains('\r') {
        (
            text.replace("\r\n", "\n"),
            old.to_owned(),
            new.replace("\r\n", "\n"),
        )
    } else {
        (text.to_owned(), old.to_owned(), new.to_owned())
    };
    let starts: Vec<usize> = text_n.match_indices(&old_n).map(|(i, _)| i).collect();
    match starts.len() {
        0 => {
            return Err(ToolError::Usage(format!(
                "edit_file: no match for old_string in {shown}; nothing changed. Read the file \
                 again and copy the text exactly, including whitespace and indentation"
            )));
        }
        1 => {}
        n if !all => {
            let lines: Vec<String> = starts
                .iter()
                .take(20)
                .map(|&i| (text_n[..i].matches('\n').count() + 1).to_string())
                .collect();
            return Err(ToolError::Usage(format!(
                "edit_file: old_string matches {n} times in {shown} (lines {}); nothing changed. \
                 Include more surrounding lines to make it unique, or set replace_all: true",
                lines.join(", ")
            )));
        }
        _ => {}
    }
    let replaced = text_n.replace(&old_n, &new_n);
    Ok(if crlf && !old.contains('\r') {
        replaced.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        replaced
    })
}

fn has_bare_lf(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'\n' && (i == 0 || b[i - 1] != b'\r'))
}

/// A resolved file a write tool is about to change.
struct Target {
    tool: ToolName,
    path: Utf8PathBuf,
    shown: String,
    inside: bool,
    /// `.git/` or `eonyx.json` under the root ([`is_protected`]).
    protected: bool,
    exists: bool,
}

impl Target {
    fn open(tool: ToolName, raw: &str, ctx: &ToolContext) -> Result<Self, ToolError> {
        if raw.trim().is_empty() {
            return Err(ToolError::Usage(format!("{tool}: path is empty")));
        }
        let r = resolve_path(&ctx.project_root, raw)?;
        if r.path.is_dir() {
            return Err(ToolError::Usage(format!(
                "{tool}: {} is a directory; give a file path",
                r.display()
            )));
        }
        Ok(Self {
            tool,
            shown: r.display(),
            protected: r.inside && is_protected(&r.root, &r.path),
            path: r.path,
            inside: r.inside,
            exists: r.exists,
        })
    }

    fn check_size(&self, len: u64, ctx: &ToolContext) -> Result<(), ToolError> {
        if len > ctx.max_edit_bytes {
            return Err(ToolError::Usage(format!(
                "{}: {} would be {len} bytes, over the {} byte limit (tools.max_edit_bytes); \
                 nothing changed",
                self.tool, self.shown, ctx.max_edit_bytes
            )));
        }
        Ok(())
    }

    /// The current text: the client's when it has a file system (an
    /// unsaved buffer counts), else the disk's.
    async fn current_text(&self, ctx: &ToolContext) -> Result<Option<String>, ToolError> {
        let Some(files) = &ctx.files else {
            return self.read_text(ctx);
        };
        if !self.path.is_file() {
            return self.read_text(ctx);
        }
        let text = files.read_text(&self.path).await.map_err(|e| {
            ToolError::io("cannot read", self.shown.clone(), std::io::Error::other(e))
        })?;
        self.check_size(text.len() as u64, ctx)?;
        if looks_binary(text.as_bytes()) {
            return Err(ToolError::Usage(format!(
                "{}: {} is a binary file; only text files can be changed",
                self.tool, self.shown
            )));
        }
        Ok(Some(text))
    }

    /// The current text on disk, `None` when the file does not exist.
    /// Refuses binary, non-UTF-8 and oversized files.
    fn read_text(&self, ctx: &ToolContext) -> Result<Option<String>, ToolError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ToolError::io("cannot read", self.shown.clone(), e)),
        };
        if meta.len() > ctx.max_edit_bytes {
            return Err(ToolError::Usage(format!(
                "{}: {} is {} bytes, over the {} byte limit (tools.max_edit_bytes); nothing \
                 changed. Use shell for large files",
                self.tool,
                self.shown,
                meta.len(),
                ctx.max_edit_bytes
            )));
        }
        let bytes = std::fs::read(&self.path)
            .map_err(|e| ToolError::io("cannot read", self.shown.clone(), e))?;
        if looks_binary(&bytes) {
            return Err(ToolError::Usage(format!(
                "{}: {} is a binary file; only text files can be changed",
                self.tool, self.shown
            )));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| {
            ToolError::Usage(format!(
                "{}: {} is not UTF-8 text; only UTF-8 files can be changed",
                self.tool, self.shown
            ))
        })
    }

    /// Ask (showing the diff), write atomically, remember the new stamp.
    async fn commit(
        &self,
        old: Option<String>,
        new: String,
        stale: bool,
        env: CallEnv<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let CallEnv {
            ctx,
            approver,
            cancel,
        } = env;
        let change = diff(&self.shown, old.as_deref(), &new);
        let kind = ApprovalKind::Write {
            tool: self.tool,
            path: self.path.clone(),
            shown: self.shown.clone(),
            diff: change.diff.clone(),
            outside: !self.inside,
            protected: self.protected,
        };
        if approve(approver, &kind, cancel).await? == Decision::Deny {
            if let Some(denial) = approver.rule_denial(&kind) {
                return Err(ToolError::Denied(denial));
            }
            return Err(ToolError::Denied(if self.protected {
                format!(
                    "denied: {} is git's or eonyx's own configuration (.git/ or eonyx.json); \
                     changing it always needs the user's yes in the REPL, and --allow-write or \
                     tools.write = \"allow\" do not cover it. Ask the user to make this change",
                    self.shown
                )
            } else if self.inside {
                WRITE_DENIED.to_owned()
            } else {
                format!(
                    "denied: {} is outside the project root {}; writes outside the project are \
                     refused in batch runs and need the user's yes in the REPL. Write inside the \
                     project instead",
                    self.path, ctx.project_root
                )
            }));
        }
        if cancel.is_cancelled() {
            return Err(ToolError::Interrupted);
        }
        // The content before goes into the file history first, so a change
        // on disk always has its undo (docs/session-format.md#file-history).
        let undo = match &ctx.undo {
            Some(store) => Some(self.keep_before(store, old.as_deref())?),
            None => None,
        };
        if let Some(files) = &ctx.files {
            files.write_text(&self.path, &new).await.map_err(|e| {
                ToolError::io("cannot write", self.shown.clone(), std::io::Error::other(e))
            })?;
        } else {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| ToolError::io("cannot create the directory", dir.as_str(), e))?;
            }
            write_atomic(&self.path, new.as_bytes(), AtomicWrite::default())
                .map_err(|e| ToolError::io("cannot write", self.shown.clone(), e))?;
        }
        ctx.seen.record(&self.path);
        let mut text = file_changed_line(&self.shown, change.added, change.removed);
        if change.created {
            text.push_str(", created");
        }
        if stale {
            text.push_str(&format!(
                "\nnote: {} had changed on disk since you last read or wrote it in this \
                 session (probably the user's edit); read it again before further edits",
                self.shown
            ));
        }
        let mut out = ToolOutput::ok(text);
        out.change = Some(change);
        out.undo = undo.map(|mut u| {
            u.after = eonyx_store::sha256_hex(new.as_bytes());
            u
        });
        Ok(out)
    }

    /// Keep the content before the change (unless it holds a configured
    /// key value) and start its `undo`; `after` is filled in once written.
    fn keep_before(&self, store: &UndoStore, old: Option<&str>) -> Result<Undo, ToolError> {
        let mut undo = Undo {
            path: self.path.to_string(),
            before: None,
            after: String::new(),
            kept: true,
        };
        if let Some(text) = old {
            undo.before = Some(eonyx_store::sha256_hex(text.as_bytes()));
            if store
                .secrets
                .iter()
                .any(|s| !s.is_empty() && text.contains(s.as_str()))
            {
                undo.kept = false;
            } else {
                store.history.keep(text.as_bytes()).map_err(|e| {
                    ToolError::Usage(format!(
                        "{}: cannot keep its current content for /rewind ({e}); nothing written",
                        self.shown
                    ))
                })?;
            }
        }
        Ok(undo)
    }
}

/// The unified diff of `old` → `new` (LF line endings for display).
fn diff(shown: &str, old: Option<&str>, new: &str) -> FileChange {
    let old_n = old.unwrap_or("").replace("\r\n", "\n");
    let new_n = new.replace("\r\n", "\n");
    // Huge rewrites get an approximate (still correct) diff, not a stall.
    let d = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(&old_n, &new_n);
    let (mut added, mut removed) = (0, 0);
    for c in d.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let from = if old.is_some() {
        format!("a/{shown}")
    } else {
        "/dev/null".to_owned()
    };
    let text = d
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{shown}"))
        .to_string();
    FileChange {
        path: shown.to_owned(),
        added,
        removed,
        diff: text,
        created: old.is_none(),
    }
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
