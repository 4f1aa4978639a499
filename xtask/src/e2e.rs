//! `cargo xtask e2e [--port P] [--turns N] [--http-only]`: end-to-end checks
//! against a real llama-server (Gemma 3 270M, 2048-token context).
//!
//! 1. HTTP level, both `/v1/chat/completions` and `/v1/messages`: a streamed
//!    reply with usage; an over-window request recognised as a context
//!    overflow with the server's figures; two requests sharing a prefix hit
//!    the prompt cache.
//! 2. The real binary: `target/debug/eonyx` in batch mode (N piped lines)
//!    with a config WITHOUT `context_window`, through a logging proxy that
//!    records the server's `timings` (cache_n / prompt_n) per request; then
//!    the compactions found in the session file, and per summarizer request
//!    its path, cache reuse and prefill (`report.rs`). `--threshold`,
//!    `--buffer`, `--keep-turns`, `--max-tokens` and `--words` set up the
//!    compaction (`setup.rs`).
//! 3. Paced (`--pause-ms MS`, default 8000; `--paced-turns N`, 0 skips it):
//!    the binary fed one line at a time with that pause between an answer
//!    and the next line, with summaries written ahead and with
//!    `ahead_percent = 0`; the wait of each compacting turn against a
//!    steady turn (`waits.rs`; `--paced-max-tokens N`, `--paced-threshold
//!    PCT` for a slow machine).
//! 4. MCP (`e2e/mcp.rs`): with `mcp-server-time` installed from PyPI, `eonyx
//!    mcp` finds it and a turn carries its tools; skipped with a message
//!    when it is not installed (`--mcp-only` runs only this stage).
//! 5. Export (`export.rs`; `--export-only` runs just it, without
//!    llama-server): a session with tool calls, a task, compactions and a
//!    rewind (the fake server deciding) exported as HTML and Markdown, the
//!    page rendered by headless Chromium when installed; the screenshots
//!    land in `target/e2e-export/`.
//! 6. ACP (`e2e/acpx.rs`): with Node and npm, `acpx` from npm runs a
//!    prompt against `eonyx acp`; skipped with a message without them
//!    (`--acpx-only` runs only this stage).
//! 7. Responses (`responses.rs`; `--responses-turns N`, default 20, 0 skips
//!    it; `--responses-only`): two turns through `/v1/responses` sharing the
//!    prompt cache, then a compacting batch on that wire with the binary
//!    stage's compaction checks, then native compaction asked of a server
//!    with no compact call: it falls back and is remembered.
//! 8. Tasks (`task.rs`; `--no-tasks` skips it): the same reads done by the
//!    main agent and delegated to one `explore` task, against a second
//!    llama-server (n_ctx 8192 on port P+1); the parent's window use in both.

use std::io::Write;
use std::process::Stdio;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::local_model::{self, LocalServer};
use crate::util;

mod acpx;
mod export;
mod http;
mod mcp;
mod proxy;
mod report;
mod responses;
mod setup;
mod task;
mod waits;
use http::{anthropic_stream, cache, openai_stream, overflow, summarizer_reuse};
use proxy::start_proxy;
pub(crate) use report::pct;
use report::{compaction_report, print_table, session_stats};
use setup::turn_lines;

const E2E_CTX: u32 = 2048;
/// The context size of this run (`--ctx`, default [`E2E_CTX`]).
static CTX: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(E2E_CTX);

pub(crate) fn ctx() -> u32 {
    CTX.load(std::sync::atomic::Ordering::Relaxed)
}
const DEFAULT_E2E_PORT: u16 = 8089;

/// One HTTP check: given the server root URL, a one-line result.
type Check = fn(&str) -> Result<String>;

