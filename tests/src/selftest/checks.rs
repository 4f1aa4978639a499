//! The fake server's checks and records: API keys, the recorded requests,
//! the window endpoints and the timeline.

use super::*;

#[test]
fn a_required_key_is_checked_per_provider() {
    let server = FakeServer::start();
    server.require_api_key(Some("sk-test"));
    let url = format!("{}/chat/completions", server.base_url());
    let r = post_json(&url, &openai_body(false, "a"), &[]).unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(r.json().unwrap()["error"]["code"], "invalid_api_key");
    let r = post_json(
        &url,
        &openai_body(false, "a"),
        &[("Authorization", "Bearer wrong")],
    )
    .unwrap();
    assert_eq!(r.status, 401);
    let r = post_json(
        &url,
        &openai_body(false, "a"),
        &[("Authorization", "Bearer sk-test")],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    let url = format!("{}/messages", server.base_url());
    let r = post_json(
        &url,
        &anthropic_body(false, "a"),
        &[("Authorization", "Bearer sk-test")],
    )
    .unwrap();
    assert_eq!(r.status, 401);
    assert_eq!(r.json().unwrap()["error"]["type"], "authentication_error");
    let r = post_json(
        &url,
        &anthropic_body(false, "a"),
        &[("x-api-key", "sk-test")],
    )
    .unwrap();
    assert_eq!(r.status, 200);
}

#[test]
fn requests_are_recorded_with_helpers_and_the_summarizer_hook_bypasses_the_queue() {
    let server = FakeServer::start();
    server.set_summarizer(|r| Reply::text(format!("SUMMARY of {} messages", r.messages().len())));
    server.push(Reply::text("agent reply"));
    let summarize = json!({
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": format!("{} Write a handoff.", eonyx_core::provider::SUMMARIZER_SYSTEM_PREFIX)},
            {"role": "user", "content": "the secret is 42"},
        ],
    });
    let r = chat(&server, &summarize);
    assert_eq!(content(&r)["content"], "SUMMARY of 2 messages");
    assert_eq!(server.pending(), 1);

    let body = json!({
        "model": "fake-model",
        "tools": [{"type": "function", "function": {"name": "grep", "description": "search", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "stable"},
            {"role": "system", "content": "suffix"},
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "second"},
        ],
    });
    let url = format!("{}/chat/completions", server.base_url());
    let r = post_json(&url, &body, &[("X-Trace-Id", "abc")]).unwrap();
    assert_eq!(content(&r)["content"], "agent reply");

    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].is_summarizer());
    let rec = &reqs[1];
    assert!(!rec.is_summarizer());
    assert_eq!(
        (rec.method.as_str(), rec.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(rec.header("x-trace-id"), Some("abc"));
    assert!(rec.headers.contains_key("x-trace-id"));
    assert_eq!(rec.body, body);
    assert_eq!(rec.system_text(), "stable\n\nsuffix");
    assert_eq!(rec.tool_names(), ["grep"]);
    assert_eq!(rec.roles(), ["user", "assistant", "user"]);
    assert_eq!(rec.user_texts(), ["first", "second"]);
    assert_eq!(rec.last_user_text().as_deref(), Some("second"));
    assert_eq!(rec.prompt_tokens, count_prompt_tokens(&body));
    assert!(rec.all_text().contains("first"));

    let v = anthropic_body(false, "hey");
    messages(&server, &v);
    let rec = server.last_request().unwrap();
    assert!(rec.is_anthropic());
    assert_eq!(rec.system_text(), "You are terse.");
    assert_eq!(rec.system_blocks()[0]["cache_control"]["type"], "ephemeral");
    assert_eq!(rec.max_tokens(), Some(64));
    server.clear_requests();
    assert!(server.requests().is_empty());
}

#[test]
fn window_endpoints_exist_only_when_advertised() {
    let server = FakeServer::start();
    assert_eq!(
        get(&format!("{}/props", server.root_url())).unwrap().status,
        404
    );
    assert_eq!(
        get(&format!("{}/models", server.base_url()))
            .unwrap()
            .status,
        404
    );
    server.advertise_props(Some(2048));
    let v = get(&format!("{}/props", server.root_url()))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(v["default_generation_settings"]["n_ctx"], 2048);
    assert_eq!(
        get(&format!("{}/models", server.base_url()))
            .unwrap()
            .status,
        404
    );
    server.advertise_models(Some(8192)).set_model_id("m1");
    let v = get(&format!("{}/models", server.base_url()))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(v["data"][0]["id"], "m1");
    assert_eq!(v["data"][0]["context_length"], 8192);
    assert_eq!(v["data"][0]["max_model_len"], 8192);
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        ["/props", "/v1/models", "/props", "/v1/models", "/v1/models"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn starts_and_stops_inside_an_async_test() {
    let server = FakeServer::start();
    let url = format!("{}/chat/completions", server.base_url());
    let r = tokio::task::spawn_blocking(move || post_json(&url, &openai_body(false, "x"), &[]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, 200);
    let addr = server.addr();
    drop(server);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "port must be closed after drop"
    );
}

/// Poll `f` until it holds (the fake's other threads get there soon).
fn eventually(what: &str, f: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < until, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_timeline_orders_requests_and_marks_and_only_summaries_are_slow() {
    let server = FakeServer::start();
    server
        .set_summarizer(|_| Reply::text("SUMMARY"))
        .set_summarizer_delay(Duration::from_millis(300))
        .set_total_slots(4)
        .advertise_props(Some(2048));
    let props = get(&format!("{}/props", server.root_url()))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(props["total_slots"], 4);
    let summarize = json!({
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": format!("{} Write a handoff.", eonyx_core::provider::SUMMARIZER_SYSTEM_PREFIX)},
            {"role": "user", "content": "facts"},
        ],
    });
    let url = format!("{}/chat/completions", server.base_url());
    let slow = {
        let (url, body) = (url.clone(), summarize.clone());
        std::thread::spawn(move || post_json(&url, &body, &[]).unwrap())
    };
    eventually("the summary started", || !server.spans().is_empty());
    let between = server.mark("between");
    // The agent's own request is answered while the summary waits.
    assert_eq!(
        content(&chat(&server, &openai_body(false, "hi")))["content"],
        "ok"
    );
    assert_eq!(content(&slow.join().unwrap())["content"], "SUMMARY");
    let spans = server.spans();
    assert_eq!(spans.len(), 2, "{spans:?}");
    let (s, a) = (&spans[0], &spans[1]);
    assert!(s.summarizer && !a.summarizer);
    assert!(s.completed && a.completed);
    assert!(s.started < between && between < a.started);
    assert!(s.in_flight_at(between) && !a.in_flight_at(between));
    assert!(a.ended < s.ended, "{spans:?}");
    assert_eq!(
        server.timeline()[between],
        crate::Moment::Mark("between".into())
    );
    // A client that goes away: the request ends unfinished.
    let r = crate::http::request(
        "POST",
        &url,
        &[],
        Some(&summarize.to_string()),
        Duration::from_millis(30),
    );
    assert!(r.is_err(), "{r:?}");
    eventually("the dropped request ended", || {
        server.spans().get(2).is_some_and(|s| s.ended.is_some())
    });
    assert!(!server.spans()[2].completed, "{:?}", server.spans());
}
