//! The logging reverse proxy of the binary stage: it sits between eonyx and
//! llama-server and records, per request, what the report needs (kind,
//! llama.cpp timings, overflow, the stable prefix of turn requests).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use eonyx_tests::RecordedRequest;
use eonyx_tests::http::parse_response;
use serde_json::Value;

use super::http::overflow_figures;

/// One request seen by the logging proxy.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) status: u16,
    pub(super) summarizer: bool,
    /// A shared-prefix summarizer request (the conversation plus one
    /// instruction), as opposed to a transcript one.
    pub(super) shared: bool,
    pub(super) messages: usize,
    pub(super) prompt_n: Option<u64>,
    pub(super) cache_n: Option<u64>,
    /// llama.cpp `timings.prompt_ms`: the prefill time.
    pub(super) prompt_ms: Option<f64>,
    /// llama.cpp `timings.predicted_n`: the tokens generated.
    pub(super) predicted_n: Option<u64>,
    pub(super) overflow: bool,
    /// A turn request's system prompt through the date line: the stable
    /// prefix a compaction must not move (docs/prompt.md#the-request).
    pub(super) stable_prefix: Option<String>,
    /// The request's `tools` array as sent (compact JSON), for the MCP
    /// stage's check that it never changes.
    pub(super) tools: String,
}

/// The system text through the end of its `Current date (UTC): …` line.
pub(super) fn stable_prefix(system: &str) -> Option<String> {
    let at = system.find("Current date (UTC): ")?;
    let end = system[at..].find('\n').map_or(system.len(), |n| at + n);
    Some(system[..end].to_owned())
}

pub(super) type Log = Arc<Mutex<Vec<Entry>>>;

/// The usage of a Responses API answer (streamed: its `response.completed`
/// event) as llama.cpp's `prompt_n` / `cache_n`.
fn responses_usage(r: &eonyx_tests::http::HttpResponse) -> Option<Value> {
    let usage = match r.json() {
        Some(v) => v.get("usage").cloned(),
        None => r
            .sse_json()
            .iter()
            .rev()
            .find_map(|e| e.pointer("/response/usage").cloned()),
    }?;
    let input = usage.get("input_tokens")?.as_u64()?;
    let cached = usage
        .pointer("/input_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(serde_json::json!({
        "prompt_n": input.saturating_sub(cached),
        "cache_n": cached,
    }))
}

/// A logging reverse proxy on 127.0.0.1:0 in front of llama-server: one
/// request per connection, bytes forwarded as they arrive (streams stay
/// streams), response timings recorded.
pub(super) fn start_proxy(upstream: u16) -> Result<(u16, Log)> {
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

pub(super) fn proxy_one(mut client: TcpStream, upstream: u16, log: &Log) -> Result<()> {
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
    // A Responses stream carries no llama.cpp `timings`: its usage gives
    // the same two figures (`input_tokens` less the cached ones prefilled).
    let timings = timings.or_else(|| parsed.as_ref().and_then(responses_usage));
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
        predicted_n: get("predicted_n"),
        overflow,
        stable_prefix: (!recorded.is_summarizer())
            .then(|| stable_prefix(&recorded.system_text()))
            .flatten(),
        tools: recorded
            .body
            .get("tools")
            .map(Value::to_string)
            .unwrap_or_default(),
    });
    // Close only after logging, so a client that saw the end sees the entry.
    let _ = client.shutdown(std::net::Shutdown::Both);
    Ok(())
}
