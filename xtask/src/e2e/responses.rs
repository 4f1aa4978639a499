//! The Responses stage of `cargo xtask e2e` (`--responses-turns N`, 0 skips
//! it; `--responses-only`): eonyx with `api = "responses"` against
//! llama-server's `POST /v1/responses`, through the logging proxy.
//!
//! 1. Two turns of one session: every request goes to `/v1/responses`, and
//!    the second request's cached tokens (as eonyx recorded the server's
//!    `input_tokens_details.cached_tokens`) are at least 80% of the first
//!    request's input: the input is append-only, so the server's prompt
//!    cache holds.
//! 2. A batch of N turns on the same wire with the binary stage's
//!    compaction setup: at least one compaction, the summarizer's request
//!    on `/v1/responses` too, and the compaction-cost checks of the binary
//!    stage (`report::compaction_report`: summarizer reuse, extra prefill,
//!    peak against the trigger, reuse between compactions).
//! 3. Native compaction asked of a server without a compact call
//!    (docs/compaction.md#native-compaction): with `compaction_native =
//!    "auto"`, the first `/compact` calls `/v1/responses/compact` once,
//!    llama-server refuses it, the compaction is eonyx's own, the batch
//!    succeeds, stderr says so once, `limits.json` remembers it and the
//!    second `/compact` does not call it again.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::proxy::{Entry, start_proxy};
use super::report::{compaction_report, print_table, session_stats};
use super::setup::{Setup, turn_lines};
use super::{ctx, http};
use crate::util;

/// `config` with the model on the Responses API.
fn on_responses(config: &str) -> String {
    config.replacen(
        "provider = \"openai\"",
        "provider = \"openai\"\napi = \"responses\"",
        1,
    )
}

/// Run `bin` in batch mode in `env` with `lines`; fails with the end of its
/// stderr when it does not finish successfully within `limit`.
fn run_batch(
    bin: &Path,
    env: &eonyx_tests::TestEnv,
    lines: &str,
    limit: Duration,
) -> Result<Duration> {
    let stderr_path = env.home.join("eonyx.stderr");
    let mut child = env
        .command(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    if let Some(mut stdin) = child.stdin.take()
        && let Err(e) = stdin.write_all(lines.as_bytes())
    {
        eprintln!("note: eonyx stopped reading its stdin early ({e})");
    }
    let started = Instant::now();
    let status = crate::util::wait_or_kill(&mut child, limit)?;
    if !status.is_some_and(|s| s.success()) {
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "eonyx {}; last stderr lines:\n{}",
            match status {
                Some(s) => format!("exited with {s}"),
                None => format!("was killed after {}s", limit.as_secs()),
            },
            tail.join("\n")
        );
    }
    Ok(started.elapsed())
}

/// A fresh environment whose config is `config(proxy port)`, the model on
/// the Responses API.
fn prepare(
    server_port: u16,
    config: impl Fn(u16) -> String,
) -> Result<(eonyx_tests::TestEnv, super::proxy::Log)> {
    let (proxy_port, log) = start_proxy(server_port)?;
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    std::fs::create_dir_all(&env.config_dir)?;
    std::fs::write(
        env.config_dir.join("config.toml"),
        format!("{}\n", on_responses(&config(proxy_port))),
    )
    .context("writing the Responses stage's config")?;
    Ok((env, log))
}

/// The `usage` of every assistant message in the session files of `env`.
fn usages(env: &eonyx_tests::TestEnv) -> Vec<Value> {
    let Ok(read) = std::fs::read_dir(env.data_dir.join("sessions")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in read.flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["type"] == "message" && v["role"] == "assistant" && v["usage"].is_object() {
                out.push(v["usage"].clone());
            }
        }
    }
    out
}

/// Model requests that went to another wire than `/v1/responses` (the
/// window probes, `/props`, `/api/show`…, are not model requests).
fn off_wire(entries: &[Entry]) -> usize {
    entries
        .iter()
        .filter(|e| {
            e.method == "POST"
                && (e.path.ends_with("/chat/completions") || e.path.ends_with("/messages"))
        })
        .count()
}

