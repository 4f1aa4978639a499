//! [`Sandbox`]: the one place a test or bench gets temporary directories for
//! the real `eonyx` binary, and the one environment policy for running it.
//!
//! Invariants:
//! - HOME, EONYX_DATA_DIR, EONYX_CONFIG_DIR and XDG_STATE_HOME point into the
//!   sandbox's temp dir; nothing touches the developer's real directories.
//! - Every variable named in [`CLEARED_ENV`] or starting with one of
//!   [`CLEARED_ENV_PREFIXES`] is removed, so no provider key, model choice
//!   or compaction setting leaks in from the developer's shell.
//! - `NO_COLOR=1` and stdin is null unless the test pipes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use camino::{Utf8Path, Utf8PathBuf};
use tempfile::TempDir;

use crate::config::{ConfigWriteError, FakeConfig};

/// Variables removed from every sandboxed command (also removed by prefix
/// below; named here so the list reads as the policy).
pub const CLEARED_ENV: &[&str] = &[
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "EONYX_MODEL",
    "EONYX_AUTO_COMPACT",
    "EONYX_AUTO_COMPACT_TOKENS",
    "EONYX_COMPACTION_RESERVED_TOKENS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
];

/// Every inherited variable starting with one of these is removed too
/// (`EONYX_DATA_DIR`, `EONYX_CONFIG_DIR` and `XDG_STATE_HOME` are then set
/// to the sandbox's own directories).
pub const CLEARED_ENV_PREFIXES: &[&str] = &["EONYX_", "OPENAI_", "ANTHROPIC_", "XDG_"];

/// Temporary `data`, `config`, `home`, `state` and `work` directories under
/// one root; removed on drop.
#[derive(Debug)]
pub struct Sandbox {
    _tmp: TempDir,
    /// The canonical temp dir holding the others.
    pub root: PathBuf,
    /// `EONYX_DATA_DIR`.
    pub data: PathBuf,
    /// `EONYX_CONFIG_DIR`.
    pub config: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// `XDG_STATE_HOME` (REPL history).
    pub state: PathBuf,
    /// The working directory of [`Sandbox::command`].
    pub work: PathBuf,
}

/// A failure to set up a sandbox (a test failure).
fn setup_error(path: &Path) -> impl FnOnce(std::io::Error) -> ConfigWriteError + '_ {
    move |source| ConfigWriteError::Write {
        path: Utf8PathBuf::from(path.to_string_lossy().into_owned()),
        source,
    }
}

impl Sandbox {
    /// Create the directories.
    pub fn try_new() -> Result<Self, ConfigWriteError> {
        let tmp = TempDir::new().map_err(setup_error(Path::new("<tempdir>")))?;
        let root = tmp.path().canonicalize().map_err(setup_error(tmp.path()))?;
        let [data, config, home, state, work] =
            ["data", "config", "home", "state", "work"].map(|d| root.join(d));
        for d in [&data, &config, &home, &state, &work] {
            std::fs::create_dir_all(d).map_err(setup_error(d))?;
        }
        Ok(Self {
            _tmp: tmp,
            root,
            data,
            config,
            home,
            state,
            work,
        })
    }

    /// Like [`Sandbox::try_new`], panicking on failure (tests).
    #[allow(clippy::expect_used)]
    pub fn new() -> Self {
        Self::try_new().expect("could not create the test sandbox's temporary directories")
    }

    /// A command for `bin` (e.g. `env!("CARGO_BIN_EXE_eonyx")`) run in
    /// [`Sandbox::work`] under this sandbox's [environment policy](self).
    pub fn command(&self, bin: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(bin);
        cmd.current_dir(&self.work).stdin(Stdio::null());
        self.isolate(&mut cmd);
        cmd
    }

