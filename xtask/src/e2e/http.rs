//! The HTTP-level checks of `cargo xtask e2e`, against llama-server's
//! `/v1/chat/completions` and `/v1/messages`: a streamed reply with usage,
//! an over-window request read as a context overflow, the prompt cache.

use anyhow::{Context, Result, bail};
use eonyx_tests::http::{HttpResponse, post_json};
use serde_json::{Value, json};

use crate::local_model::MODEL_NAME;

use super::ctx;

pub(super) fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn post(url: &str, body: &Value) -> Result<HttpResponse> {
    post_json(
        url,
        body,
        &[("x-api-key", "none"), ("Authorization", "Bearer none")],
    )
    .with_context(|| format!("POST {url}"))
}

fn expect_ok(r: &HttpResponse) -> Result<()> {
    if r.status != 200 {
        bail!(
            "HTTP {}: {}",
            r.status,
            r.body.chars().take(300).collect::<String>()
        );
    }
    if !r.complete {
        bail!("the response ended before it was complete");
    }
    Ok(())
}

pub(super) fn openai_stream(root: &str) -> Result<String> {
    let r = post(
        &format!("{root}/v1/chat/completions"),
        &json!({"model": MODEL_NAME, "stream": true, "stream_options": {"include_usage": true},
            "max_tokens": 24, "temperature": 0,
            "messages": [user("Write one sentence about the sea.")]}),
    )?;
    expect_ok(&r)?;
    let chunks = r.sse_json();
    let text: String = chunks
        .iter()
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect();
    let usage = chunks
        .iter()
        .rev()
        .find_map(|c| c.get("usage").filter(|u| !u.is_null()))
        .context("no usage chunk in the stream")?;
    let prompt = usage["prompt_tokens"].as_u64().unwrap_or(0);
    let completion = usage["completion_tokens"].as_u64().unwrap_or(0);
    if text.is_empty() || prompt == 0 || completion == 0 {
        bail!("text {:?}, usage {usage}", text);
    }
    if r.sse_data().last().map(String::as_str) != Some("[DONE]") {
        bail!("the stream did not end with [DONE]");
    }
    Ok(format!(
        "{} chunks, {} chars, prompt {prompt} / completion {completion} tokens",
        chunks.len(),
        text.chars().count()
    ))
}

pub(super) fn anthropic_stream(root: &str) -> Result<String> {
    let r = post(
        &format!("{root}/v1/messages"),
        &json!({"model": MODEL_NAME, "stream": true, "max_tokens": 24, "temperature": 0,
            "system": [{"type": "text", "text": "You write short sentences."}],
            "messages": [user("Write one sentence about the sea.")]}),
    )?;
    expect_ok(&r)?;
    let events: Vec<&str> = r
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("event:").map(str::trim))
        .collect();
    for needed in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ] {
        if !events.contains(&needed) {
            bail!("no `{needed}` event (saw {events:?})");
        }
    }
    let data = r.sse_json();
    let text: String = data
        .iter()
        .filter_map(|d| d.pointer("/delta/text").and_then(Value::as_str))
        .collect();
    let input = data
        .iter()
        .find_map(|d| {
            d.pointer("/message/usage/input_tokens")
                .and_then(Value::as_u64)
        })
        .unwrap_or(0);
    let output = data
        .iter()
        .rev()
        .find_map(|d| d.pointer("/usage/output_tokens").and_then(Value::as_u64))
        .unwrap_or(0);
    if text.is_empty() || output == 0 {
        bail!("text {text:?}, input {input}, output {output}");
    }
    Ok(format!(
        "{} events, {} chars, input {input} / output {output} tokens",
        events.len(),
        text.chars().count()
    ))
}

