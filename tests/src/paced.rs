//! A `--json` batch run of the real binary fed one line at a time (the
//! ahead-of-time compaction tests and bench): the caller writes a line when
//! the events it waits for have come, as a user who reads each answer
//! before typing the next line.

use std::io::Write as _;
use std::process::{Child, Command, Stdio};

/// A `--json` batch run fed one line at a time: [`Paced::send`] writes a
/// line, and the caller waits for the events it expects with
/// [`Paced::wait_for`] (read on a thread, so a silent child cannot hang the
/// reader; a child that exits ends the wait with an `Err`).
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
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Paced> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let (Some(stdout), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(std::io::Error::other(
                "the child's stdout and stderr are not piped",
            ));
        };
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
        Ok(Paced {
            child,
            stdin,
            events,
            stderr,
            seen: Vec::new(),
        })
    }

    /// Run `cmd` (an `eonyx run --json …`) to its end: the time from its
    /// `turn_started` event to its `turn_completed` (process start and
    /// session opening left out); an error when it ends before them or
    /// fails.
    pub fn time_turn(cmd: &mut Command) -> Result<std::time::Duration, Box<dyn std::error::Error>> {
        let mut child = Paced::spawn(cmd)?;
        child
            .wait_for(|e| e["type"] == "turn_started")
            .map_err(|evs| format!("eonyx run ended early: {evs:?}"))?;
        let started = std::time::Instant::now();
        child
            .wait_for(|e| e["type"] == "turn_completed")
            .map_err(|evs| format!("eonyx run ended early: {evs:?}"))?;
        let took = started.elapsed();
        let (status, stderr, _) = child.finish()?;
        if !status.success() {
            return Err(format!("eonyx run failed: {stderr}").into());
        }
        Ok(took)
    }

    /// Write one line to the child's stdin.
    pub fn send(&mut self, line: &str) -> std::io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::other("stdin is closed"));
        };
        stdin.write_all(format!("{line}\n").as_bytes())?;
        stdin.flush()
    }

    /// Read events until one satisfies `done`; returns the events read by
    /// this call, that one last, or `Err` with them when the child's
    /// stdout ends first.
    pub fn wait_for(
        &mut self,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<Vec<serde_json::Value>, Vec<serde_json::Value>> {
        let mut got = Vec::new();
        loop {
            let Ok(ev) = self.events.recv() else {
                return Err(got);
            };
            self.seen.push(ev.clone());
            got.push(ev.clone());
            if done(&ev) {
                return Ok(got);
            }
        }
    }

    /// Close stdin (end of input) and wait for the child: its exit status,
    /// its stderr and every event it wrote.
    pub fn finish(
        mut self,
    ) -> std::io::Result<(std::process::ExitStatus, String, Vec<serde_json::Value>)> {
        drop(self.stdin.take());
        while let Ok(ev) = self.events.recv() {
            self.seen.push(ev);
        }
        let status = self.child.wait()?;
        let stderr = self.stderr.join().unwrap_or_default();
        Ok((status, stderr, self.seen))
    }
}
