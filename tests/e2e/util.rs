//! Shared helpers for the end-to-end tests: [`eonyx_tests::Sandbox`] (temp
//! directories and the one environment policy) with a preconfigured `eonyx`
//! command that never touches the real home, data or config dirs and never
//! reaches a real provider; a project configured for a fake server; feeding
//! a child's stdin and reading its JSON events.
#![allow(dead_code, clippy::unwrap_used)] // test helpers: a failure to set up is a test failure

use std::io::Write as _;
use std::ops::Deref;
use std::process::{Child, Command, Stdio};

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

/// Spawn `cmd` with piped stdout and stderr and `input` written to its stdin
/// from a thread (so a child that does not read it cannot block the test).
pub fn spawn_with_stdin(cmd: &mut Command, input: impl Into<String>) -> Child {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
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

/// A `--json` batch run fed one line at a time: [`Paced::send`] writes a
/// line, and the caller waits for the events it expects with
/// [`Paced::wait_for`] (read on a thread, so a silent child cannot hang the
/// reader; a child that exits ends the wait with a failure).
pub struct Paced {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    events: std::sync::mpsc::Receiver<serde_json::Value>,
    stderr: std::thread::JoinHandle<String>,
    /// Every event read so far, in order.
    pub seen: Vec<serde_json::Value>,
}

impl Paced {
    /// Start `cmd` (which must pass `--json`) with piped stdio.
    pub fn spawn(cmd: &mut Command) -> Paced {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        let (tx, events) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(v) = serde_json::from_str(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Paced {
            child,
            stdin,
            events,
            stderr,
            seen: Vec::new(),
        }
    }

    /// Write one line to the child's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Read events until one satisfies `done`; returns the events read by
    /// this call, that one last. Fails when the child's stdout ends first.
    pub fn wait_for(
        &mut self,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> Vec<serde_json::Value> {
        let mut got = Vec::new();
        loop {
            let Ok(ev) = self.events.recv() else {
                panic!("the run ended before the awaited event; events: {got:?}");
            };
            self.seen.push(ev.clone());
            got.push(ev.clone());
            if done(&ev) {
                return got;
            }
        }
    }

    /// Close stdin (end of input) and wait for the child: its exit status,
    /// its stderr and every event it wrote.
    pub fn finish(mut self) -> (std::process::ExitStatus, String, Vec<serde_json::Value>) {
        drop(self.stdin.take());
        while let Ok(ev) = self.events.recv() {
            self.seen.push(ev);
        }
        let status = self.child.wait().unwrap();
        let stderr = self.stderr.join().unwrap_or_default();
        (status, stderr, self.seen)
    }
}
