//! Memory mining never delays a turn (docs/memory.md#mining): `eonyx run`
//! with three eligible past sessions (mining on, `review`) against the same
//! run with `memory.mine = "off"`, in one run, alternating. Measured: from
//! spawning the process to the fake server receiving the user's first
//! request. Each run gets a fresh data dir holding the three sessions, so
//! every mining run really mines. Median of N runs each (default 15;
//! `EONYX_BENCH_SCALE` multiplies it). Goal: the first request leaves no
//! more than 5 ms later with mining on.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eonyx_tests::bench::{self, Line, Samples};
use eonyx_tests::{FakeConfig, FakeServer, Reply, Sandbox};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Three idle sessions of the project at `root`, each with three user
/// messages, in a new data dir under `base`.
fn data_dir(base: &Path, n: usize, root: &str) -> Result<PathBuf> {
    let data = base.join(format!("data-{n}"));
    let sessions = data.join("sessions");
    std::fs::create_dir_all(&sessions)?;
    for s in 0..3 {
        let id = format!("20261101T10000{s}-0000000{s}");
        let mut lines = vec![
            json!({"type": "session", "version": 1, "id": id, "title": format!("{s}"),
                "created": "2026-11-01T10:00:00Z", "cwd": root, "project": root})
            .to_string(),
        ];
        for i in 0..6u64 {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            lines.push(
                json!({"type": "message", "seq": i + 1, "ts": "2026-11-01T10:00:00Z",
                    "role": role, "content": format!("message {i}: we use pnpm, never npm")})
                .to_string(),
            );
        }
        std::fs::write(
            sessions.join(format!("{id}.jsonl")),
            lines.join("\n") + "\n",
        )?;
    }
    Ok(data)
}

/// One `eonyx run`: spawn to the first user request at the fake.
fn run(
    bin: &Path,
    sandbox: &Sandbox,
    data: &Path,
    first: &Arc<Mutex<Option<Instant>>>,
) -> Result<Duration> {
    *first.lock().map_err(|_| "poisoned")? = None;
    let mut cmd = sandbox.command(bin);
    cmd.env("EONYX_DATA_DIR", data)
        .args(["run", "hello"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(format!("eonyx run failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let at = first
        .lock()
        .map_err(|_| "poisoned")?
        .ok_or("the fake never saw the user's request")?;
    Ok(at.saturating_duration_since(started))
}

fn main() -> Result<()> {
    let runs = 15 * bench::scale();
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let server = FakeServer::start();
    server.set_default_reply(Reply::text("ok"));
    let first: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = first.clone();
    server.set_responder(move |_| {
        if let Ok(mut f) = seen.lock() {
            f.get_or_insert_with(Instant::now);
        }
        None
    });
    let mut mined_total = 0;
    let mut sides = Vec::new();
    for mine in ["review", "off"] {
        let sandbox = Sandbox::try_new()?;
        sandbox.write("work/eonyx.json", "{}\n");
        let config = FakeConfig::openai(&server.base_url())
            .set("retries", 0)
            .merge_top_toml(&format!(
                "[memory]\nmine = \"{mine}\"\nmine_idle_hours = 0\nmine_per_start = 3\n"
            ))?;
        sandbox.write_config(&config)?;
        let root = sandbox.work.to_string_lossy().into_owned();
        sides.push((sandbox, root, Samples::default()));
    }
    for i in 0..runs + 2 {
        for (side, (sandbox, root, samples)) in sides.iter_mut().enumerate() {
            let data = data_dir(&sandbox.root, i, root)?;
            let before = server.miner_requests().len();
            let took = run(bin, sandbox, &data, &first)?;
            if side == 0 {
                mined_total += server.miner_requests().len() - before;
            }
            // The first two runs of each side warm the caches.
            if i >= 2 {
                samples.0.push(took);
            }
            let _ = std::fs::remove_dir_all(&data);
        }
    }
    if mined_total < runs {
        eprintln!("mining bench: warning: only {mined_total} mining requests in {runs} runs");
    }
    let ours = sides[0].2.median();
    let baseline = sides[1].2.median();
    println!(
        "{}",
        Line::timed(
            "mining: eonyx run's first request, 3 eligible sessions vs mining off",
            ours,
            baseline,
            "≤ 5 ms later",
        )
    );
    Ok(())
}
