//! Shared helpers for the end-to-end tests: [`eonyx_tests::Sandbox`] (temp
//! directories and the one environment policy) with a preconfigured `eonyx`
//! command that never touches the real home, data or config dirs and never
//! reaches a real provider.
#![allow(dead_code, clippy::unwrap_used)] // test helpers: a failure to set up is a test failure

use std::ops::Deref;
use std::process::Command;

/// [`eonyx_tests::Sandbox`] (fields `root`, `data`, `config`, `home`,
/// `state`, `work`, and `write`/`filter`) plus [`Sandbox::eonyx`].
pub struct Sandbox(eonyx_tests::Sandbox);

impl Sandbox {
    pub fn new() -> Self {
        Self(eonyx_tests::Sandbox::new())
    }

    /// `eonyx` run in `work` under the sandbox's environment policy
    /// (see `eonyx_tests::CLEARED_ENV`), stdin null.
    pub fn eonyx(&self) -> Command {
        self.0.command(env!("CARGO_BIN_EXE_eonyx"))
    }
}

impl Deref for Sandbox {
    type Target = eonyx_tests::Sandbox;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
