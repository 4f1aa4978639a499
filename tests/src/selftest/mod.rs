//! Tests of the fake server itself, over real HTTP on loopback.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::{HttpResponse, get, post_json};
use crate::{FakeServer, OverflowFlavor, Reply, UsageOverride, count_prompt_tokens};

mod checks;

fn openai_body(stream: bool, user: &str) -> Value {
    json!({
        "model": "fake-model",
        "stream": stream,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": user},
        ],
    })
}

fn anthropic_body(stream: bool, user: &str) -> Value {
    json!({
        "model": "fake-model",
        "max_tokens": 64,
        "stream": stream,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}],
    })
}

fn chat(server: &FakeServer, body: &Value) -> HttpResponse {
    post_json(
        &format!("{}/chat/completions", server.base_url()),
        body,
        &[],
    )
    .unwrap()
}

fn messages(server: &FakeServer, body: &Value) -> HttpResponse {
    post_json(&format!("{}/messages", server.base_url()), body, &[]).unwrap()
}

fn content(r: &HttpResponse) -> Value {
    r.json().unwrap()["choices"][0]["message"].clone()
}

/// Concatenated `delta.content` of an OpenAI stream.
fn streamed_text(r: &HttpResponse) -> String {
    r.sse_json()
        .iter()
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect()
}

#[test]
fn scripted_replies_come_in_order_then_the_default() {
    let server = FakeServer::start();
    server
        .push(Reply::text("first answer"))
        .push(Reply::tool_call(
            "read_file",
            json!({"path": "src/main.rs"}),
        ));
    let r = chat(&server, &openai_body(false, "one"));
    assert_eq!(r.status, 200);
    assert_eq!(content(&r)["content"], "first answer");
    let r = chat(&server, &openai_body(false, "two"));
    let msg = content(&r);
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "read_file");
    let args: Value = serde_json::from_str(
        msg["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"path": "src/main.rs"}));
    assert_eq!(
        r.json().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    let r = chat(&server, &openai_body(false, "three"));
    assert_eq!(content(&r)["content"], "ok");
    server.set_default_reply(Reply::echo());
    let r = chat(&server, &openai_body(false, "say this back"));
    assert_eq!(content(&r)["content"], "say this back");
    assert_eq!(server.pending(), 0);
}

#[test]
fn a_held_reply_waits_for_the_other_requests_it_names() {
    let server = FakeServer::start();
    server.set_responder(|r| {
        let user = r.last_user_text().unwrap_or_default();
        Some(Reply::text(format!("answer to {user}")).hold_until(2))
    });
    let url = format!("{}/chat/completions", server.base_url());
    let first = {
        let url = url.clone();
        std::thread::spawn(move || post_json(&url, &openai_body(false, "one"), &[]).unwrap())
    };
    // The first request is held: nothing has answered it while only one
    // request has arrived.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.chat_requests().is_empty() {
        assert!(Instant::now() < deadline, "the first request never arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!first.is_finished(), "answered before the second request");
    let second = post_json(&url, &openai_body(false, "two"), &[]).unwrap();
    assert_eq!(content(&second)["content"], "answer to two");
    assert_eq!(content(&first.join().unwrap())["content"], "answer to one");
}

#[test]
fn openai_stream_carries_text_tool_deltas_and_usage_in_the_last_chunk() {
    let server = FakeServer::start();
    server.push(Reply::text("hello streaming world"));
    let body = openai_body(true, "hi");
    let r = chat(&server, &body);
    assert!(r.complete);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(streamed_text(&r), "hello streaming world");
    assert_eq!(r.sse_data().last().map(String::as_str), Some("[DONE]"));
    let chunks = r.sse_json();
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], count_prompt_tokens(&body));
    assert_eq!(last["usage"]["completion_tokens"], 7); // 21 chars / 3

    // Without include_usage there is no usage chunk.
    let mut body = openai_body(true, "hi");
    body["stream_options"] = json!({});
    let r = chat(&server, &body);
    assert!(r.sse_json().iter().all(|c| c.get("usage").is_none()));

    // Two tool calls, arguments split over several deltas.
    server.push(
        Reply::tool_calls([
            ("grep", json!({"pattern": "fn main"})),
            ("list_dir", json!({})),
        ])
        .with_text("Looking."),
    );
    let r = chat(&server, &openai_body(true, "find"));
    let mut args = [String::new(), String::new()];
    let mut names = Vec::new();
    for c in r.sse_json() {
        for tc in c
            .pointer("/choices/0/delta/tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(n) = tc.pointer("/function/name").and_then(Value::as_str) {
                names.push(n.to_owned());
            }
            args[i].push_str(
                tc.pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
        }
    }
    assert_eq!(streamed_text(&r), "Looking.");
    assert_eq!(names, ["grep", "list_dir"]);
    assert_eq!(
        serde_json::from_str::<Value>(&args[0]).unwrap(),
        json!({"pattern": "fn main"})
    );
    assert_eq!(args[1], "{}");
}

#[test]
fn anthropic_stream_follows_the_event_sequence() {
    let server = FakeServer::start();
    server.push(Reply::text("hi there"));
    let body = anthropic_body(true, "hello");
    let r = messages(&server, &body);
    let events: Vec<&str> = r
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        events,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let data = r.sse_json();
    let text: String = data
        .iter()
        .filter_map(|d| d.pointer("/delta/text").and_then(Value::as_str))
        .collect();
    assert_eq!(text, "hi there");
    let usage = &data[0]["message"]["usage"];
    assert_eq!(
        usage["input_tokens"].as_u64().unwrap()
            + usage["cache_read_input_tokens"].as_u64().unwrap(),
        count_prompt_tokens(&body)
    );
    assert_eq!(data[6]["delta"]["stop_reason"], "end_turn");
    assert_eq!(data[6]["usage"]["output_tokens"], 3);

    // Tool use, streamed and not.
    server.push(Reply::tool_call("shell", json!({"command": "ls"})));
    let r = messages(&server, &anthropic_body(true, "run"));
    let partial: String = r
        .sse_json()
        .iter()
        .filter_map(|d| d.pointer("/delta/partial_json").and_then(Value::as_str))
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({"command": "ls"})
    );
    assert!(r.body.contains("\"stop_reason\":\"tool_use\""));
    server.push(Reply::tool_call("shell", json!({"command": "ls"})));
    let v = messages(&server, &anthropic_body(false, "run"))
        .json()
        .unwrap();
    assert_eq!(v["content"][0]["type"], "tool_use");
    assert_eq!(v["content"][0]["input"], json!({"command": "ls"}));
    assert_eq!(v["stop_reason"], "tool_use");
}

