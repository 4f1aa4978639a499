//! Filesystem locations (README, section "Where things live") and the upward walk that finds the project
//! root (docs/prompt.md#context-files). The walk lives here, once: the config loader and the
//! prompt crate both build on [`find_project`].

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

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(
        "cannot determine the home directory; set {var} to choose where eonyx keeps its {what}"
    )]
    NoHome {
        var: &'static str,
        what: &'static str,
    },
    #[error("path {0:?} is not valid UTF-8; eonyx needs UTF-8 paths")]
    NotUtf8(std::path::PathBuf),
}

fn base_dir(
    env: &Env,
    override_var: &'static str,
    xdg_var: &str,
    what: &'static str,
    pick: impl FnOnce(&dyn BaseDirs) -> std::path::PathBuf,
) -> Result<Utf8PathBuf, PathError> {
    if let Some(dir) = env.get(override_var) {
        return Ok(Utf8PathBuf::from(dir));
    }
    if !cfg!(windows)
        && let Some(dir) = env.get(xdg_var)
    {
        return Ok(Utf8PathBuf::from(dir).join("eonyx"));
    }
    let strategy = etcetera::choose_base_strategy().map_err(|_| PathError::NoHome {
        var: override_var,
        what,
    })?;
    let dir = pick(&strategy).join("eonyx");
    Utf8PathBuf::from_path_buf(dir).map_err(PathError::NotUtf8)
}

/// The two directories eonyx takes from the platform strategy.
trait BaseDirs {
    fn data(&self) -> std::path::PathBuf;
    fn config(&self) -> std::path::PathBuf;
}

impl<T: etcetera::BaseStrategy> BaseDirs for T {
    fn data(&self) -> std::path::PathBuf {
        // Windows: %LOCALAPPDATA% (the strategy's cache dir); elsewhere the
        // XDG data dir.
        if cfg!(windows) {
            self.cache_dir()
        } else {
            self.data_dir()
        }
    }
    fn config(&self) -> std::path::PathBuf {
        self.config_dir()
    }
}

/// `$EONYX_DATA_DIR`, else `$XDG_DATA_HOME/eonyx`, else
/// `~/.local/share/eonyx` (`%LOCALAPPDATA%\eonyx` on Windows).
pub fn data_dir(env: &Env) -> Result<Utf8PathBuf, PathError> {
    base_dir(env, "EONYX_DATA_DIR", "XDG_DATA_HOME", "data", |s| s.data())
}

/// `$EONYX_CONFIG_DIR`, else `$XDG_CONFIG_HOME/eonyx`, else
/// `~/.config/eonyx` (`%APPDATA%\eonyx` on Windows).
pub fn config_dir(env: &Env) -> Result<Utf8PathBuf, PathError> {
    base_dir(
        env,
        "EONYX_CONFIG_DIR",
        "XDG_CONFIG_HOME",
        "configuration",
        |s| s.config(),
    )
}

/// `$XDG_STATE_HOME/eonyx`, else `~/.local/state/eonyx` (the data dir's
/// platform default where there is no state dir, e.g. Windows). Holds the
/// REPL's input history.
pub fn state_dir(env: &Env) -> Result<Utf8PathBuf, PathError> {
    if !cfg!(windows)
        && let Some(dir) = env.get("XDG_STATE_HOME")
    {
        return Ok(Utf8PathBuf::from(dir).join("eonyx"));
    }
    let strategy = etcetera::choose_base_strategy().map_err(|_| PathError::NoHome {
        var: "XDG_STATE_HOME",
        what: "state (the REPL history)",
    })?;
    let base = etcetera::BaseStrategy::state_dir(&strategy).unwrap_or_else(|| strategy.data());
    Utf8PathBuf::from_path_buf(base.join("eonyx")).map_err(PathError::NotUtf8)
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
    fn env_overrides_win_and_xdg_is_used() {
        let env = Env::from_pairs([("EONYX_DATA_DIR", "/d"), ("XDG_DATA_HOME", "/x")]);
        assert_eq!(data_dir(&env).unwrap(), "/d");
        let env = Env::from_pairs([("XDG_DATA_HOME", "/x"), ("XDG_CONFIG_HOME", "/c")]);
        assert_eq!(data_dir(&env).unwrap(), "/x/eonyx");
        assert_eq!(config_dir(&env).unwrap(), "/c/eonyx");
    }

    #[test]
    fn state_dir_follows_xdg_state_home() {
        let env = Env::from_pairs([("XDG_STATE_HOME", "/s")]);
        if !cfg!(windows) {
            assert_eq!(state_dir(&env).unwrap(), "/s/eonyx");
        }
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
