//! A turn through `eonyx acp` against `eonyx run`, the same fake server
//! and answer, in one run: the time from `session/prompt` to its response
//! (a fresh session each time, opened beforehand), against the time from
//! `run --json`'s `turn_started` event to its `turn_completed` (process
//! start and session opening excluded on both sides). The two alternate
//! turn by turn (one `eonyx acp` serves all its turns), so a change in
//! machine load hits both sides alike. Median of N turns each (default
//! 20; `EONYX_BENCH_SCALE` multiplies it). Goal: within 1.1×.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};

use eonyx_tests::bench::{self, Line, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Paced, Reply, TestEnv};
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The turns before the measured ones (they warm the caches).
const WARM_UP: usize = 2;

/// The answer every turn streams: about 4 KB in the fake's chunks.
fn answer() -> String {
    "The quick brown fox jumps over the lazy dog. ".repeat(90)
}

fn setup() -> Result<(FakeServer, TestEnv)> {
    let server = FakeServer::start();
    server.set_default_reply(Reply::text(answer()));
    let config = FakeConfig::openai(&server.base_url()).set("retries", 0);
    let env = TestEnv::new()?;
    env.write_config(&config)?;
    Ok((server, env))
}

/// One `eonyx run --json PROMPT`: turn_started → turn_completed.
fn run_turn(bin: &Path, env: &TestEnv) -> Result<Duration> {
    let mut cmd = env.command(bin);
    cmd.args(["run", "--json", "tell me about foxes"]);
    Paced::time_turn(&mut cmd)
}

/// One `eonyx acp` process, initialized, serving every ACP turn.
struct Acp {
    child: Paced,
    id: u64,
}

impl Acp {
    fn start(bin: &Path, env: &TestEnv) -> Result<Acp> {
        let mut cmd = env.command(bin);
        cmd.arg("acp");
        let mut acp = Acp {
            child: Paced::spawn(&mut cmd)?,
            id: 0,
        };
        acp.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )?;
        Ok(acp)
    }

    /// A request and its result.
    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.id += 1;
        let n = self.id;
        self.child.send(
            &json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params}).to_string(),
        )?;
        let got = self
            .child
            .wait_for(|m| m["id"] == n && m.get("method").is_none())
            .map_err(|msgs| format!("eonyx acp ended early: {msgs:?}"))?;
        let reply = got.last().cloned().unwrap_or_default();
        if reply.get("error").is_some() {
            return Err(format!("{method} failed: {reply}").into());
        }
        Ok(reply["result"].clone())
    }

    /// A new session (not timed), then `session/prompt` → its response.
    fn turn(&mut self, env: &TestEnv) -> Result<Duration> {
        let s = self.call(
            "session/new",
            json!({"cwd": env.sandbox().work, "mcpServers": []}),
        )?;
        let started = Instant::now();
        self.call(
            "session/prompt",
            json!({"sessionId": s["sessionId"], "prompt": [{"type": "text", "text": "tell me about foxes"}]}),
        )?;
        Ok(started.elapsed())
    }

    fn finish(self) -> Result<()> {
        let (status, stderr, _) = self.child.finish()?;
        if !status.success() {
            return Err(format!("eonyx acp failed: {stderr}").into());
        }
        Ok(())
    }
}

fn main() -> Result<()> {
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let turns = 20 * bench::scale();
    let (_server, env) = setup()?;
    let mut acp = Acp::start(bin, &env)?;
    let mut ours = Samples::default();
    let mut base = Samples::default();
    for i in 0..WARM_UP + turns {
        let b = run_turn(bin, &env)?;
        let o = acp.turn(&env)?;
        if i >= WARM_UP {
            base.0.push(b);
            ours.0.push(o);
        }
    }
    acp.finish()?;
    println!(
        "{}",
        Line::timed(
            "acp: session/prompt to end of turn vs eonyx run's turn (same fake)",
            ours.median(),
            base.median(),
            "≤ 1.1×",
        )
    );
    Ok(())
}