    /// Apply the environment policy to any command (keeps its working
    /// directory): clear what [`CLEARED_ENV`] and [`CLEARED_ENV_PREFIXES`]
    /// name, point the directories into the sandbox, set `NO_COLOR`.
    pub fn isolate<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        for var in CLEARED_ENV {
            cmd.env_remove(var);
        }
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if CLEARED_ENV_PREFIXES.iter().any(|p| name.starts_with(p)) {
                cmd.env_remove(name.as_ref());
            }
        }
        cmd.env("HOME", &self.home)
            .env("EONYX_DATA_DIR", &self.data)
            .env("EONYX_CONFIG_DIR", &self.config)
            .env("XDG_STATE_HOME", &self.state)
            .env("NO_COLOR", "1")
    }

    /// Write a file under the sandbox root, creating parent dirs.
    #[allow(clippy::unwrap_used)]
    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    /// Replace the sandbox root in `s` with `[ROOT]` (for snapshots).
    pub fn filter(&self, s: &str) -> String {
        s.replace(self.root.to_string_lossy().as_ref(), "[ROOT]")
    }

    /// Write `config` as `config.toml` in [`Sandbox::config`].
    pub fn write_config(&self, config: &FakeConfig) -> Result<Utf8PathBuf, ConfigWriteError> {
        config.write(&utf8(&self.config)?)
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

fn utf8(p: &Path) -> Result<Utf8PathBuf, ConfigWriteError> {
    Utf8PathBuf::from_path_buf(p.to_path_buf())
        .map_err(|p| ConfigWriteError::NonUtf8(p.display().to_string()))
}

/// A [`Sandbox`] seen with UTF-8 paths, whose working directory is a project
/// root (it holds an `eonyx.json` with `{}`). Same directories, same
/// environment policy.
#[derive(Debug)]
pub struct TestEnv {
    sandbox: Sandbox,
    pub home: Utf8PathBuf,
    pub data_dir: Utf8PathBuf,
    pub config_dir: Utf8PathBuf,
    /// A project root (holds an `eonyx.json` with `{}`); the working directory.
    pub project: Utf8PathBuf,
}

impl TestEnv {
    pub fn new() -> Result<Self, ConfigWriteError> {
        let sandbox = Sandbox::try_new()?;
        let project = utf8(&sandbox.work)?;
        let marker = project.join("eonyx.json");
        std::fs::write(&marker, "{}\n").map_err(|source| ConfigWriteError::Write {
            path: marker.clone(),
            source,
        })?;
        Ok(Self {
            home: utf8(&sandbox.home)?,
            data_dir: utf8(&sandbox.data)?,
            config_dir: utf8(&sandbox.config)?,
            project,
            sandbox,
        })
    }

    /// The underlying sandbox.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Write `config` into this environment's config dir.
    pub fn write_config(&self, config: &FakeConfig) -> Result<Utf8PathBuf, ConfigWriteError> {
        config.write(&self.config_dir)
    }

    /// [`Sandbox::command`]: `bin` run in the project directory.
    pub fn command(&self, bin: impl AsRef<std::ffi::OsStr>) -> Command {
        self.sandbox.command(bin)
    }

    /// The temp dir holding every directory of this environment.
    pub fn root(&self) -> &Utf8Path {
        self.project.parent().unwrap_or(&self.project)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandboxed_command_sees_only_its_own_directories_and_no_provider_settings() {
        let sb = Sandbox::new();
        let cmd = sb.command("env");
        let envs: Vec<(String, Option<String>)> = cmd
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let get = |k: &str| envs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        for var in CLEARED_ENV {
            if *var != "XDG_STATE_HOME" {
                assert_eq!(get(var), Some(None), "{var} is removed");
            }
        }
        let state = sb.state.to_string_lossy().into_owned();
        assert_eq!(get("XDG_STATE_HOME"), Some(Some(state)));
        assert_eq!(
            get("HOME"),
            Some(Some(sb.home.to_string_lossy().into_owned()))
        );
        assert_eq!(cmd.get_current_dir(), Some(sb.work.as_path()));
    }

    #[test]
    fn a_test_env_is_a_sandbox_whose_work_dir_is_a_project() {
        let env = TestEnv::new().unwrap();
        assert_eq!(env.project.as_std_path(), env.sandbox().work);
        assert!(env.project.join("eonyx.json").is_file());
        assert_eq!(env.root().as_std_path(), env.sandbox().root);
    }
}
