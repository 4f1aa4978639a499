//! The clients over real HTTP against a small scripted axum server on
//! loopback. Timing tests run on tokio's paused clock: no real waiting.
//!
//! The scripted server and the helpers are in `scripted.rs`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use eonyx_core::config::ProviderKind;
use eonyx_core::provider::ServerLimits;
use eonyx_core::{FinishReason, Provider, ProviderError, StreamEvent};
use eonyx_provider::{AnthropicProvider, OpenAiProvider, RetryPolicy};
use serde_json::Value;
use tokio::time::Instant;

use crate::scripted::{OK_STREAM, Reply, model, request, send, serve};

#[tokio::test]
async fn openai_streams_text_and_usage_with_bearer_auth() {
    let (url, fake) = serve(vec![(
        "/v1/chat/completions",
        vec![Reply::Sse(OK_STREAM.into())],
    )])
    .await;
    let p = OpenAiProvider::new(
        model(ProviderKind::Openai, format!("{url}/v1")),
        Some("sk-test-key".into()),
    )
    .unwrap();
    let mut events = Vec::new();
    let r = p.send(&request(), &mut |e| events.push(e)).await.unwrap();
    assert_eq!(r.message.content.text(), "Hello");
    assert_eq!(r.usage.unwrap().cached_tokens, 16);
    assert_eq!(r.finish_reason, Some(FinishReason::Stop));
    assert_eq!(events[0], StreamEvent::TextDelta("Hel".into()));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].headers["authorization"], "Bearer sk-test-key");
    assert_eq!(reqs[0].body["stream"], true);
    assert_eq!(reqs[0].body["stream_options"]["include_usage"], true);
    assert_eq!(reqs[0].body["messages"][0]["content"], "stable\n\ndate");
}

