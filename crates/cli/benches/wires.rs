//! Own time per turn on the Responses API against Chat Completions: the
//! same batch of turns (each a tool loop: a `read_file` call, then an
//! answer) through the `eonyx` binary, against the same fake server, which
//! answers at once; per turn, median of N runs (default 5;
//! `EONYX_BENCH_SCALE` multiplies it), the two wires' runs alternating.
//! Chat Completions is the baseline measured in the same run. Goal: Responses within 1.1× of Chat.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Stdio};

use camino::Utf8Path;
use eonyx_tests::bench::{self, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Reply, Sandbox};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// User turns per run.
const TURNS: usize = 10;

/// One wire's sandbox and fake server.
struct Wire {
    sandbox: Sandbox,
    fake: FakeServer,
    times: Samples,
    ok: bool,
}

impl Wire {
    fn new(api: &str) -> Result<Self> {
        let sandbox = Sandbox::try_new()?;
        sandbox.write("work/eonyx.json", "{}\n");
        sandbox.write("work/notes.txt", "the secret number is 4242\n");
        let fake = FakeServer::try_start()?;
        let config = Utf8Path::from_path(&sandbox.config).ok_or("config dir is not UTF-8")?;
        FakeConfig::openai(&fake.base_url())
            .set("retries", 0)
            .set("api", api)
            .set("reasoning_effort", "low")
            .write(config)?;
        Ok(Self {
            sandbox,
            fake,
            times: Samples::default(),
            ok: true,
        })
    }

    /// One batch run of [`TURNS`] turns in a fresh session; its wall time
    /// per turn is kept unless `warm_up`.
    fn run(&mut self, bin: &Path, input: &str, warm_up: bool) -> Result<()> {
        for _ in 0..TURNS {
            self.fake
                .push(
                    Reply::tool_call("read_file", json!({"path": "notes.txt"}))
                        .with_reasoning("Read the notes first."),
                )
                .push(Reply::text("It is 4242.").with_reasoning("Found it."));
        }
        let mut cmd = self.sandbox.command(bin);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let start = std::time::Instant::now();
        self.ok &= run_batch(cmd, input)?;
        let elapsed = start.elapsed();
        if !warm_up {
            self.times.0.push(elapsed / TURNS as u32);
        }
        Ok(())
    }
}

fn run_batch(mut cmd: Command, input: &str) -> Result<bool> {
    use std::io::Write as _;
    let mut child = cmd.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    Ok(child.wait()?.success())
}

fn main() -> Result<()> {
    let runs = 5 * bench::scale();
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let input: String = (0..TURNS).map(|i| format!("question {i}\n")).collect();
    let mut chat = Wire::new("chat")?;
    let mut responses = Wire::new("responses")?;
    // The wires take turns, run by run, so both see the same load; the
    // first run of each warms the caches.
    for run in 0..runs + 1 {
        chat.run(bin, &input, run == 0)?;
        responses.run(bin, &input, run == 0)?;
    }
    if !(chat.ok && responses.ok) {
        eprintln!("wires bench: warning: a batch run exited non-zero");
    }
    println!(
        "{}",
        bench::Line::timed(
            "own time per tool-loop turn: Responses API vs Chat Completions (same fake)",
            responses.times.median(),
            chat.times.median(),
            "< 1.1×"
        )
    );
    Ok(())
}