#[test]
fn usage_reports_a_prompt_cache_hit_only_for_a_shared_prefix() {
    let server = FakeServer::start();
    let first = openai_body(false, "tell me about the weather in a long sentence");
    let r = chat(&server, &first);
    assert_eq!(
        r.json().unwrap()["usage"]["prompt_tokens_details"]["cached_tokens"],
        0
    );
    let mut second = first.clone();
    second["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "user", "content": "more"}),
    ]);
    let usage = chat(&server, &second).json().unwrap()["usage"].clone();
    let cached = usage["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(cached > 15, "cached {cached}");
    assert!(cached < usage["prompt_tokens"].as_u64().unwrap());
    let unrelated = json!({"model": "m", "messages": [{"role": "user", "content": "zzz"}]});
    let usage = chat(&server, &unrelated).json().unwrap()["usage"].clone();
    assert!(
        usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            < 5
    );

    // Overrides replace the fake's figures; without_usage drops usage.
    server.push(Reply::text("x").with_usage(UsageOverride {
        prompt_tokens: Some(1000),
        completion_tokens: Some(7),
        cached_tokens: Some(900),
    }));
    let usage = chat(&server, &first).json().unwrap()["usage"].clone();
    assert_eq!(
        (
            usage["prompt_tokens"].clone(),
            usage["completion_tokens"].clone(),
            usage["prompt_tokens_details"]["cached_tokens"].clone()
        ),
        (json!(1000), json!(7), json!(900))
    );
    server.push(Reply::text("x").without_usage());
    assert!(chat(&server, &first).json().unwrap().get("usage").is_none());
}

