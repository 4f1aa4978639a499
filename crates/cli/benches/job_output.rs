//! `job_output` on a job whose unread output is a 64 MiB log: served from
//! the head and the tail of the file, never read whole. Measured against
//! reading the same log whole, in the same run; the median of N jobs
//! (default 3; `EONYX_BENCH_SCALE` multiplies it), each writing 64 MiB.
//! Goal: a small fraction of a whole read.
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

fn main() -> Result<()> {
    let runs = 3 * bench::scale();
    let dir = tempfile::tempdir()?;
    let root = Utf8PathBuf::from_path_buf(dir.path().to_path_buf())
        .map_err(|p| format!("not UTF-8: {}", p.display()))?;
    let mut ctx = ToolContext::new(root.clone(), Duration::from_secs(60));
    ctx.sandbox = Arc::new(eonyx_sandbox::Sandbox::off(&root));
    let jobs_dir = root.join("jobs");
    ctx.jobs = Some(Arc::new(Jobs::new(JobsConfig {
        max_jobs: 16,
        log_max_bytes: 2 * LOG_BYTES,
        output_cap_bytes: 16 * 1024,
        dir: jobs_dir.clone(),
        keeper: None,
    })));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut ours, mut whole) = (Samples::default(), Samples::default());
    for id in 1..=runs {
        let command = format!("head -c {LOG_BYTES} /dev/zero | tr '\\0' a; sleep 60");
        rt.block_on(call(
            &ctx,
            "shell",
            json!({"command": command, "background": true}),
        ));
        let log = jobs_dir.join(format!("{id}.log"));
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) < LOG_BYTES {
            if Instant::now() > deadline {
                return Err(format!("job {id} did not write {LOG_BYTES} bytes").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        whole.time(|| std::fs::read(&log).map(|b| std::hint::black_box(b.len())))?;
        let text = ours.time(|| rt.block_on(call(&ctx, "job_output", json!({"id": id}))));
        if !text.contains("bytes left out") {
            return Err(format!("job_output did not cut the output: {}", &text[..200]).into());
        }
    }
    println!(
        "{}",
        Line::timed(
            "jobs: job_output on a 64 MiB log vs reading it whole",
            ours.median(),
            whole.median(),
            "a small fraction",
        )
    );
    // Dropping the context stops the jobs.
    drop(ctx);
    Ok(())
}
