//! Shared helpers for the end-to-end tests: [`eonyx_tests::Sandbox`] (temp
//! directories and the one environment policy) with a preconfigured `eonyx`
//! command that never touches the real home, data or config dirs and never
//! reaches a real provider; a project configured for a fake server; feeding
//! a child's stdin and reading its JSON events.
#![allow(dead_code, clippy::unwrap_used)] // test helpers: a failure to set up is a test failure

use std::io::Write as _;
use std::ops::Deref;
use std::process::{Child, ChildStdin, Command, Stdio};

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

/// A sandbox whose `work` dir is a project (`eonyx.json`), with a config
/// selecting a fresh fake server's model (no retries, so failures are
/// immediate), changed by `config`.
pub fn fake_project(
    config: impl FnOnce(eonyx_tests::FakeConfig) -> eonyx_tests::FakeConfig,
) -> (Sandbox, eonyx_tests::FakeServer) {
    let sb = Sandbox::new();
    sb.write("work/eonyx.json", "{}\n");
    let fake = eonyx_tests::FakeServer::start();
    config(eonyx_tests::FakeConfig::openai(&fake.base_url()).set("retries", 0))
        .write(camino::Utf8Path::from_path(&sb.config).unwrap())
        .unwrap();
    (sb, fake)
}

/// Spawn `cmd` with stdin, stdout and stderr piped: the child and its
/// stdin, which stays open until dropped.
pub fn spawn_piped(cmd: &mut Command) -> (Child, ChildStdin) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// Spawn `cmd` with piped stdout and stderr and `input` written to its stdin
/// from a thread (so a child that does not read it cannot block the test).
pub fn spawn_with_stdin(cmd: &mut Command, input: impl Into<String>) -> Child {
    let (child, mut stdin) = spawn_piped(cmd);
    let input = input.into();
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    child
}

/// `lines` as batch input, one per line.
pub fn input_lines(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The JSON events of a `--json` run: every stdout line that parses.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The messages of a `--json` run's `notice` events, in order.
pub fn notices(stdout: &[u8]) -> Vec<String> {
    json_lines(stdout)
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect()
}

/// Fails unless one of `notices` contains `said`.
pub fn assert_noticed(notices: &[String], said: &str) {
    assert!(
        notices.iter().any(|n| n.contains(said)),
        "{said}: {notices:?}"
    );
}