#[tokio::test]
async fn no_key_sends_no_auth_header() {
    let (url, fake) = serve(vec![(
        "/v1/chat/completions",
        vec![Reply::Sse(OK_STREAM.into())],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    send(&p, &request()).await.0.unwrap();
    assert!(fake.requests()[0].headers.get("authorization").is_none());
}

#[tokio::test(start_paused = true)]
async fn server_errors_back_off_exponentially_then_succeed() {
    let err = Reply::Status(
        500,
        vec![],
        r#"{"error":{"message":"boom","type":"server_error"}}"#.into(),
    );
    let (url, fake) = serve(vec![(
        "/v1/chat/completions",
        vec![err.clone(), err, Reply::Sse(OK_STREAM.into())],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let start = Instant::now();
    let (r, _) = send(&p, &request()).await;
    assert_eq!(r.unwrap(), "Hello");
    let waited = start.elapsed();
    // 1 s then 2 s, each plus up to 100% jitter.
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(6),
        "{waited:?}"
    );
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn gives_up_after_configured_retries() {
    let err = Reply::Status(503, vec![], "upstream unavailable".into());
    let (url, fake) = serve(vec![("/v1/chat/completions", vec![err])]).await;
    let mut m = model(ProviderKind::Openai, format!("{url}/v1"));
    m.retries = 2;
    let p = OpenAiProvider::new(m, None).unwrap();
    let e = send(&p, &request()).await.0.unwrap_err();
    assert_eq!(e.class().name(), "transient");
    assert!(e.to_string().contains("upstream unavailable"), "{e}");
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn rate_limit_waits_for_retry_after() {
    let limited = Reply::Status(
        429,
        vec![("retry-after", "7".into())],
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
    );
    let (url, fake) = serve(vec![(
        "/v1/chat/completions",
        vec![limited, Reply::Sse(OK_STREAM.into())],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let start = Instant::now();
    send(&p, &request()).await.0.unwrap();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(7) && waited < Duration::from_millis(7500),
        "{waited:?}"
    );
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn auth_and_overflow_are_never_retried() {
    let (url, fake) = serve(vec![
        (
            "/a/chat/completions",
            vec![Reply::Status(
                401,
                vec![],
                r#"{"error":{"message":"Incorrect API key provided: sk-wrong-key-123.","type":"invalid_request_error","code":"invalid_api_key"}}"#.into(),
            )],
        ),
        (
            "/b/chat/completions",
            vec![Reply::Status(
                400,
                vec![],
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3000,"n_ctx":2048}}"#.into(),
            )],
        ),
    ])
    .await;
    let p = OpenAiProvider::new(
        model(ProviderKind::Openai, format!("{url}/a")),
        Some("sk-wrong-key-123".into()),
    )
    .unwrap();
    let e = send(&p, &request()).await.0.unwrap_err();
    assert_eq!(e.class().name(), "auth");
    let msg = e.to_string();
    assert!(msg.contains("$TEST_KEY"), "{msg}");
    assert!(!msg.contains("sk-wrong-key-123"), "key leaked: {msg}");
    assert!(!format!("{e:?}{p:?}").contains("sk-wrong-key-123"));

    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/b")), None).unwrap();
    let e = send(&p, &request()).await.0.unwrap_err();
    assert_eq!(eonyx_provider::parse_overflow_limit(&e), Some(2048));
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn stream_breaking_after_output_is_an_error_and_not_retried() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Partial\"},\"finish_reason\":null}]}\n\n";
    let (url, fake) = serve(vec![(
        "/v1/chat/completions",
        vec![Reply::Break(first.into())],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let (r, events) = send(&p, &request()).await;
    let e = r.unwrap_err();
    assert_eq!(e.class().name(), "transient");
    assert!(e.to_string().contains("after output began"), "{e}");
    assert_eq!(events, vec![StreamEvent::TextDelta("Partial".into())]);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn idle_stream_times_out() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Thinking\"},\"finish_reason\":null}]}\n\n";
    let (url, _fake) = serve(vec![(
        "/v1/chat/completions",
        vec![Reply::Stall(first.into())],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let start = Instant::now();
    let e = send(&p, &request()).await.0.unwrap_err();
    assert!(e.to_string().contains("sent nothing for 5s"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn cancel_during_backoff_is_prompt() {
    let err = Reply::Status(500, vec![], "boom".into());
    let (url, _fake) = serve(vec![("/v1/chat/completions", vec![err])]).await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let req = request();
    let cancel = req.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let start = Instant::now();
    let e = send(&p, &req).await.0.unwrap_err();
    assert!(matches!(e, ProviderError::Cancelled), "{e:?}");
    assert!(
        start.elapsed() < Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn falls_back_to_non_streaming_when_refused() {
    let refused = Reply::Status(
        400,
        vec![],
        r#"{"error":{"message":"Streaming is not supported for this model","type":"invalid_request_error"}}"#.into(),
    );
    let json = Reply::Status(
        200,
        vec![("content-type", "application/json".into())],
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Plain answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#.into(),
    );
    let (url, fake) = serve(vec![("/v1/chat/completions", vec![refused, json])]).await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let (r, events) = send(&p, &request()).await;
    assert_eq!(r.unwrap(), "Plain answer");
    assert_eq!(events[0], StreamEvent::TextDelta("Plain answer".into()));
    // The next request goes straight to non-streaming.
    send(&p, &request()).await.0.unwrap();
    let reqs = fake.requests();
    let streams: Vec<&Value> = reqs.iter().map(|r| &r.body["stream"]).collect();
    assert_eq!(
        streams,
        [&Value::Bool(true), &Value::Bool(false), &Value::Bool(false)]
    );
    assert!(reqs[1].body.get("stream_options").is_none());
}

const ANTHROPIC_OK: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":40,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi there\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

#[tokio::test]
async fn anthropic_streams_with_version_and_key_headers() {
    let (url, fake) = serve(vec![(
        "/v1/messages",
        vec![Reply::Sse(ANTHROPIC_OK.into())],
    )])
    .await;
    let p = AnthropicProvider::new(
        model(ProviderKind::Anthropic, format!("{url}/v1")),
        Some("ant-key".into()),
    )
    .unwrap();
    let mut events = Vec::new();
    let r = p.send(&request(), &mut |e| events.push(e)).await.unwrap();
    assert_eq!(r.message.content.text(), "Hi there");
    let u = r.usage.unwrap();
    assert_eq!(
        (u.prompt_tokens, u.cached_tokens, u.completion_tokens),
        (43, 40, 3)
    );
    let reqs = fake.requests();
    assert_eq!(reqs[0].headers["x-api-key"], "ant-key");
    assert_eq!(reqs[0].headers["anthropic-version"], "2023-06-01");
    assert!(reqs[0].headers.get("authorization").is_none());
    assert_eq!(
        reqs[0].body["system"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[tokio::test(start_paused = true)]
async fn anthropic_overloaded_is_retried_and_overflow_is_not() {
    let overloaded = Reply::Status(
        529,
        vec![],
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
    );
    let too_long = Reply::Status(
        400,
        vec![],
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#.into(),
    );
    let (url, fake) = serve(vec![
        (
            "/a/v1/messages",
            vec![overloaded, Reply::Sse(ANTHROPIC_OK.into())],
        ),
        ("/b/v1/messages", vec![too_long]),
    ])
    .await;
    let p =
        AnthropicProvider::new(model(ProviderKind::Anthropic, format!("{url}/a")), None).unwrap();
    assert_eq!(send(&p, &request()).await.0.unwrap(), "Hi there");
    let p =
        AnthropicProvider::new(model(ProviderKind::Anthropic, format!("{url}/b")), None).unwrap();
    let e = send(&p, &request()).await.0.unwrap_err();
    assert!(matches!(
        e,
        ProviderError::ContextOverflow {
            prompt_tokens: Some(210000),
            limit: Some(200000),
            ..
        }
    ));
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn detects_limits_from_llama_cpp_props() {
    let (url, fake) = serve(vec![(
        "/props",
        vec![Reply::Status(
            200,
            vec![("content-type", "application/json".into())],
            r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":1}"#.into(),
        )],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    assert_eq!(
        p.detect_limits("test-model").await,
        ServerLimits {
            context_window: Some(2048),
            max_output_tokens: None,
            source: Some("/props"),
            total_slots: Some(1),
        }
    );
    // The probes run concurrently; /props answered.
    assert!(fake.requests().iter().any(|r| r.path == "/props"));
}

#[tokio::test]
async fn detects_limits_from_models_list_and_ollama() {
    let (url, fake) = serve(vec![
        (
            "/or/v1/models",
            vec![Reply::Status(
                200,
                vec![("content-type", "application/json".into())],
                r#"{"data":[{"id":"test-model","context_length":65536,"top_provider":{"context_length":65536,"max_completion_tokens":8192}}]}"#.into(),
            )],
        ),
        (
            "/ol/api/show",
            vec![Reply::Status(
                200,
                vec![("content-type", "application/json".into())],
                r#"{"parameters":"num_ctx 4096","model_info":{"gemma3.context_length":131072}}"#.into(),
            )],
        ),
    ])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/or/v1")), None).unwrap();
    assert_eq!(
        p.detect_limits("test-model").await,
        ServerLimits {
            context_window: Some(65536),
            max_output_tokens: Some(8192),
            source: Some("/v1/models"),
            total_slots: None,
        }
    );
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/ol/v1")), None).unwrap();
    assert_eq!(
        p.detect_limits("test-model").await.context_window,
        Some(4096)
    );
    let show = fake
        .requests()
        .into_iter()
        .find(|r| r.path == "/ol/api/show")
        .unwrap();
    assert_eq!(show.method, "POST");
    assert_eq!(show.body["model"], "test-model");
    // A server that answers none of the probes: empty.
    let p =
        OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/none/v1")), None).unwrap();
    assert_eq!(p.detect_limits("test-model").await, ServerLimits::default());
}

#[tokio::test]
async fn connection_refused_names_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut m = model(ProviderKind::Openai, format!("http://{addr}/v1"));
    m.retries = 1;
    let p = OpenAiProvider::new(m, None)
        .unwrap()
        .with_retry_policy(RetryPolicy {
            retries: 1,
            min_delay: Duration::from_millis(5),
            ..RetryPolicy::default()
        });
    let e = send(&p, &request()).await.0.unwrap_err();
    assert_eq!(e.class().name(), "transient");
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
    assert!(e.to_string().contains("is the server running"), "{e}");
}

#[tokio::test]
async fn refused_parameters_are_dropped_or_renamed_and_sent_once_more() {
    let temperature = Reply::Status(
        400,
        vec![("content-type", "application/json".into())],
        r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}"#.into(),
    );
    let max_tokens = Reply::Status(
        400,
        vec![("content-type", "application/json".into())],
        r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#.into(),
    );
    let (url, fake) = serve(vec![(
        "/v1/chat/completions",
        vec![temperature, max_tokens, Reply::Sse(OK_STREAM.into())],
    )])
    .await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    let mut req = request();
    req.temperature = Some(0.2);
    req.max_tokens = Some(64);
    assert_eq!(send(&p, &req).await.0.unwrap(), "Hello");
    let sent = fake.requests();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].body["temperature"], 0.2);
    assert!(sent[1].body.get("temperature").is_none());
    assert_eq!(sent[1].body["max_tokens"], 64);
    assert!(sent[2].body.get("max_tokens").is_none());
    assert_eq!(sent[2].body["max_completion_tokens"], 64);
    // Learned: the shape to remember for this model.
    let q = p.quirks();
    assert!(q.drop_temperature && q.max_completion_tokens);
}

#[tokio::test]
async fn a_refusal_that_changes_nothing_is_not_retried() {
    let refused = Reply::Status(
        400,
        vec![("content-type", "application/json".into())],
        r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model.","type":"invalid_request_error"}}"#.into(),
    );
    let (url, fake) = serve(vec![("/v1/chat/completions", vec![refused])]).await;
    let p = OpenAiProvider::new(model(ProviderKind::Openai, format!("{url}/v1")), None).unwrap();
    // The request carries no temperature: dropping it cannot help.
    let e = send(&p, &request()).await.0.unwrap_err();
    assert_eq!(e.class().name(), "rejected");
    assert_eq!(fake.requests().len(), 1);
}