/// The context-overflow classification the provider crate applies, on the
/// raw response: `(prompt tokens, limit)` when it is an overflow.
pub(super) fn overflow_figures(r: &HttpResponse) -> Option<(Option<u64>, Option<u64>)> {
    let v = r.json().unwrap_or(Value::Null);
    let e = v.get("error").cloned().unwrap_or(Value::Null);
    let message = e["message"].as_str().unwrap_or("");
    let is_overflow = r.status == 413
        || e["type"] == "exceed_context_size_error"
        || e["code"] == "context_length_exceeded"
        || message.contains("prompt is too long")
        || message.contains("exceeds the available context size")
        || message.contains("maximum context length");
    if !is_overflow || r.status < 400 {
        return None;
    }
    let mut prompt = e["n_prompt_tokens"].as_u64();
    let mut limit = e["n_ctx"].as_u64();
    if let Some(rest) = message.split("prompt is too long: ").nth(1) {
        // "prompt is too long: M tokens > N maximum"
        let nums: Vec<u64> = rest
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|s| s.parse().ok())
            .collect();
        prompt = prompt.or(nums.first().copied());
        limit = limit.or(nums.get(1).copied());
    }
    Some((prompt, limit))
}

pub(super) fn overflow(root: &str, anthropic: bool) -> Result<String> {
    let long = "The quick brown fox jumps over the lazy dog. ".repeat(ctx() as usize / 5);
    let (url, body) = if anthropic {
        (
            format!("{root}/v1/messages"),
            json!({"model": MODEL_NAME, "max_tokens": 8, "stream": true, "messages": [user(&long)]}),
        )
    } else {
        (
            format!("{root}/v1/chat/completions"),
            json!({"model": MODEL_NAME, "max_tokens": 8, "stream": true, "messages": [user(&long)]}),
        )
    };
    let r = post(&url, &body)?;
    let Some((prompt, limit)) = overflow_figures(&r) else {
        bail!(
            "not recognised as a context overflow: HTTP {} {}",
            r.status,
            r.body.chars().take(300).collect::<String>()
        );
    };
    match (prompt, limit) {
        (Some(p), Some(l)) if l == u64::from(ctx()) && p > l => {
            Ok(format!("HTTP {}: {p} prompt tokens > n_ctx {l}", r.status))
        }
        _ => bail!(
            "overflow without the server's figures (prompt {prompt:?}, limit {limit:?}): {}",
            r.body.chars().take(300).collect::<String>()
        ),
    }
}

/// Cached tokens of a non-streamed response: llama.cpp `timings.cache_n`,
/// else OpenAI `prompt_tokens_details.cached_tokens`, else Anthropic
/// `cache_read_input_tokens`.
fn cached_of(v: &Value) -> Option<u64> {
    v.pointer("/timings/cache_n")
        .or_else(|| v.pointer("/usage/prompt_tokens_details/cached_tokens"))
        .or_else(|| v.pointer("/usage/cache_read_input_tokens"))
        .and_then(Value::as_u64)
}

