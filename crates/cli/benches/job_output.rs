//! `job_output` on a job whose unread output is a 64 MiB log: served from
//! the head and the tail of the file, never read whole. In the same run,
//! against `job_output` on a 1 MiB log (goal: about as fast, where reading
//! the file would take 64 times as long) and against reading the 64 MiB log
//! whole; and the bytes the call read (`rchar` of `/proc/self/io`) against
//! the log's size. Median of N jobs of each size (default 3;
//! `EONYX_BENCH_SCALE` multiplies it).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use eonyx_agent::tools::jobs::{Jobs, JobsConfig};
use eonyx_agent::tools::{AllowAll, NoAgentTools, ToolContext, execute};
use eonyx_core::ToolCall;
use eonyx_core::provider::CancellationToken;
use eonyx_tests::bench::{self, Line, Samples};
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const LOG_BYTES: u64 = 64 * 1024 * 1024;
const SMALL_BYTES: u64 = 1024 * 1024;
/// `tools.output_cap_bytes`: what one read returns at most.
const CAP: u64 = 16 * 1024;

async fn call(ctx: &ToolContext, name: &str, arguments: Value) -> String {
    let call = ToolCall {
        id: "c".into(),
        name: name.into(),
        arguments,
    };
    execute(
        &call,
        ctx,
        &AllowAll,
        &mut NoAgentTools,
        &CancellationToken::new(),
    )
    .await
    .text
}

/// Bytes this process has read so far (`rchar` of `/proc/self/io`: every
/// `read` and `pread`, page cache or not); `None` where there is no such file.
fn bytes_read() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Start a job writing `bytes` bytes then sleeping; wait until its log
/// holds them all. It writes after its first second (what a start returns
/// counts as read: the bytes must be new to `job_output`).
fn start_job(
    rt: &tokio::runtime::Runtime,
    ctx: &ToolContext,
    jobs_dir: &Utf8PathBuf,
    id: usize,
    bytes: u64,
) -> Result<()> {
    let command = format!("sleep 1.5; head -c {bytes} /dev/zero | tr '\\0' a; sleep 60");
    rt.block_on(call(
        ctx,
        "shell",
        json!({"command": command, "background": true}),
    ));
    let log = jobs_dir.join(format!("{id}.log"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) < bytes {
        if Instant::now() > deadline {
            return Err(format!("job {id} did not write {bytes} bytes").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn head(text: &str) -> String {
    text.chars().take(300).collect()
}

fn main() -> Result<()> {
    let runs = 3 * bench::scale();
    let dir = tempfile::tempdir()?;
    let root = Utf8PathBuf::from_path_buf(dir.path().to_path_buf())
        .map_err(|p| format!("not UTF-8: {}", p.display()))?;
    let mut ctx = ToolContext::new(root.clone(), Duration::from_secs(60));
    ctx.sandbox = Arc::new(eonyx_sandbox::Sandbox::off(&root));
    let jobs_dir = root.join("jobs");
    ctx.jobs = Some(Arc::new(Jobs::new(JobsConfig {
        max_jobs: 256,
        log_max_bytes: 2 * LOG_BYTES,
        output_cap_bytes: CAP,
        dir: jobs_dir.clone(),
        keeper: None,
    })));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut big, mut small, mut whole) =
        (Samples::default(), Samples::default(), Samples::default());
    let mut read_big = Vec::new();
    let mut id = 0;
    for _ in 0..runs {
        // A 1 MiB log and a 64 MiB one, read alike in the same run.
        id += 1;
        start_job(&rt, &ctx, &jobs_dir, id, SMALL_BYTES)?;
        let text = small.time(|| rt.block_on(call(&ctx, "job_output", json!({"id": id}))));
        if !text.contains("bytes left out") {
            return Err(format!("job_output did not cut the output: {}", head(&text)).into());
        }
        id += 1;
        start_job(&rt, &ctx, &jobs_dir, id, LOG_BYTES)?;
        let log = jobs_dir.join(format!("{id}.log"));
        whole.time(|| std::fs::read(&log).map(|b| std::hint::black_box(b.len())))?;
        let before = bytes_read();
        let text = big.time(|| rt.block_on(call(&ctx, "job_output", json!({"id": id}))));
        if let (Some(a), Some(b)) = (before, bytes_read()) {
            read_big.push(b.saturating_sub(a));
        }
        if !text.contains("bytes left out") {
            return Err(format!("job_output did not cut the output: {}", head(&text)).into());
        }
    }
    println!(
        "{}",
        Line::timed(
            "jobs: job_output on a 64 MiB log vs on a 1 MiB log",
            big.median(),
            small.median(),
            "about 1x (not the 64x of reading it)",
        )
    );
    println!(
        "{}",
        Line::timed(
            "jobs: job_output on a 64 MiB log vs reading it whole",
            big.median(),
            whole.median(),
            "a small fraction",
        )
    );
    if let Some(most) = read_big.iter().max() {
        println!(
            "{}",
            Line::quantity(
                "jobs: bytes job_output read of a 64 MiB log (most of N runs) vs its size",
                *most as f64 / 1024.0,
                LOG_BYTES as f64 / 1024.0,
                "KiB",
                "about the 16 KiB cap",
            )
        );
    }
    // Dropping the context stops the jobs.
    drop(ctx);
    Ok(())
}
