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
//!    the compactions found in the session file.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use eonyx_tests::RecordedRequest;
use eonyx_tests::http::parse_response;
use serde_json::Value;

use crate::local_model::{self, LocalServer, MODEL_NAME};
use crate::util;

mod http;
use http::{anthropic_stream, cache, openai_stream, overflow, overflow_figures, summarizer_reuse};
// The tests below name these as `super::*`.
#[cfg(test)]
use eonyx_tests::http::{HttpResponse, post_json};
#[cfg(test)]
use http::user;
#[cfg(test)]
use serde_json::json;

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
    /// Force the transcript summarizer (a `compaction.model` alias of the
    /// same server), to measure the old cost in the same conditions.
    transcript: bool,
    /// Use this binary instead of building `target/debug/eonyx`.
    eonyx: Option<std::path::PathBuf>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut o = Options {
        port: DEFAULT_E2E_PORT,
        turns: 30,
        http_only: false,
        ctx: E2E_CTX,
        transcript: false,
        eonyx: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--port" => o.port = local_model::value(&mut it, "--port")?,
            "--turns" => o.turns = local_model::value(&mut it, "--turns")?,
            "--http-only" => o.http_only = true,
            "--ctx" => o.ctx = local_model::value(&mut it, "--ctx")?,
            "--transcript-summaries" => o.transcript = true,
            "--eonyx" => o.eonyx = Some(it.next().context("--eonyx needs a path")?.into()),
            "-h" | "--help" => {
                println!(
                    "usage: cargo xtask e2e [--port P] [--turns N] [--ctx N] [--transcript-summaries] [--http-only] [--eonyx PATH]\n\
                     --transcript-summaries forces the standalone transcript summarizer (the cost before cache-aware compaction).\n\
                     Starts llama-server (ctx N, default {E2E_CTX}) on 127.0.0.1:P (default {DEFAULT_E2E_PORT}) unless one runs there,\n\
                     checks both HTTP APIs, then drives target/debug/eonyx for N batch turns (default 30)."
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
    } else if let Err(e) = binary_stage(
        opts.port,
        opts.turns,
        opts.transcript,
        opts.eonyx.as_deref(),
    ) {
        failed += 1;
        println!("FAIL  binary stage: {e:#}");
    }
    drop(server);
    if failed > 0 {
        bail!("{failed} e2e check(s) failed");
    }
    Ok(())
}

// ---------------------------------------------------------------- binary stage

/// One request seen by the logging proxy.
#[derive(Debug, Clone)]
struct Entry {
    method: String,
    path: String,
    status: u16,
    summarizer: bool,
    /// A shared-prefix summarizer request (the conversation plus one
    /// instruction), as opposed to a transcript one.
    shared: bool,
    messages: usize,
    prompt_n: Option<u64>,
    cache_n: Option<u64>,
    /// llama.cpp `timings.prompt_ms`: the prefill time.
    prompt_ms: Option<f64>,
    overflow: bool,
    /// A turn request's system prompt through the date line: the stable
    /// prefix a compaction must not move (docs/prompt.md#the-request).
    stable_prefix: Option<String>,
}

/// The system text through the end of its `Current date (UTC): …` line.
fn stable_prefix(system: &str) -> Option<String> {
    let at = system.find("Current date (UTC): ")?;
    let end = system[at..].find('\n').map_or(system.len(), |n| at + n);
    Some(system[..end].to_owned())
}

type Log = Arc<Mutex<Vec<Entry>>>;

/// A logging reverse proxy on 127.0.0.1:0 in front of llama-server: one
/// request per connection, bytes forwarded as they arrive (streams stay
/// streams), response timings recorded.
fn start_proxy(upstream: u16) -> Result<(u16, Log)> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).context("binding the logging proxy")?;
    let port = listener.local_addr()?.port();
    let log: Log = Arc::default();
    let log2 = log.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let log = log2.clone();
            std::thread::spawn(move || {
                if let Err(e) = proxy_one(client, upstream, &log) {
                    eprintln!("proxy: {e:#}");
                }
            });
        }
    });
    Ok((port, log))
}

