//! The REPL's input history file, `$XDG_STATE_HOME/eonyx/history`: one file
//! for all projects, 0600, newest last, each entry once, at most
//! `repl.history_size` entries.
//!
//! Format (the one rustyline writes, so the file stays readable by it): a
//! `#V2` line, then one entry per line with `\` written `\\` and a newline
//! written `\n`.
//!
//! Invariant: nothing is written when `NO_HISTORY` is set or
//! `repl.history = false`; the file is then not read either.

use std::io::{Read, Seek, SeekFrom, Write};

use anyhow::Context as _;
use camino::{Utf8Path, Utf8PathBuf};

const HEADER: &str = "#V2";

/// Where the history lives, or nothing when it is not persisted.
pub struct HistoryFile {
    path: Option<Utf8PathBuf>,
    max: usize,
}

impl HistoryFile {
    pub fn new(path: Option<Utf8PathBuf>, max: usize) -> Self {
        Self {
            path,
            max: max.max(1),
        }
    }

    /// The file for this environment and config: `None` inside when history
    /// is off.
    pub fn from_settings(
        env: &eonyx_config::paths::Env,
        repl: &eonyx_config::ReplConfig,
    ) -> anyhow::Result<Self> {
        let off = env.get("NO_HISTORY").is_some() || !repl.history;
        let path = if off {
            None
        } else {
            Some(eonyx_config::paths::state_dir(env)?.join("history"))
        };
        Ok(Self::new(path, repl.history_size))
    }

    pub fn path(&self) -> Option<&Utf8Path> {
        self.path.as_deref()
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// The saved entries, oldest first; empty when there is no file.
    pub fn load(&self) -> anyhow::Result<Vec<String>> {
        let Some(path) = &self.path else {
            return Ok(Vec::new());
        };
        match std::fs::read(path) {
            Ok(bytes) => Ok(collapse(parse(&String::from_utf8_lossy(&bytes)), self.max)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e).with_context(|| format!("cannot read the REPL history {path}")),
        }
    }

    /// Add `entry` as the newest line: re-read the file under a lock (other
    /// REPLs share it), drop older copies of the entry, keep the newest
    /// `max`, rewrite. Returns the entries now saved. A no-op when off.
    pub fn record(&self, entry: &str) -> anyhow::Result<Vec<String>> {
        let Some(path) = &self.path else {
            return Ok(Vec::new());
        };
        let what = || format!("cannot save the REPL history {path}");
        if let Some(dir) = path.parent() {
            eonyx_store::create_private_dir(dir).with_context(what)?;
        }
        let mut file = eonyx_store::private_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(what)?;
        file.lock().with_context(what)?;
        let mut text = String::new();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).with_context(what)?;
        text.push_str(&String::from_utf8_lossy(&bytes));
        let mut entries = parse(&text);
        entries.push(entry.to_owned());
        let entries = collapse(entries, self.max);
        file.seek(SeekFrom::Start(0)).with_context(what)?;
        file.set_len(0).with_context(what)?;
        file.write_all(render(&entries).as_bytes())
            .with_context(what)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .with_context(what)?;
        }
        Ok(entries)
    }
}

/// Each entry once (its newest occurrence), the newest `max` of them.
pub fn collapse(entries: Vec<String>, max: usize) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<String> = entries
        .into_iter()
        .rev()
        .filter(|e| seen.insert(e.clone()))
        .take(max)
        .collect();
    out.reverse();
    out
}

fn parse(text: &str) -> Vec<String> {
    let mut lines = text.lines().peekable();
    let v2 = lines.peek() == Some(&HEADER);
    if v2 {
        lines.next();
    }
    lines
        .filter(|l| !l.is_empty())
        .map(|l| if v2 { unescape(l) } else { l.to_owned() })
        .collect()
}

fn render(entries: &[String]) -> String {
    let mut s = String::from(HEADER);
    s.push('\n');
    for e in entries {
        s.push_str(&e.replace('\\', "\\\\").replace('\n', "\\n"));
        s.push('\n');
    }
    s
}

fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &tempfile::TempDir, max: usize) -> HistoryFile {
        let p = Utf8PathBuf::from_path_buf(dir.path().join("state/eonyx/history")).unwrap();
        HistoryFile::new(Some(p), max)
    }

    #[test]
    fn entries_round_trip_with_newlines_and_backslashes() {
        let dir = tempfile::tempdir().unwrap();
        let h = file(&dir, 10);
        assert!(h.load().unwrap().is_empty(), "no file yet");
        h.record("two\nlines").unwrap();
        h.record(r"a \ back\slash\n").unwrap();
        assert_eq!(h.load().unwrap(), ["two\nlines", r"a \ back\slash\n"]);
        let raw = std::fs::read_to_string(h.path().unwrap()).unwrap();
        assert!(raw.starts_with("#V2\ntwo\\nlines\n"), "{raw}");
    }

    #[test]
    fn duplicates_collapse_to_the_newest_and_the_file_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let h = file(&dir, 3);
        for e in ["a", "b", "a", "c", "d"] {
            h.record(e).unwrap();
        }
        assert_eq!(h.load().unwrap(), ["a", "c", "d"]);
        h.record("c").unwrap();
        assert_eq!(h.load().unwrap(), ["a", "d", "c"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let h = file(&dir, 3);
        h.record("secret").unwrap();
        let mode = std::fs::metadata(h.path().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn off_means_neither_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let env = eonyx_config::paths::Env::from_pairs([
            ("XDG_STATE_HOME", dir.path().to_str().unwrap()),
            ("NO_HISTORY", "1"),
        ]);
        let h = HistoryFile::from_settings(&env, &Default::default()).unwrap();
        assert!(h.path().is_none());
        h.record("nothing").unwrap();
        assert!(!dir.path().join("eonyx").exists());

        let env = eonyx_config::paths::Env::from_pairs([(
            "XDG_STATE_HOME",
            dir.path().to_str().unwrap(),
        )]);
        let off = eonyx_config::ReplConfig {
            history: false,
            ..Default::default()
        };
        assert!(
            HistoryFile::from_settings(&env, &off)
                .unwrap()
                .path()
                .is_none()
        );
        let on = HistoryFile::from_settings(&env, &Default::default()).unwrap();
        assert_eq!(
            on.path().unwrap(),
            Utf8PathBuf::from_path_buf(dir.path().join("eonyx/history")).unwrap()
        );
    }
}