struct Options {
    port: u16,
    turns: usize,
    http_only: bool,
    ctx: u32,
    /// The binary stage's compaction setup.
    setup: setup::Setup,
    /// Use this binary instead of building `target/debug/eonyx`.
    eonyx: Option<std::path::PathBuf>,
    /// Turns of the paced stage (0: skip it).
    paced_turns: usize,
    /// The pause between an answer and the next line in the paced stage.
    pause: Duration,
    /// The paced stage's output caps and threshold (`waits::Tuning`).
    paced_tuning: waits::Tuning,
    /// Only the task stage (`--tasks-only`).
    tasks_only: bool,
    /// Only the MCP stage (`--mcp-only`).
    mcp_only: bool,
    /// Only the ACP stage (`--acpx-only`).
    acpx_only: bool,
    /// Skip the task stage (`--no-tasks`).
    no_tasks: bool,
    /// Turns of the Responses stage's compacting batch (0: skip the stage).
    responses_turns: usize,
    /// Only the Responses stage (`--responses-only`).
    responses_only: bool,
    /// Only the export stage (`--export-only`).
    export_only: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut o = Options {
        port: DEFAULT_E2E_PORT,
        turns: 30,
        http_only: false,
        ctx: E2E_CTX,
        setup: setup::Setup::default(),
        eonyx: None,
        paced_turns: 30,
        pause: Duration::from_millis(8000),
        paced_tuning: waits::Tuning::default(),
        tasks_only: false,
        mcp_only: false,
        acpx_only: false,
        no_tasks: false,
        responses_turns: 20,
        responses_only: false,
        export_only: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if o.setup.flag(a, &mut it)? {
            continue;
        }
        match a.as_str() {
            "--port" => o.port = local_model::value(&mut it, "--port")?,
            "--turns" => o.turns = local_model::value(&mut it, "--turns")?,
            "--http-only" => o.http_only = true,
            "--ctx" => o.ctx = local_model::value(&mut it, "--ctx")?,
            "--tasks-only" => o.tasks_only = true,
            "--mcp-only" => o.mcp_only = true,
            "--acpx-only" => o.acpx_only = true,
            "--no-tasks" => o.no_tasks = true,
            "--responses-only" => o.responses_only = true,
            "--responses-turns" => {
                o.responses_turns = local_model::value(&mut it, "--responses-turns")?;
            }
            "--export-only" => o.export_only = true,
            "--eonyx" => o.eonyx = Some(it.next().context("--eonyx needs a path")?.into()),
            "--paced-turns" => o.paced_turns = local_model::value(&mut it, "--paced-turns")?,
            "--paced-max-tokens" => {
                o.paced_tuning.max_tokens =
                    Some(local_model::value(&mut it, "--paced-max-tokens")?);
            }
            "--paced-threshold" => {
                o.paced_tuning.threshold_percent =
                    Some(local_model::value(&mut it, "--paced-threshold")?);
            }
            "--pause-ms" => {
                o.pause = Duration::from_millis(local_model::value(&mut it, "--pause-ms")?);
            }
            "-h" | "--help" => {
                println!(
                    "usage: cargo xtask e2e [--port P] [--turns N] [--ctx N] [--transcript-summaries] [--threshold PCT] [--buffer N] [--keep-turns N] [--max-tokens N] [--words N] [--http-only] [--tasks-only] [--no-tasks] [--mcp-only] [--export-only] [--acpx-only] [--responses-turns N] [--responses-only] [--eonyx PATH] [--paced-turns N] [--pause-ms MS] [--paced-max-tokens N] [--paced-threshold PCT]\n\
                     --threshold, --buffer, --keep-turns set the binary stage's compaction.threshold_percent, buffer_tokens, keep_turns;\n\
                     --max-tokens its max_output_tokens (default 128); --words pads each of its lines to about N words.\n\
                     --paced-turns N (default 30; 0 skips) feeds N lines one at a time with MS (default 8000) between an answer and the next line,\n\
                     with summaries written ahead and with ahead_percent = 0, and reports the wait of each compacting turn against a steady one;\n\
                     --paced-max-tokens N caps its answers at N tokens and its summaries at 2N, --paced-threshold PCT sets its compaction.threshold_percent\n\
                     (a slow or loaded machine: a summary must fit in the pause to be written ahead on a one-slot server).\n\
                     --transcript-summaries forces the standalone transcript summarizer (the cost before cache-aware compaction).\n\
                     --tasks-only runs only the task stage (a second llama-server, n_ctx 8192, on port P+1); --no-tasks skips it.\n\
                     --mcp-only runs only the MCP stage (a turn with mcp-server-time from PyPI, when installed).\n\
                     --responses-turns N (default 20; 0 skips) runs the Responses stage: two turns through /v1/responses (the second's cache >= 80% of the first's input),\n\
                     then N batch turns on that wire with the binary stage's compaction setup and checks, then native compaction's fallback (no compact call there); --responses-only runs only it.\n\
                     --export-only runs only the export stage (a session exported as HTML, rendered by headless chromium when installed; no llama-server).\n\
                     --acpx-only runs only the ACP stage (acpx from npm runs a prompt against `eonyx acp`, when Node is installed).\n\
                     Starts llama-server (ctx N, default {E2E_CTX}) on 127.0.0.1:P (default {DEFAULT_E2E_PORT}) unless one runs there,\n\
                     checks both HTTP APIs, then drives target/debug/eonyx for N batch turns (default 30; 0 skips)."
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}` (try --help)"),
        }
    }
    Ok(o)
}

/// Stops the server on every exit path if we started it.
struct ServerGuard(LocalServer);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        self.0.stop();
    }
}

pub fn run(args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    CTX.store(opts.ctx, std::sync::atomic::Ordering::Relaxed);
    if opts.export_only {
        let bin = eonyx_binary(opts.eonyx.as_deref())?;
        return export::export_stage(&bin);
    }
    if opts.tasks_only {
        let failed = run_task_stage(&opts)?;
        if failed > 0 {
            bail!("{failed} task check(s) failed");
        }
        return Ok(());
    }
    let server = local_model::start(&local_model::Options {
        ctx: opts.ctx,
        port: opts.port,
        detach: false,
        write_config: false,
    })?;
    let server = ServerGuard(server);
    let root = server.0.root_url();
    match local_model::served_ctx(opts.port) {
        Some(n) if n == u64::from(ctx()) => {}
        Some(n) => bail!(
            "the llama-server already on port {} has n_ctx {n}, not {}; stop it or pass --port",
            opts.port,
            ctx()
        ),
        None => bail!("the server on port {} does not answer /props", opts.port),
    }

    if opts.mcp_only {
        let bin = eonyx_binary(opts.eonyx.as_deref())?;
        mcp::mcp_stage(opts.port, &bin)?;
        return Ok(());
    }
    if opts.acpx_only {
        let bin = eonyx_binary(opts.eonyx.as_deref())?;
        acpx::acpx_stage(opts.port, &bin)?;
        return Ok(());
    }
    if opts.responses_only {
        let bin = eonyx_binary(opts.eonyx.as_deref())?;
        let failed =
            responses::responses_stage(&bin, opts.port, opts.responses_turns, &opts.setup)?;
        if failed > 0 {
            bail!("{failed} Responses check(s) failed");
        }
        return Ok(());
    }

    let checks: [(&str, Check); 8] = [
        ("openai: streamed reply with usage", openai_stream),
        ("anthropic: streamed reply with usage", anthropic_stream),
        ("openai: over-window -> context overflow", |r| {
            overflow(r, false)
        }),
        ("anthropic: over-window -> context overflow", |r| {
            overflow(r, true)
        }),
        ("openai: shared prefix -> cached tokens", |r| {
            cache(r, false)
        }),
        ("anthropic: shared prefix -> cached tokens", |r| {
            cache(r, true)
        }),
        ("openai: summarizer reuses the conversation", |r| {
            summarizer_reuse(r, false)
        }),
        ("anthropic: summarizer reuses the conversation", |r| {
            summarizer_reuse(r, true)
        }),
    ];
    let mut failed = 0;
    println!(
        "== HTTP checks against llama-server {root} (n_ctx {})",
        ctx()
    );
    for (name, check) in checks {
        match check(&root) {
            Ok(detail) => println!("PASS  {name:<44} {detail}"),
            Err(e) => {
                failed += 1;
                println!("FAIL  {name:<44} {e:#}");
            }
        }
    }

    if opts.http_only {
        println!("== binary stage skipped (--http-only)");
    } else {
        match eonyx_binary(opts.eonyx.as_deref()) {
            Err(e) => {
                failed += 1;
                println!("FAIL  binary stage: {e:#}");
            }
            Ok(bin) => {
                if opts.turns == 0 {
                    println!("== binary stage skipped (--turns 0)");
                } else if let Err(e) = binary_stage(&bin, opts.port, opts.turns, &opts.setup) {
                    failed += 1;
                    println!("FAIL  binary stage: {e:#}");
                }
                if opts.paced_turns > 0 {
                    let lines: Vec<String> = turn_lines(opts.paced_turns)
                        .lines()
                        .map(str::to_owned)
                        .collect();
                    match waits::paced_stage(
                        &bin,
                        opts.port,
                        &lines,
                        opts.pause,
                        &opts.paced_tuning,
                    ) {
                        Ok(report) => report.iter().for_each(|l| println!("{l}")),
                        Err(e) => {
                            failed += 1;
                            println!("FAIL  paced stage: {e:#}");
                        }
                    }
                }
                if opts.responses_turns > 0 {
                    match responses::responses_stage(
                        &bin,
                        opts.port,
                        opts.responses_turns,
                        &opts.setup,
                    ) {
                        Ok(n) => failed += n,
                        Err(e) => {
                            failed += 1;
                            println!("FAIL  responses stage: {e:#}");
                        }
                    }
                }
                if let Err(e) = mcp::mcp_stage(opts.port, &bin) {
                    failed += 1;
                    println!("FAIL  mcp: {e:#}");
                }
                if let Err(e) = export::export_stage(&bin) {
                    failed += 1;
                    println!("FAIL  export: {e:#}");
                }
                if let Err(e) = acpx::acpx_stage(opts.port, &bin) {
                    failed += 1;
                    println!("FAIL  acpx: {e:#}");
                }
            }
        }
    }
    drop(server);
    if !opts.http_only && !opts.no_tasks {
        match run_task_stage(&opts) {
            Ok(n) => failed += n,
            Err(e) => {
                failed += 1;
                println!("FAIL  task stage: {e:#}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} e2e check(s) failed");
    }
    Ok(())
}

/// The task stage on its own llama-server (n_ctx [`task::TASK_CTX`], port
/// P+1); returns the failed checks.
fn run_task_stage(opts: &Options) -> Result<usize> {
    let port = opts.port + 1;
    let server = local_model::start(&local_model::Options {
        ctx: task::TASK_CTX,
        port,
        detach: false,
        write_config: false,
    })?;
    let server = ServerGuard(server);
    match local_model::served_ctx(port) {
        Some(n) if n == u64::from(task::TASK_CTX) => {}
        other => bail!(
            "the llama-server on port {port} has n_ctx {other:?}, not {}; stop it or pass another --port",
            task::TASK_CTX
        ),
    }
    let bin = eonyx_binary(opts.eonyx.as_deref())?;
    let failed = task::task_stage(&bin, &server.0.root_url())?;
    drop(server);
    Ok(failed)
}

/// The binary to drive: `--eonyx PATH`, or `target/debug/eonyx` built now.
fn eonyx_binary(given: Option<&std::path::Path>) -> Result<std::path::PathBuf> {
    let bin = match given {
        Some(path) => path.to_path_buf(),
        None => {
            util::run(util::cargo().args(["build", "-q", "-p", "eonyx-cli"])).context(
                "the eonyx binary does not build yet (the HTTP checks above still stand)",
            )?;
            util::target_dir().join("debug").join("eonyx")
        }
    };
    if !bin.is_file() {
        bail!("{} is missing after the build", bin.display());
    }
    Ok(bin)
}

// ---------------------------------------------------------------- binary stage

fn binary_stage(
    bin: &std::path::Path,
    server_port: u16,
    turns: usize,
    setup: &setup::Setup,
) -> Result<()> {
    println!("== binary stage: {turns} batch turns, no context_window in config");
    let (proxy_port, log) = start_proxy(server_port)?;
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    let config = setup.config(proxy_port);
    println!("config:\n{config}");
    std::fs::create_dir_all(&env.config_dir)?;
    std::fs::write(env.config_dir.join("config.toml"), format!("{config}\n"))
        .context("writing the e2e config")?;

    let stdout_path = env.home.join("eonyx.stdout");
    let stderr_path = env.home.join("eonyx.stderr");
    let mut child = env
        .command(bin)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&stdout_path)?)
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A binary that exits early closes its stdin: its exit status and
        // stderr below say why, so a broken pipe here is not the error.
        let lines: String = turn_lines(turns)
            .lines()
            .map(|l| format!("{}\n", setup.pad(l)))
            .collect();
        if let Err(e) = stdin.write_all(lines.as_bytes()) {
            eprintln!("note: eonyx stopped reading its stdin early ({e})");
        }
    }
    let started = Instant::now();
    // Two minutes a turn, at least 20 in all: a loaded 2-core machine took
    // 4 s a turn at ctx 4096 and a minute for some compactions.
    let limit = Duration::from_secs((turns as u64 * 120).max(20 * 60));
    let status = util::wait_or_kill(&mut child, limit)?;
    let elapsed = started.elapsed();
    let entries = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    print_table(&entries);

    let (compactions, triggers, messages) =
        session_stats(env.data_dir.join("sessions").as_std_path());
    let overflows = entries.iter().filter(|e| e.overflow).count();
    let first_overflow = entries.iter().position(|e| e.overflow);
    let first_summary = entries.iter().position(|e| e.summarizer);
    println!(
        "eonyx: {} in {}; session: {messages} messages, {compactions} compaction(s) {triggers:?}; \
         summarizer requests {}; overflows {overflows}{}",
        match status {
            Some(s) => s.to_string(),
            None => format!("killed after {}s", limit.as_secs()),
        },
        util::human_duration(elapsed),
        entries.iter().filter(|e| e.summarizer).count(),
        match (first_summary, first_overflow) {
            (_, None) => String::new(),
            (Some(s), Some(o)) if s < o =>
                " (first compaction came before the first overflow)".into(),
            _ => " (an overflow came before any compaction)".into(),
        }
    );
    let root = format!("http://127.0.0.1:{server_port}");
    let tokens = |text: &str| http::count_tokens(&root, text).ok();
    let report = compaction_report(&entries, u64::from(ctx()), &tokens, setup);
    for line in &report.lines {
        println!("{line}");
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let ok = status.is_some_and(|s| s.success());
    if !ok {
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "eonyx did not finish successfully; last stderr lines:\n{}",
            tail.join("\n")
        );
    }
    if entries
        .iter()
        .filter(|e| e.path.ends_with("/chat/completions"))
        .count()
        < turns
    {
        bail!("fewer chat requests than turns reached the server");
    }
    if report.failed > 0 {
        bail!("{} compaction check(s) failed", report.failed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use eonyx_tests::http::{HttpResponse, post_json};
    use eonyx_tests::{FakeServer, OverflowFlavor, Reply};
    use serde_json::{Value, json};

    use super::http::{overflow_figures, user};
    use super::*;

    #[test]
    fn proxy_forwards_streams_and_logs_timings_summaries_and_overflows() {
        let server = FakeServer::start();
        server
            .set_overflow_flavor(OverflowFlavor::LlamaCpp)
            .set_context_window(Some(200))
            .push(Reply::text("streamed through the proxy"));
        let (port, log) = start_proxy(server.addr().port()).unwrap();
        let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
        let body = json!({"model": "m", "stream": true, "messages": [
            {"role": "system", "content": "You are the eonyx summarizer. Summarize."},
            user("facts"),
        ]});
        let r = post_json(&url, &body, &[]).unwrap();
        assert!(r.complete);
        let text: String = r
            .sse_json()
            .iter()
            .filter_map(|c| {
                c.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
            })
            .collect();
        assert_eq!(text, "streamed through the proxy");
        let r = post_json(
            &url,
            &json!({"model": "m", "messages": [user(&"x".repeat(3000))]}),
            &[],
        )
        .unwrap();
        assert_eq!(r.status, 400);

        let entries = log.lock().unwrap().clone();
        assert_eq!(entries.len(), 2);
        let (a, b) = (&entries[0], &entries[1]);
        assert_eq!(
            (a.status, a.summarizer, a.messages, a.overflow),
            (200, true, 2, false)
        );
        assert_eq!(
            a.prompt_n.unwrap() + a.cache_n.unwrap(),
            server.chat_requests()[0].prompt_tokens
        );
        assert_eq!((b.status, b.summarizer, b.overflow), (400, false, true));
        assert_eq!(
            server.requests()[0].header("host"),
            Some(format!("127.0.0.1:{}", server.addr().port()).as_str())
        );
    }

    #[test]
    fn overflow_figures_are_read_from_each_servers_body() {
        let response = |status: u16, body: Value| HttpResponse {
            status,
            headers: BTreeMap::new(),
            body: body.to_string(),
            complete: true,
        };
        let llama = response(
            400,
            json!({"error": {"code": 400, "type": "exceed_context_size_error",
            "message": "the request exceeds the available context size, try increasing it",
            "n_prompt_tokens": 4024, "n_ctx": 2048}}),
        );
        assert_eq!(overflow_figures(&llama), Some((Some(4024), Some(2048))));
        let anthropic = response(
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        );
        assert_eq!(
            overflow_figures(&anthropic),
            Some((Some(210000), Some(200000)))
        );
        let other = response(400, json!({"error": {"message": "bad tool schema"}}));
        assert_eq!(overflow_figures(&other), None);
    }
}
