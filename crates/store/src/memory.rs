//! Memory on disk (docs/memory.md, section "Using memory"): plain Markdown files under
//! `<data dir>/memory/`, one for every project (`global.md`) and one per
//! project root (`projects/<name>-<hash>.md`).
//!
//! A file is a heading line, then one entry per line:
//!
//! ```text
//! # eonyx memory: project /home/me/shop
//!
//! - [k7f2q1] 2026-11-30 20261130T164000-1a2b3c4d: Staging is read-only; deploy with `make ship`.
//! - [m3x9ab] 2026-11-30 cli: Answer in British English.
//! ```
//!
//! Invariants:
//! - Blank lines and Markdown headings are structure; any other line that
//!   does not parse is a malformed entry, kept and shown as-is, never
//!   dropped (not even by `forget`, which only removes lines by id).
//! - Every change happens under an exclusive lock on `memory/.lock`, so
//!   two processes adding at once never lose an entry; readers take a
//!   shared lock. An add is one append, fsynced before it returns; a
//!   forget replaces the file atomically (temp file + rename, fsynced).
//! - Directories are 0700, files 0600 (re-applied on every change, since an
//!   editor may have replaced the file).
//! - Ids are unique across both files of a project.

use std::fs::File;
use std::io::{Read, Write};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::memory::{MemoryEntry, MemoryScope};

use crate::secret::SecretKind;

use crate::IoFailure;
use crate::fsutil::{atomic_write, create_private_dir, lock_file, private_options, sync_dir};

/// Name of the memory directory under the data dir.
pub const MEMORY_DIR: &str = "memory";
/// The global file's name inside the memory directory.
pub const GLOBAL_FILE: &str = "global.md";

const ID_LEN: usize = 6;
const ID_ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";

/// What went wrong with memory. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Io(#[from] IoFailure),
    #[error("a memory entry needs some text")]
    Empty,
    #[error(
        "refused: the entry holds {}, and memory never stores secrets; nothing was saved. Write the fact without the secret (name the variable or file it lives in instead)",
        .kind.describe()
    )]
    Secret { kind: SecretKind },
    #[error("no memory entry with id {}; run `eonyx memory` to list them", .ids.join(", "))]
    UnknownIds { ids: Vec<String> },
}

impl MemoryError {
    /// Its class: an entry refused (empty, a secret, an unknown id) is the
    /// user's to fix; a file that cannot be read or written is not.
    pub fn class(&self) -> eonyx_core::ErrorClass {
        match self {
            MemoryError::Io(_) => eonyx_core::ErrorClass::Memory,
            _ => eonyx_core::ErrorClass::Usage,
        }
    }
}

fn io(action: &'static str, path: &Utf8Path) -> impl FnOnce(std::io::Error) -> MemoryError {
    IoFailure::of(action, path)
}

impl From<crate::StoreError> for MemoryError {
    fn from(e: crate::StoreError) -> Self {
        match e {
            crate::StoreError::Io(failure) => MemoryError::Io(failure),
            other => MemoryError::Io(IoFailure {
                action: "write",
                path: Utf8PathBuf::new(),
                source: std::io::Error::other(other.to_string()),
            }),
        }
    }
}

/// The memory files of one project (and the global one).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    dir: Utf8PathBuf,
    global: Utf8PathBuf,
    project: Utf8PathBuf,
    project_root: Utf8PathBuf,
}

impl MemoryStore {
    /// Memory under `data_dir` for the project at `project_root`. Nothing is
    /// read or created until it is used.
    pub fn new(data_dir: &Utf8Path, project_root: &Utf8Path) -> Self {
        let dir = data_dir.join(MEMORY_DIR);
        Self {
            global: dir.join(GLOBAL_FILE),
            project: dir.join("projects").join(project_file_name(project_root)),
            dir,
            project_root: project_root.to_path_buf(),
        }
    }

    /// `<data dir>/memory`.
    pub fn dir(&self) -> &Utf8Path {
        &self.dir
    }

    /// The file of `scope`.
    pub fn path(&self, scope: MemoryScope) -> &Utf8Path {
        match scope {
            MemoryScope::Global => &self.global,
            MemoryScope::Project => &self.project,
        }
    }

