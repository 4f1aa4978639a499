//! The environment snapshot ([`Env`]) and the upward walk that finds the project root
//! (docs/prompt.md#context-files). The walk lives here, once: the config loader and the
//! prompt crate both build on [`find_project`]. The XDG locations (docs/sessions.md, section
//! "Where things live") are `eonyx-config`'s (`eonyx_config::paths`).

use std::collections::BTreeMap;

use camino::{Utf8Path, Utf8PathBuf};

/// Name of the project marker and project config file.
pub const PROJECT_FILE: &str = "eonyx.json";

/// A snapshot of the environment variables eonyx reads, so that code and
/// tests can pass an explicit environment instead of mutating the process.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The process environment (variables that are not UTF-8 are skipped).
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`; empty values count as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }
}

/// What marked the project root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A directory holding `eonyx.json`.
    ProjectFile,
    /// A directory holding `.git` (file or directory).
    Git,
}

/// Result of the upward walk from a working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project root: the marker directory, or the working directory
    /// when no marker was found.
    pub root: Utf8PathBuf,
    /// What stopped the walk, if anything.
    pub marker: Option<Marker>,
    /// The directories walked, outermost first, ending at the working
    /// directory. With a marker the first entry is the root; without one it
    /// is the filesystem root.
    pub dirs: Vec<Utf8PathBuf>,
    /// The project config file, when the root holds one.
    pub config_file: Option<Utf8PathBuf>,
}

/// Walk up from `cwd` to the first directory holding `eonyx.json` or `.git`
/// (included), or to the filesystem root. The walk is lexical (it follows
/// the path's parents, not symlinks), so it always terminates.
pub fn find_project(cwd: &Utf8Path) -> Project {
    let mut dirs = Vec::new();
    let mut found = None;
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        let has_project_file = dir.join(PROJECT_FILE).is_file();
        if has_project_file {
            found = Some((dir.to_path_buf(), Marker::ProjectFile));
            break;
        }
        if std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            found = Some((dir.to_path_buf(), Marker::Git));
            break;
        }
    }
    dirs.reverse();
    match found {
        Some((root, marker)) => {
            let config_file = root.join(PROJECT_FILE);
            let config_file = config_file.is_file().then_some(config_file);
            Project {
                root,
                marker: Some(marker),
                dirs,
                config_file,
            }
        }
        None => Project {
            root: cwd.to_path_buf(),
            marker: None,
            dirs,
            config_file: None,
        },
    }
}

/// The current directory as a UTF-8 path.
pub fn current_dir() -> Result<Utf8PathBuf, std::io::Error> {
    let dir = std::env::current_dir()?;
    Utf8PathBuf::from_path_buf(dir).map_err(|p| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the current directory {p:?} is not valid UTF-8"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf8(p: &std::path::Path) -> Utf8PathBuf {
        Utf8PathBuf::from_path_buf(p.to_path_buf()).unwrap()
    }

    #[test]
    fn walk_stops_at_nearest_marker() {
        let t = tempfile::tempdir().unwrap();
        let root = utf8(t.path());
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::create_dir(root.join("a/.git")).unwrap();
        std::fs::write(root.join("a/b/eonyx.json"), "{}").unwrap();
        let p = find_project(&root.join("a/b/c"));
        assert_eq!(p.root, root.join("a/b"));
        assert_eq!(p.marker, Some(Marker::ProjectFile));
        assert_eq!(p.dirs, vec![root.join("a/b"), root.join("a/b/c")]);
        assert_eq!(p.config_file, Some(root.join("a/b/eonyx.json")));

        std::fs::remove_file(root.join("a/b/eonyx.json")).unwrap();
        let p = find_project(&root.join("a/b/c"));
        assert_eq!(p.root, root.join("a"));
        assert_eq!(p.marker, Some(Marker::Git));
        assert_eq!(p.config_file, None);
    }

    #[test]
    fn git_file_counts_as_marker_and_no_marker_walks_to_root() {
        let t = tempfile::tempdir().unwrap();
        let root = utf8(t.path());
        std::fs::create_dir_all(root.join("w/x")).unwrap();
        std::fs::write(root.join("w/.git"), "gitdir: elsewhere").unwrap();
        assert_eq!(find_project(&root.join("w/x")).root, root.join("w"));

        std::fs::remove_file(root.join("w/.git")).unwrap();
        let p = find_project(&root.join("w/x"));
        // Temp dirs normally lie outside any repository; if not, the walk
        // legitimately stops at that repository.
        if p.marker.is_none() {
            assert_eq!(p.root, root.join("w/x"));
            assert_eq!(p.dirs.first().map(|d| d.as_str()), Some("/"));
            assert_eq!(p.dirs.last(), Some(&root.join("w/x")));
        }
    }
}
