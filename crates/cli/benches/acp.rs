//! A turn through `eonyx acp` against `eonyx run`, the same fake server
//! and answer, in one run: the time from `session/prompt` to its response
//! (a fresh session each time, opened beforehand), against the time from
//! `run --json`'s `turn_started` event to its `turn_completed` (process
//! start and session opening excluded on both sides). Median of N turns
//! (default 20; `EONYX_BENCH_SCALE` multiplies it). Goal: within 1.1×.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};

use eonyx_tests::bench::{self, Line, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Paced, Reply, TestEnv};
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

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

/// `eonyx run --json PROMPT`: turn_started → turn_completed, per run.
fn run_turns(bin: &Path, env: &TestEnv, turns: usize) -> Result<Samples> {
    let mut times = Samples::default();
    for _ in 0..turns + 2 {
        let mut cmd = env.command(bin);
        cmd.args(["run", "--json", "tell me about foxes"]);
        let mut child = Paced::spawn(&mut cmd)?;
        child
            .wait_for(|e| e["type"] == "turn_started")
            .map_err(|evs| format!("eonyx run ended early: {evs:?}"))?;
        let started = Instant::now();
        child
            .wait_for(|e| e["type"] == "turn_completed")
            .map_err(|evs| format!("eonyx run ended early: {evs:?}"))?;
        times.0.push(started.elapsed());
        let (status, stderr, _) = child.finish()?;
        if !status.success() {
            return Err(format!("eonyx run failed: {stderr}").into());
        }
    }
    // The first two warm the caches.
    times.0.drain(..2);
    Ok(times)
}

/// One `eonyx acp`: per turn a new session (not timed), then
/// `session/prompt` → its response.
fn acp_turns(bin: &Path, env: &TestEnv, turns: usize) -> Result<Samples> {
    let mut cmd = env.command(bin);
    cmd.arg("acp");
    let mut child = Paced::spawn(&mut cmd)?;
    let mut id = 0;
    let mut call = |child: &mut Paced, method: &str, params: Value| -> Result<Value> {
        id += 1;
        let n = id;
        child.send(
            &json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params}).to_string(),
        )?;
        let got = child
            .wait_for(|m| m["id"] == n && m.get("method").is_none())
            .map_err(|msgs| format!("eonyx acp ended early: {msgs:?}"))?;
        let reply = got.last().cloned().unwrap_or_default();
        if reply.get("error").is_some() {
            return Err(format!("{method} failed: {reply}").into());
        }
        Ok(reply["result"].clone())
    };
    call(
        &mut child,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )?;
    let mut times = Samples::default();
    for _ in 0..turns + 2 {
        let s = call(
            &mut child,
            "session/new",
            json!({"cwd": env.sandbox().work, "mcpServers": []}),
        )?;
        let started = Instant::now();
        call(
            &mut child,
            "session/prompt",
            json!({"sessionId": s["sessionId"], "prompt": [{"type": "text", "text": "tell me about foxes"}]}),
        )?;
        times.0.push(started.elapsed());
    }
    let (status, stderr, _) = child.finish()?;
    if !status.success() {
        return Err(format!("eonyx acp failed: {stderr}").into());
    }
    times.0.drain(..2);
    Ok(times)
}

fn main() -> Result<()> {
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let turns = 20 * bench::scale();
    let (_server, env) = setup()?;
    // Interleaved halves, so a change in machine load hits both sides.
    let mut ours: Vec<Duration> = Vec::new();
    let mut base: Vec<Duration> = Vec::new();
    for _ in 0..2 {
        base.extend(run_turns(bin, &env, turns / 2)?.0);
        ours.extend(acp_turns(bin, &env, turns / 2)?.0);
    }
    println!(
        "{}",
        Line::timed(
            "acp: session/prompt to end of turn vs eonyx run's turn (same fake)",
            Samples(ours).median(),
            Samples(base).median(),
            "≤ 1.1×",
        )
    );
    Ok(())
}