    /// Every entry: the global file's, then the project's, each in file
    /// order (oldest first). Missing files are empty.
    pub fn list(&self) -> Result<Vec<MemoryEntry>, MemoryError> {
        if !self.dir.is_dir() {
            return Ok(Vec::new());
        }
        let _lock = self.lock(false)?;
        let mut out = Vec::new();
        for scope in [MemoryScope::Global, MemoryScope::Project] {
            let text = read_optional(self.path(scope))?;
            out.extend(text.lines().filter_map(|l| parse_line(l, scope)));
        }
        Ok(out)
    }

    /// Add an entry to `scope`, saved by `session` (a session id or `cli`).
    /// Line breaks in `text` become spaces. Refused when empty or when it
    /// holds a secret ([`crate::secret::find`]; `secrets` are the key
    /// values).
    pub fn add(
        &self,
        scope: MemoryScope,
        text: &str,
        session: &str,
        secrets: &[String],
    ) -> Result<MemoryEntry, MemoryError> {
        let text = one_line(text);
        if text.is_empty() {
            return Err(MemoryError::Empty);
        }
        if let Some(kind) = crate::secret::find(&text, secrets) {
            return Err(MemoryError::Secret { kind });
        }
        let session = session
            .chars()
            .filter(|c| !c.is_whitespace() && *c != ':')
            .collect::<String>();
        let session = if session.is_empty() {
            "unknown".to_owned()
        } else {
            session
        };
        self.prepare_dirs()?;
        let _lock = self.lock(true)?;
        let mut taken = Vec::new();
        for s in [MemoryScope::Global, MemoryScope::Project] {
            let t = read_optional(self.path(s))?;
            taken.extend(t.lines().filter_map(|l| parse_line(l, s)?.id));
        }
        let id = loop {
            let id: String = (0..ID_LEN)
                .map(|_| char::from(ID_ALPHABET[fastrand::usize(..ID_ALPHABET.len())]))
                .collect();
            if !taken.contains(&id) {
                break id;
            }
        };
        let entry = MemoryEntry {
            id: Some(id.clone()),
            scope,
            text: text.clone(),
            created: Some(eonyx_core::time::today_utc()),
            session: Some(session.clone()),
        };
        let line = format!(
            "- [{id}] {} {session}: {text}\n",
            entry.created.as_deref().unwrap_or_default()
        );
        self.append(scope, &line)?;
        Ok(entry)
    }

    /// Remove the entries with these ids (from either file). Nothing is
    /// removed when one of them does not exist.
    pub fn forget(&self, ids: &[&str]) -> Result<Vec<MemoryEntry>, MemoryError> {
        if !self.dir.is_dir() {
            return Err(MemoryError::UnknownIds {
                ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            });
        }
        let _lock = self.lock(true)?;
        let mut files = Vec::new();
        let mut removed = Vec::new();
        for scope in [MemoryScope::Global, MemoryScope::Project] {
            let text = read_optional(self.path(scope))?;
            let mut kept = String::with_capacity(text.len());
            let mut changed = false;
            for line in text.split_inclusive('\n') {
                match parse_line(line.trim_end_matches(['\n', '\r']), scope) {
                    Some(e) if e.id.as_deref().is_some_and(|id| ids.contains(&id)) => {
                        removed.push(e);
                        changed = true;
                    }
                    _ => kept.push_str(line),
                }
            }
            if changed {
                files.push((scope, kept));
            }
        }
        let unknown: Vec<String> = ids
            .iter()
            .filter(|id| !removed.iter().any(|e| e.id.as_deref() == Some(**id)))
            .map(|s| (*s).to_owned())
            .collect();
        if !unknown.is_empty() {
            return Err(MemoryError::UnknownIds { ids: unknown });
        }
        for (scope, kept) in files {
            let path = self.path(scope);
            atomic_write(path, kept.as_bytes(), true)?;
            set_private(path)?;
        }
        Ok(removed)
    }

    /// The file of `scope`, created (with its heading, 0600) when missing;
    /// for `eonyx memory edit`.
    pub fn ensure_file(&self, scope: MemoryScope) -> Result<Utf8PathBuf, MemoryError> {
        self.prepare_dirs()?;
        let _lock = self.lock(true)?;
        let path = self.path(scope);
        let file = private_options()
            .append(true)
            .create(true)
            .open(path)
            .map_err(io("open", path))?;
        let len = file.metadata().map_err(io("read", path))?.len();
        if len == 0 {
            let mut f = &file;
            f.write_all(self.heading(scope).as_bytes())
                .map_err(io("write", path))?;
            file.sync_all().map_err(io("sync", path))?;
        }
        set_private(path)?;
        Ok(path.to_path_buf())
    }