pub(super) fn cache(root: &str, anthropic: bool) -> Result<String> {
    let system = format!(
        "You are a careful assistant for the eonyx e2e check ({}). {}",
        if anthropic { "anthropic" } else { "openai" },
        "Answer briefly and stay on topic. ".repeat(30)
    );
    let first = vec![user("Name a colour.")];
    let mut second = first.clone();
    second.push(json!({"role": "assistant", "content": "Blue."}));
    second.push(user("Name another colour."));
    let send = |messages: &[Value]| -> Result<Value> {
        let (url, body) = if anthropic {
            (
                format!("{root}/v1/messages"),
                json!({"model": MODEL_NAME, "max_tokens": 8, "temperature": 0,
                    "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                    "messages": messages}),
            )
        } else {
            let mut all = vec![json!({"role": "system", "content": system})];
            all.extend_from_slice(messages);
            (
                format!("{root}/v1/chat/completions"),
                json!({"model": MODEL_NAME, "max_tokens": 8, "temperature": 0, "messages": all}),
            )
        };
        let r = post(&url, &body)?;
        expect_ok(&r)?;
        r.json().context("the response is not JSON")
    };
    let a = send(&first)?;
    let b = send(&second)?;
    let cached = cached_of(&b).with_context(|| format!("no cache figure in {b}"))?;
    if cached == 0 {
        bail!("the second request reports 0 cached tokens: {}", b["usage"]);
    }
    Ok(format!(
        "first cached {}, second cached {cached} (usage {})",
        cached_of(&a).unwrap_or(0),
        b["usage"]
    ))
}

/// The shared-prefix summarizer request on the wire: a conversation with
/// tools, then the same request plus one instruction with tool use off
/// (`tool_choice: "none"` for Chat Completions; Anthropic keeps its tools
/// and moves the breakpoint). Needs ≥ 90% of its prompt from the cache.
pub(super) fn summarizer_reuse(root: &str, anthropic: bool) -> Result<String> {
    let system = format!(
        "You are eonyx, a coding agent ({}). {}",
        if anthropic { "anthropic" } else { "openai" },
        "Read files before you change them. ".repeat(40)
    );
    let tool = json!({"name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}});
    let mut convo = Vec::new();
    for i in 0..6 {
        convo.push(user(&format!(
            "Turn {i}: remember that code word {i} is {}.",
            i * 7
        )));
        convo.push(
            json!({"role": "assistant", "content": format!("Noted: code word {i} is {}.", i * 7)}),
        );
    }
    convo.push(user("Now list the code words."));
    let instruction = user(
        "[eonyx compaction] Pause the task and reply with text only: do not call any tool. \
         Write the handoff summary of everything before this message.",
    );
    let send = |messages: &[Value], summarize: bool| -> Result<Value> {
        let (url, body) = if anthropic {
            let mut msgs = messages.to_vec();
            // The breakpoint on the conversation's last message.
            let at = if summarize {
                msgs.len() - 2
            } else {
                msgs.len() - 1
            };
            let text = msgs[at]["content"].as_str().unwrap_or_default().to_owned();
            msgs[at]["content"] =
                json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]);
            (
                format!("{root}/v1/messages"),
                json!({"model": MODEL_NAME, "max_tokens": 8, "temperature": 0,
                    "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                    "tools": [{"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}],
                    "messages": msgs}),
            )
        } else {
            let mut all = vec![json!({"role": "system", "content": system})];
            all.extend_from_slice(messages);
            let mut body = json!({"model": MODEL_NAME, "max_tokens": 8, "temperature": 0,
                "messages": all, "tools": [{"type": "function", "function": tool}]});
            if summarize {
                body["tool_choice"] = json!("none");
            }
            (format!("{root}/v1/chat/completions"), body)
        };
        let r = post(&url, &body)?;
        expect_ok(&r)?;
        r.json().context("the response is not JSON")
    };
    send(&convo, false)?;
    let mut with_instruction = convo.clone();
    with_instruction.push(instruction);
    let b = send(&with_instruction, true)?;
    let cached = b
        .pointer("/timings/cache_n")
        .or_else(|| b.pointer("/usage/cache_read_input_tokens"))
        .and_then(Value::as_u64);
    let prompt = b
        .pointer("/timings/prompt_n")
        .or_else(|| b.pointer("/usage/input_tokens"))
        .and_then(Value::as_u64);
    let (Some(c), Some(p)) = (cached, prompt) else {
        bail!("no timings in {b}");
    };
    let reuse = super::pct(c, c + p);
    if reuse < 90.0 {
        bail!(
            "only {reuse:.0}% of the summarizer prompt came from the cache ({c} of {})",
            c + p
        );
    }
    Ok(format!("{reuse:.0}% reused ({c} cached, {p} prefilled)"))
}

/// How many tokens llama-server's tokenizer makes of `text` (`/tokenize`,
/// without special tokens).
pub(super) fn count_tokens(root: &str, text: &str) -> Result<u64> {
    let r = post(&format!("{root}/tokenize"), &json!({ "content": text }))?;
    expect_ok(&r)?;
    let v: Value = serde_json::from_str(&r.body).context("reading the /tokenize reply")?;
    v["tokens"]
        .as_array()
        .map(|t| t.len() as u64)
        .context("the /tokenize reply has no `tokens` array")
}