#[test]
fn over_window_requests_get_each_providers_overflow_error_and_keep_the_queue() {
    let server = FakeServer::start();
    server
        .set_context_window(Some(20))
        .push(Reply::text("after compaction"));
    let big = openai_body(false, &"word ".repeat(40));
    let tokens = count_prompt_tokens(&big);

    let r = chat(&server, &big);
    assert_eq!(r.status, 400);
    let e = r.json().unwrap()["error"].clone();
    assert_eq!(e["code"], "context_length_exceeded");
    assert_eq!(e["type"], "invalid_request_error");
    assert_eq!(
        e["message"].as_str().unwrap(),
        format!(
            "This model's maximum context length is 20 tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."
        )
    );

    server.set_overflow_flavor(OverflowFlavor::LlamaCpp);
    let e = chat(&server, &big).json().unwrap();
    assert_eq!(
        e,
        json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": 20}})
    );

    let big = anthropic_body(false, &"word ".repeat(40));
    let tokens = count_prompt_tokens(&big);
    let r = messages(&server, &big);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json().unwrap(),
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > 20 maximum")}})
    );

    assert_eq!(server.pending(), 1);
    let small = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let r = chat(&server, &small).json().unwrap();
    assert_eq!(r["choices"][0]["message"]["content"], "after compaction");
    // llama.cpp flavour: `timings` split the prompt into cached and processed.
    let t = &r["timings"];
    assert_eq!(
        t["prompt_n"].as_u64().unwrap() + t["cache_n"].as_u64().unwrap(),
        r["usage"]["prompt_tokens"].as_u64().unwrap()
    );
    server.set_overflow_flavor(OverflowFlavor::OpenAi);
    assert!(
        chat(&server, &small)
            .json()
            .unwrap()
            .get("timings")
            .is_none()
    );
}

#[test]
fn faults_rate_limit_server_error_reset_malformed_and_delay() {
    let server = FakeServer::start();
    server.push_all([
        Reply::rate_limited(7),
        Reply::server_error(),
        Reply::error(503, r#"{"error":"custom"}"#).with_header("x-custom", "1"),
    ]);
    let r = chat(&server, &openai_body(true, "a"));
    assert_eq!((r.status, r.header("retry-after")), (429, Some("7")));
    assert_eq!(r.json().unwrap()["error"]["code"], "rate_limit_exceeded");
    let r = messages(&server, &anthropic_body(true, "a"));
    assert_eq!(r.status, 500);
    assert_eq!(r.json().unwrap()["error"]["type"], "api_error");
    let r = chat(&server, &openai_body(false, "a"));
    assert_eq!(
        (r.status, r.body.as_str(), r.header("x-custom")),
        (503, r#"{"error":"custom"}"#, Some("1"))
    );

    // Reset after two events: the client got them, then the body ends unfinished.
    server.push(Reply::text("one two three four five").reset_after(2));
    let r = chat(&server, &openai_body(true, "a"));
    assert_eq!(r.status, 200);
    assert!(!r.complete, "the stream must end abnormally");
    assert_eq!(r.sse_data().len(), 2);
    assert!(!r.sse_data().iter().any(|d| d == "[DONE]"));
    server.push(Reply::text("whole body").reset_after(0));
    let r = chat(&server, &openai_body(false, "a"));
    assert!(!r.complete);
    assert!(r.json().is_none());

    // Malformed SSE: some data lines are not JSON.
    server.push(Reply::malformed());
    let r = chat(&server, &openai_body(true, "a"));
    assert_eq!(r.status, 200);
    assert!(
        r.sse_data()
            .iter()
            .any(|d| d != "[DONE]" && serde_json::from_str::<Value>(d).is_err())
    );
    server.push(Reply::malformed());
    let r = messages(&server, &anthropic_body(true, "a"));
    assert!(
        r.sse_data()
            .iter()
            .any(|d| serde_json::from_str::<Value>(d).is_err())
    );

    // Delays: before the first byte and between chunks (lower bounds only).
    server.push(Reply::text("slow").with_delay(Duration::from_millis(150)));
    let t = Instant::now();
    let r = chat(&server, &openai_body(false, "a"));
    assert!(t.elapsed() >= Duration::from_millis(150));
    assert_eq!(content(&r)["content"], "slow");
    server.push(Reply::text("a b c").with_chunk_delay(Duration::from_millis(40)));
    let t = Instant::now();
    let r = chat(&server, &openai_body(true, "a"));
    // 1 role chunk + 3 text + finish + usage + [DONE] = 7 events, 6 waits.
    assert!(t.elapsed() >= Duration::from_millis(240));
    assert_eq!(streamed_text(&r), "a b c");
}