fn proxy_one(mut client: TcpStream, upstream: u16, log: &Log) -> Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        let n = client.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("").to_owned();
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = client.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }

    let mut up =
        TcpStream::connect(("127.0.0.1", upstream)).context("connecting to llama-server")?;
    let mut out = format!("{request_line}\r\nHost: 127.0.0.1:{upstream}\r\nConnection: close\r\n");
    for (k, v) in &headers {
        if !k.eq_ignore_ascii_case("host") && !k.eq_ignore_ascii_case("connection") {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    out.push_str("\r\n");
    up.write_all(out.as_bytes())?;
    up.write_all(&body)?;

    let mut response = Vec::new();
    loop {
        let n = match up.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => break,
        };
        response.extend_from_slice(&chunk[..n]);
        if client.write_all(&chunk[..n]).is_err() {
            break;
        }
    }

    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = RecordedRequest {
        method: method.clone(),
        path: path.clone(),
        headers: BTreeMap::new(),
        raw_body: String::new(),
        body: json_body,
        prompt_tokens: 0,
    };
    let parsed = parse_response(&response);
    let (status, timings, overflow) = match &parsed {
        Some(r) => {
            let timings = match r.json() {
                Some(v) => v.get("timings").cloned(),
                None => r
                    .sse_json()
                    .iter()
                    .rev()
                    .find_map(|c| c.get("timings").cloned()),
            };
            (r.status, timings, overflow_figures(r).is_some())
        }
        None => (0, None, false),
    };
    let get = |k: &str| {
        timings
            .as_ref()
            .and_then(|t| t.get(k))
            .and_then(Value::as_u64)
    };
    let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
    // Live progress (the table comes at the end).
    eprintln!(
        "  request {:>3}: {method} {path} -> {status}{}",
        log.len() + 1,
        match (get("prompt_n"), get("cache_n")) {
            (Some(p), Some(c)) => format!(" (prompt_n {p}, cache_n {c})"),
            _ => String::new(),
        }
    );
    log.push(Entry {
        method,
        path,
        status,
        summarizer: recorded.is_summarizer(),
        shared: recorded.is_shared_prefix_summarizer(),
        messages: recorded.messages().len(),
        prompt_n: get("prompt_n"),
        cache_n: get("cache_n"),
        prompt_ms: timings
            .as_ref()
            .and_then(|t| t.get("prompt_ms"))
            .and_then(Value::as_f64),
        overflow,
        stable_prefix: (!recorded.is_summarizer())
            .then(|| stable_prefix(&recorded.system_text()))
            .flatten(),
    });
    // Close only after logging, so a client that saw the end sees the entry.
    let _ = client.shutdown(std::net::Shutdown::Both);
    Ok(())
}

fn turn_lines(turns: usize) -> String {
    let topics = [
        "the sea",
        "mountains",
        "rivers",
        "forests",
        "deserts",
        "the moon",
        "volcanoes",
        "glaciers",
        "islands",
        "rain",
    ];
    (1..=turns)
        .map(|i| {
            format!(
                "Turn {i}: remember that code word {i} is {}. Now write two sentences about {}.\n",
                i * 7,
                topics[i % topics.len()]
            )
        })
        .collect()
}

fn binary_stage(
    server_port: u16,
    turns: usize,
    transcript: bool,
    eonyx: Option<&std::path::Path>,
) -> Result<()> {
    println!("== binary stage: {turns} batch turns, no context_window in config");
    let bin = match eonyx {
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
    let (proxy_port, log) = start_proxy(server_port)?;
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    let mut config = local_model::config_snippet(proxy_port);
    if transcript {
        // Another model key for the same server: eonyx then cannot share
        // the conversation's prompt and uses the transcript summarizer.
        config.push_str(&format!(
            "\n\n[compaction]\nmodel = \"summarizer\"\n\n[models.summarizer]\nprovider = \"openai\"\n\
             base_url = \"http://127.0.0.1:{proxy_port}/v1\"\nname = \"{MODEL_NAME}\"\nmax_output_tokens = 128"
        ));
    }
    std::fs::create_dir_all(&env.config_dir)?;
    std::fs::write(env.config_dir.join("config.toml"), format!("{config}\n"))
        .context("writing the e2e config")?;

    let stdout_path = env.home.join("eonyx.stdout");
    let stderr_path = env.home.join("eonyx.stderr");
    let mut child = env
        .command(&bin)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&stdout_path)?)
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A binary that exits early closes its stdin: its exit status and
        // stderr below say why, so a broken pipe here is not the error.
        if let Err(e) = stdin.write_all(turn_lines(turns).as_bytes()) {
            eprintln!("note: eonyx stopped reading its stdin early ({e})");
        }
    }
    let started = Instant::now();
    let limit = Duration::from_secs(20 * 60);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
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
    let report = compaction_report(&entries, u64::from(ctx()), &tokens);
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

/// What [`compaction_report`] found: lines to print, failed checks.
struct Report {
    lines: Vec<String>,
    failed: usize,
}

/// The trigger eonyx computes for this window with default compaction
/// settings and the e2e config's `max_output_tokens` (docs/compaction.md#trigger:
/// `min(threshold% × window, window − headroom)`, headroom = buffer capped
/// at a quarter of the window, never below the output cap).
fn default_trigger(window: u64) -> u64 {
    let cfg = eonyx_core::CompactionConfig::default();
    let out = 128u64.min(window / 2);
    let headroom = cfg.buffer_tokens.min(window / 4).max(out);
    let by_pct = (window as f64 * cfg.threshold_percent / 100.0).round() as u64;
    by_pct.min(window.saturating_sub(headroom))
}

pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Per compaction: the summarizer's cache reuse
/// (`cache_n / (cache_n + prompt_n)`) and the prefill it adds over a steady
/// turn (the summarizer's own prefill plus what the first request after it
/// prefills beyond a steady turn, in steady turns: tokens and, when the
/// server reports it, time). Then the standing guarantees: peak request
/// within 3 points of the trigger, ≥ 95% reuse between compactions, no
/// unrecovered 400.
fn compaction_report(
    entries: &[Entry],
    window: u64,
    tokens: &dyn Fn(&str) -> Option<u64>,
) -> Report {
    let mut lines = Vec::new();
    let mut checks: Vec<(bool, String)> = Vec::new();
    let mut check = |ok: bool, what: String| checks.push((ok, what));
    let chat: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.method == "POST" && e.status == 200)
        .collect();
    // Steady turns: turn requests after the first, not right after a
    // compaction (or an overflow), with timings.
    let mut steady_tokens = Vec::new();
    let mut steady_ms = Vec::new();
    let (mut between_cached, mut between_total) = (0u64, 0u64);
    for (i, e) in chat.iter().enumerate() {
        if e.summarizer || i == 0 || chat[i - 1].summarizer {
            continue;
        }
        let (Some(p), Some(c)) = (e.prompt_n, e.cache_n) else {
            continue;
        };
        between_cached += c;
        between_total += c + p;
        steady_tokens.push(p as f64);
        if let Some(ms) = e.prompt_ms {
            steady_ms.push(ms);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let steady_t = median(&mut steady_tokens).max(1.0);
    let steady_ms = median(&mut steady_ms);
    lines.push(format!(
        "steady turn: {steady_t:.0} prompt tokens prefilled (median){}",
        if steady_ms > 0.0 {
            format!(", {:.0} ms", steady_ms)
        } else {
            String::new()
        }
    ));
    let mut n = 0;
    let mut worst_reuse: f64 = 100.0;
    let mut worst_turns: f64 = 0.0;
    // One compaction is a run of consecutive summarizer requests (the first
    // attempt, then e.g. the retry when a summary was cut at its cap),
    // followed by the first turn request after it.
    let mut i = 0;
    while i < chat.len() {
        if !chat[i].summarizer {
            i += 1;
            continue;
        }
        let first = i;
        while i < chat.len() && chat[i].summarizer {
            i += 1;
        }
        let attempts = &chat[first..i];
        let e = attempts[0];
        n += 1;
        let (p, c) = (e.prompt_n.unwrap_or(0), e.cache_n.unwrap_or(0));
        let reuse = pct(c, c + p);
        let summ_p: u64 = attempts.iter().map(|a| a.prompt_n.unwrap_or(0)).sum();
        let after = chat.get(i);
        let after_p = after.and_then(|a| a.prompt_n).unwrap_or(0);
        let extra_tokens = summ_p as f64 + (after_p as f64 - steady_t).max(0.0);
        let turns = extra_tokens / steady_t;
        let summ_ms: Option<f64> = attempts.iter().map(|a| a.prompt_ms).sum();
        let ms = match (summ_ms, after.and_then(|a| a.prompt_ms)) {
            (Some(s), Some(a)) if steady_ms > 0.0 => {
                let extra = s + (a - steady_ms).max(0.0);
                format!(
                    ", {extra:.0} ms = {:.1} steady turns by time",
                    extra / steady_ms
                )
            }
            _ => String::new(),
        };
        worst_reuse = worst_reuse.min(reuse);
        worst_turns = worst_turns.max(turns);
        // The stable prefix (context files, memory, tools... through the
        // date line) must come from the cache in the first request after.
        if let Some(a) = after
            && let (Some(text), Some(c)) = (a.stable_prefix.as_deref(), a.cache_n)
        {
            match tokens(text) {
                Some(t) => check(
                    c >= t,
                    format!(
                        "compaction {n}: the first request after it reuses the stable prefix through the date line ({c} cached >= {t} prefix tokens)"
                    ),
                ),
                None => lines.push(format!(
                    "compaction {n}: could not tokenize the stable prefix to check its reuse"
                )),
            }
        }
        lines.push(format!(
            "compaction {n} ({}): summarizer reuse {reuse:.0}% ({c} cached of {}); adds {extra_tokens:.0} prefill tokens (summarizer {summ_p} in {} request(s), first request after it {after_p}) = {turns:.1} steady turns{ms}",
            if e.shared { "shared-prefix" } else { "transcript" },
            c + p,
            attempts.len()
        ));
        // The two parts have different causes: the summarizer's own prefill
        // is what the request shape decides; the first request after it must
        // prefill the new summary and the kept turns behind it (the summary
        // precedes the retained messages, docs/prompt.md#the-request), which no prefix
        // cache can hold.
        lines.push(format!(
            "  of which: summarizer {:.1} steady turns; new summary + kept turns in the first request after it {:.1} steady turns",
            summ_p as f64 / steady_t,
            (after_p as f64 - steady_t).max(0.0) / steady_t
        ));
    }
    let shared = chat
        .iter()
        .enumerate()
        .filter(|(i, e)| e.shared && (*i == 0 || !chat[i - 1].summarizer))
        .count();
    if n > 0 {
        lines.push(format!(
            "{shared} of {n} compactions used the shared-prefix summarizer"
        ));
        check(
            worst_reuse >= 90.0,
            format!("summarizer cache reuse >= 90% (worst {worst_reuse:.0}%)"),
        );
        check(
            worst_turns <= 6.0,
            format!("extra prefill per compaction <= 6 steady turns (worst {worst_turns:.1})"),
        );
    }
    let trigger = default_trigger(window);
    let peak = chat
        .iter()
        .filter(|e| !e.summarizer)
        .filter_map(|e| Some(e.prompt_n? + e.cache_n?))
        .max()
        .unwrap_or(0);
    check(
        pct(peak, window) <= pct(trigger, window) + 3.0,
        format!(
            "peak turn request {peak} tokens = {:.1}% of {window}, trigger {:.1}% (within 3 points)",
            pct(peak, window),
            pct(trigger, window)
        ),
    );
    check(
        pct(between_cached, between_total) >= 95.0,
        format!(
            "reuse between compactions >= 95% ({:.1}%: {between_cached} of {between_total})",
            pct(between_cached, between_total)
        ),
    );
    let posts: Vec<&Entry> = entries.iter().filter(|e| e.method == "POST").collect();
    let unrecovered = posts
        .iter()
        .enumerate()
        .filter(|(i, e)| e.status == 400 && !posts[i + 1..].iter().any(|l| l.status == 200))
        .count();
    let bad = posts.iter().filter(|e| e.status == 400).count();
    check(
        unrecovered == 0,
        format!("no unrecovered 400 ({bad} answered 400, {unrecovered} unrecovered)"),
    );
    let failed = checks.iter().filter(|(ok, _)| !ok).count();
    for (ok, what) in checks {
        lines.push(format!("{}  {what}", if ok { "PASS" } else { "FAIL" }));
    }
    Report { lines, failed }
}

fn print_table(entries: &[Entry]) {
    println!(
        "{:>4}  {:<6} {:<22} {:>6} {:>5} {:>9} {:>7} {:>7}",
        "#", "kind", "path", "status", "msgs", "prompt_n", "cache_n", "hit"
    );
    for (i, e) in entries.iter().enumerate() {
        let kind = if e.summarizer {
            "summ"
        } else if e.method == "GET" {
            "probe"
        } else {
            "turn"
        };
        let hit = match (e.cache_n, e.prompt_n) {
            (Some(c), Some(p)) if c + p > 0 => format!("{:.0}%", 100.0 * c as f64 / (c + p) as f64),
            _ => "-".into(),
        };
        let opt = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        println!(
            "{:>4}  {:<6} {:<22} {:>6} {:>5} {:>9} {:>7} {:>7}",
            i + 1,
            kind,
            e.path,
            e.status,
            e.messages,
            opt(e.prompt_n),
            opt(e.cache_n),
            hit
        );
    }
    let (cached, total) = entries
        .iter()
        .filter(|e| !e.summarizer && e.method == "POST")
        .skip(1)
        .filter_map(|e| Some((e.cache_n?, e.cache_n? + e.prompt_n?)))
        .fold((0, 0), |(c, t), (ec, et)| (c + ec, t + et));
    if total > 0 {
        println!(
            "prompt cache over turn requests after the first: {cached} of {total} prompt tokens cached ({:.0}%)",
            100.0 * cached as f64 / total as f64
        );
    }
}

/// (compaction records, their triggers, message records) over every session file.
fn session_stats(dir: &std::path::Path) -> (usize, Vec<String>, usize) {
    let mut compactions = 0;
    let mut triggers = Vec::new();
    let mut messages = 0;
    let Ok(read) = std::fs::read_dir(dir) else {
        return (0, triggers, 0);
    };
    for entry in read.flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            match v["type"].as_str() {
                Some("compaction") => {
                    compactions += 1;
                    triggers.push(v["trigger"].as_str().unwrap_or("?").to_owned());
                }
                Some("message") => messages += 1,
                _ => {}
            }
        }
    }
    (compactions, triggers, messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_tests::{FakeServer, OverflowFlavor, Reply};

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