    /// Make the file of `scope` 0600 again (after an editor replaced it).
    pub fn fix_permissions(&self, scope: MemoryScope) -> Result<(), MemoryError> {
        let path = self.path(scope);
        if path.exists() {
            set_private(path)?;
        }
        Ok(())
    }

    fn heading(&self, scope: MemoryScope) -> String {
        match scope {
            MemoryScope::Global => "# eonyx memory: global (every project)\n\n".to_owned(),
            MemoryScope::Project => {
                format!("# eonyx memory: project {}\n\n", self.project_root)
            }
        }
    }

    fn prepare_dirs(&self) -> Result<(), MemoryError> {
        create_private_dir(&self.dir.join("projects"))?;
        Ok(())
    }

    /// `memory/.lock`, exclusive for changes, shared for reading. Released
    /// when the returned file is dropped (or the process ends).
    fn lock(&self, exclusive: bool) -> Result<File, MemoryError> {
        Ok(lock_file(&self.dir.join(".lock"), exclusive)?)
    }

    /// Append `line` (under the lock): the heading first when the file is
    /// new, a line break first when the last line lacks one; fsynced.
    fn append(&self, scope: MemoryScope, line: &str) -> Result<(), MemoryError> {
        let path = self.path(scope);
        let mut file = private_options()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io("open", path))?;
        let len = file.metadata().map_err(io("read", path))?.len();
        let mut bytes = String::new();
        if len == 0 {
            bytes.push_str(&self.heading(scope));
        } else {
            use std::io::{Seek, SeekFrom};
            let mut last = [0u8; 1];
            let mut r = &file;
            r.seek(SeekFrom::End(-1)).map_err(io("read", path))?;
            r.read_exact(&mut last).map_err(io("read", path))?;
            if last[0] != b'\n' {
                bytes.push('\n');
            }
        }
        bytes.push_str(line);
        file.write_all(bytes.as_bytes())
            .map_err(io("append to", path))?;
        file.sync_all().map_err(io("sync", path))?;
        if len == 0
            && let Some(parent) = path.parent()
        {
            sync_dir(parent);
        }
        set_private(path)?;
        Ok(())
    }
}

/// `<last component>-<16 hex digits of the root's FNV-1a hash>.md`: readable,
/// and stable across versions and platforms (unlike std's hasher).
pub fn project_file_name(root: &Utf8Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in root.as_str().bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let name: String = root
        .file_name()
        .unwrap_or("root")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let name = if name.is_empty() || name.starts_with('.') {
        format!("p{name}")
    } else {
        name
    };
    format!("{name}-{hash:016x}.md")
}

/// Parse one line of a memory file: `None` for blank lines and headings, a
/// well-formed entry, or a malformed one holding the line as-is.
pub fn parse_line(line: &str, scope: MemoryScope) -> Option<MemoryEntry> {
    let line = line.trim_end();
    if line.trim().is_empty() || line.trim_start().starts_with('#') {
        return None;
    }
    Some(parse_entry(line, scope).unwrap_or_else(|| MemoryEntry {
        id: None,
        scope,
        text: line.to_owned(),
        created: None,
        session: None,
    }))
}

/// `- [id] YYYY-MM-DD session: text`.
fn parse_entry(line: &str, scope: MemoryScope) -> Option<MemoryEntry> {
    let rest = line.strip_prefix("- [")?;
    let (id, rest) = rest.split_once("] ")?;
    if id.is_empty()
        || id.len() > 32
        || !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return None;
    }
    let (date, rest) = rest.split_once(' ')?;
    let d = date.as_bytes();
    let date_ok = d.len() == 10
        && d.iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !date_ok {
        return None;
    }
    let (session, text) = rest.split_once(": ")?;
    if session.is_empty() || session.contains(char::is_whitespace) {
        return None;
    }
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(MemoryEntry {
        id: Some(id.to_owned()),
        scope,
        text: text.to_owned(),
        created: Some(date.to_owned()),
        session: Some(session.to_owned()),
    })
}

/// Collapse line breaks and runs of whitespace into single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn read_optional(path: &Utf8Path) -> Result<String, MemoryError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(io("read", path)(e)),
    }
}

fn set_private(path: &Utf8Path) -> Result<(), MemoryError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(io("set permissions of", path))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests;
