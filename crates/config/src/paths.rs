//! Filesystem locations (docs/sessions.md, section "Where things live"): the data,
//! config and state directories, from `EONYX_*` overrides, the XDG
//! variables, else the platform's known folders. The environment snapshot
//! and the project walk are core's, re-exported so that callers find every
//! location in one module.

use camino::Utf8PathBuf;

pub use eonyx_core::paths::{Env, Marker, PROJECT_FILE, Project, current_dir, find_project};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
