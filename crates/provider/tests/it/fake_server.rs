//! The clients against the shared fake provider server (`eonyx-tests`):
//! the same server the end-to-end tests use, with its own token counting,
//! prompt cache and real overflow bodies.

#![allow(clippy::unwrap_used)]

use eonyx_core::config::ProviderKind;
use eonyx_core::message::ToolCall;
use eonyx_core::{
    ChatRequest, Message, ModelConfig, Provider, ProviderError, StreamEvent, SystemPrompt,
};
use eonyx_provider::{AnthropicProvider, OpenAiProvider};
use eonyx_tests::{FakeServer, OverflowFlavor, Reply};
use serde_json::json;

fn model(kind: ProviderKind, server: &FakeServer) -> ModelConfig {
    let mut m = ModelConfig::with_defaults("fake", kind);
    m.base_url = server.base_url();
    m.name = "fake-model".into();
    m.api_key_env = Some("FAKE_KEY".into());
    m
}

fn request(text: &str) -> ChatRequest {
    ChatRequest::new(
        "fake-model",
        SystemPrompt {
            stable: "You are a test.".into(),
            suffix: "Current date (UTC): 2026-01-01".into(),
        },
        vec![Message::user(text)],
    )
}

fn providers(server: &FakeServer) -> Vec<Box<dyn Provider>> {
    vec![
        Box::new(OpenAiProvider::new(model(ProviderKind::Openai, server), None).unwrap()),
        Box::new(AnthropicProvider::new(model(ProviderKind::Anthropic, server), None).unwrap()),
    ]
}

#[tokio::test]
async fn text_and_tool_calls_over_both_protocols() {
    let server = FakeServer::start();
    for p in providers(&server) {
        server.push(Reply::text("Hello from the fake"));
        server.push(Reply::tool_call("read_file", json!({"path": "src/lib.rs"})));
        let r = p.send(&request("hi"), &mut |_| {}).await.unwrap();
        assert_eq!(
            r.message.content.text(),
            "Hello from the fake",
            "{}",
            p.name()
        );
        assert!(r.usage.unwrap().prompt_tokens > 0);
        let mut calls = Vec::new();
        let r = p
            .send(&request("read it"), &mut |e| {
                if let StreamEvent::ToolCall(c) = e {
                    calls.push(c)
                }
            })
            .await
            .unwrap();
        assert_eq!(r.message.tool_calls.len(), 1, "{}", p.name());
        let ToolCall {
            name, arguments, ..
        } = &calls[0];
        assert_eq!(
            (name.as_str(), arguments),
            ("read_file", &json!({"path": "src/lib.rs"}))
        );
    }
}

#[tokio::test]
async fn append_only_requests_hit_the_prompt_cache() {
    let server = FakeServer::start();
    for p in providers(&server) {
        server.clear_prompt_cache();
        let mut req = request(&"a long first question ".repeat(20));
        let first = p.send(&req, &mut |_| {}).await.unwrap();
        req.messages.push(first.message);
        req.messages.push(Message::user("and a follow-up"));
        let second = p.send(&req, &mut |_| {}).await.unwrap();
        let u = second.usage.unwrap();
        assert!(u.cached_tokens > 0, "{}: {u:?}", p.name());
        assert!(u.prompt_tokens > u.cached_tokens, "{}: {u:?}", p.name());
    }
}

#[tokio::test]
async fn overflow_bodies_carry_the_window() {
    let server = FakeServer::start();
    server.set_context_window(Some(100));
    let big = "x ".repeat(2000);
    for flavor in [OverflowFlavor::OpenAi, OverflowFlavor::LlamaCpp] {
        server.set_overflow_flavor(flavor);
        let p = OpenAiProvider::new(model(ProviderKind::Openai, &server), None).unwrap();
        let e = p.send(&request(&big), &mut |_| {}).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::ContextOverflow { limit: Some(100), prompt_tokens: Some(p), .. } if p > 100),
            "{flavor:?}: {e:?}"
        );
    }
    let p = AnthropicProvider::new(model(ProviderKind::Anthropic, &server), None).unwrap();
    let e = p.send(&request(&big), &mut |_| {}).await.unwrap_err();
    assert_eq!(eonyx_provider::parse_overflow_limit(&e), Some(100), "{e:?}");
}

#[tokio::test]
async fn wrong_key_is_an_auth_error_naming_the_variable() {
    let server = FakeServer::start();
    server.require_api_key(Some("right-key"));
    let p = OpenAiProvider::new(
        model(ProviderKind::Openai, &server),
        Some("wrong-key".into()),
    )
    .unwrap();
    let e = p.send(&request("hi"), &mut |_| {}).await.unwrap_err();
    assert_eq!(e.class().name(), "auth");
    assert!(e.to_string().contains("$FAKE_KEY"), "{e}");
    assert_eq!(server.requests().len(), 1, "auth failures are not retried");
    let p = OpenAiProvider::new(
        model(ProviderKind::Openai, &server),
        Some("right-key".into()),
    )
    .unwrap();
    p.send(&request("hi"), &mut |_| {}).await.unwrap();
}

#[tokio::test]
async fn detects_the_window_the_server_advertises() {
    let server = FakeServer::start();
    server.advertise_props(Some(2048));
    let p = OpenAiProvider::new(model(ProviderKind::Openai, &server), None).unwrap();
    assert_eq!(
        p.detect_limits("fake-model").await.context_window,
        Some(2048)
    );
    server.advertise_props(None);
    server.advertise_models(Some(4096));
    assert_eq!(
        p.detect_limits("fake-model").await.context_window,
        Some(4096)
    );
}