/// Part 1: two turns, the second's cache against the first's input.
fn two_turns(bin: &Path, server_port: u16) -> Result<String> {
    let (env, log) = prepare(server_port, |port| {
        crate::local_model::config_snippet(port)
            .replace("max_output_tokens = 128", "max_output_tokens = 48")
    })?;
    run_batch(bin, &env, &turn_lines(2), Duration::from_secs(10 * 60))?;
    let entries = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if off_wire(&entries) > 0 {
        bail!(
            "{} request(s) did not go to /v1/responses",
            off_wire(&entries)
        );
    }
    let used = usages(&env);
    let [first, second] = used.as_slice() else {
        bail!(
            "expected two answers with usage, the session holds {}",
            used.len()
        );
    };
    let input = first["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = second["cached_tokens"].as_u64().unwrap_or(0);
    let share = super::pct(cached, input);
    let detail = format!(
        "second request: {cached} tokens cached, {share:.0}% of the first request's {input} input tokens; its input {}",
        second["prompt_tokens"]
    );
    if input == 0 || share < 80.0 {
        bail!("{detail}: below 80%");
    }
    Ok(detail)
}

/// Part 2: a compacting batch on the Responses wire; returns the failed
/// checks.
fn compacting(bin: &Path, server_port: u16, turns: usize, setup: &Setup) -> Result<usize> {
    let (env, log) = prepare(server_port, |port| setup.config(port))?;
    let lines: String = turn_lines(turns)
        .lines()
        .map(|l| format!("{}\n", setup.pad(l)))
        .collect();
    let took = run_batch(bin, &env, &lines, Duration::from_secs(20 * 60))?;
    let entries = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    print_table(&entries);
    let (compactions, triggers, messages) =
        session_stats(env.data_dir.join("sessions").as_std_path());
    let summarizer = entries.iter().filter(|e| e.summarizer).count();
    println!(
        "eonyx on /v1/responses: {turns} turns in {}; {messages} messages, {compactions} compaction(s) {triggers:?}; summarizer requests {summarizer}",
        util::human_duration(took)
    );
    let mut failed = 0;
    let mut check = |ok: bool, what: String| {
        println!("{}  responses: {what}", if ok { "PASS" } else { "FAIL" });
        failed += usize::from(!ok);
    };
    check(
        off_wire(&entries) == 0,
        format!(
            "every request on /v1/responses ({} elsewhere)",
            off_wire(&entries)
        ),
    );
    check(
        compactions > 0 && summarizer > 0,
        format!(
            "a compaction on this wire ({compactions} compaction(s), {summarizer} summarizer request(s))"
        ),
    );
    let root = format!("http://127.0.0.1:{server_port}");
    let tokens = |text: &str| http::count_tokens(&root, text).ok();
    let report = compaction_report(&entries, u64::from(ctx()), &tokens, setup);
    for line in &report.lines {
        println!("responses: {line}");
    }
    Ok(failed + report.failed)
}

/// Part 3: native compaction falls back on llama-server; returns the
/// failed checks.
fn native_fallback(bin: &Path, server_port: u16) -> Result<usize> {
    let (env, log) = prepare(server_port, |port| {
        format!(
            "{}\ncompaction_native = \"auto\"\n\n[models.local.compaction]\nkeep_turns = 1",
            crate::local_model::config_snippet(port)
                .replace("max_output_tokens = 128", "max_output_tokens = 48")
        )
    })?;
    let lines = format!(
        "{}/compact\nand one more question\n/compact\n",
        turn_lines(2)
    );
    run_batch(bin, &env, &lines, Duration::from_secs(10 * 60))?;
    let entries = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let compact: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.path.ends_with("/responses/compact"))
        .collect();
    let summarizer = entries.iter().filter(|e| e.summarizer).count();
    let stderr = std::fs::read_to_string(env.home.join("eonyx.stderr")).unwrap_or_default();
    let limits = std::fs::read_to_string(env.data_dir.join("limits.json")).unwrap_or_default();
    let (compactions, _, _) = session_stats(env.data_dir.join("sessions").as_std_path());
    let mut failed = 0;
    let mut check = |ok: bool, what: String| {
        println!("{}  responses: {what}", if ok { "PASS" } else { "FAIL" });
        failed += usize::from(!ok);
    };
    check(
        compact.len() == 1 && compact.iter().all(|e| e.status >= 400),
        format!(
            "native compaction asked once and refused (statuses {:?})",
            compact.iter().map(|e| e.status).collect::<Vec<_>>()
        ),
    );
    check(
        compactions == 2 && summarizer >= 2,
        format!(
            "both compactions by eonyx's own summarizer ({compactions} compaction(s), {summarizer} summarizer request(s))"
        ),
    );
    check(
        stderr.matches("native compaction failed").count() == 1,
        "one stderr line says it fell back".to_owned(),
    );
    check(
        limits.contains("no_native_compaction"),
        "limits.json remembers it for the base URL and model".to_owned(),
    );
    Ok(failed)
}

/// All three parts; returns the failed checks.
pub(super) fn responses_stage(
    bin: &Path,
    server_port: u16,
    turns: usize,
    setup: &Setup,
) -> Result<usize> {
    println!("== Responses stage: eonyx with api = \"responses\" on llama-server's /v1/responses");
    let mut failed = 0;
    match two_turns(bin, server_port) {
        Ok(detail) => println!(
            "PASS  {:<44} {detail}",
            "responses: two turns share the cache"
        ),
        Err(e) => {
            failed += 1;
            println!("FAIL  {:<44} {e:#}", "responses: two turns share the cache");
        }
    }
    failed += compacting(bin, server_port, turns, setup)?;
    failed += native_fallback(bin, server_port)?;
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use eonyx_tests::http::post_json;
    use eonyx_tests::{FakeServer, Reply};
    use serde_json::json;

    use super::*;

    #[test]
    fn the_proxy_reads_a_responses_streams_usage_as_prefill_and_cache() {
        let server = FakeServer::start();
        server
            .push(Reply::text("first"))
            .push(Reply::text("second"));
        let (port, log) = start_proxy(server.addr().port()).unwrap();
        let url = format!("http://127.0.0.1:{port}/v1/responses");
        let input =
            json!([{"role": "user", "content": [{"type": "input_text", "text": "a question"}]}]);
        let body = json!({"model": "m", "stream": true, "store": false, "input": input});
        for _ in 0..2 {
            assert_eq!(post_json(&url, &body, &[]).unwrap().status, 200);
        }
        let entries = log.lock().unwrap().clone();
        assert_eq!(entries.len(), 2);
        assert_eq!(off_wire(&entries), 0);
        let seen = server.chat_requests();
        for (e, r) in entries.iter().zip(&seen) {
            assert_eq!(e.prompt_n.unwrap() + e.cache_n.unwrap(), r.prompt_tokens);
        }
        // The same input again: the fake's cache serves it.
        assert!(entries[1].cache_n.unwrap() > 0, "{:?}", entries[1]);
        assert!(
            on_responses(&crate::local_model::config_snippet(1)).contains("api = \"responses\"")
        );
    }
}
