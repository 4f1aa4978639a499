//! Shared helpers for the end-to-end tests: a sandbox of temp directories
//! and a preconfigured `eonyx` command that never touches the real home,
//! data or config dirs and never reaches a real provider.
#![allow(dead_code, clippy::unwrap_used)] // test helpers: a failure to set up is a test failure

use std::path::{Path, PathBuf};
use std::process::Command;

/// Temp `data`, `config`, `home` and `work` dirs.
pub struct Sandbox {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
    pub config: PathBuf,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Sandbox {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let [data, config, home, work] = ["data", "config", "home", "work"].map(|d| root.join(d));
        for d in [&data, &config, &home, &work] {
            std::fs::create_dir_all(d).unwrap();
        }
        Self {
            _tmp: tmp,
            root,
            data,
            config,
            home,
            work,
        }
    }

    /// `eonyx` with the sandbox's dirs, `NO_COLOR=1`, run in `work`, and no
    /// provider settings inherited from the environment.
    pub fn eonyx(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_eonyx"));
        cmd.current_dir(&self.work)
            .env("EONYX_DATA_DIR", &self.data)
            .env("EONYX_CONFIG_DIR", &self.config)
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env_remove("NO_HISTORY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("EONYX_MODEL")
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// Write a file under the sandbox root, creating parent dirs.
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
        s.replace(self.root.to_str().unwrap(), "[ROOT]")
    }
}

pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
