use super::*;
use eonyx_core::config::ProviderKind;

#[test]
fn request_json_shape() {
    let mut model = ModelConfig::with_defaults("claude", ProviderKind::Anthropic);
    model.name = "claude-sonnet-4-5".into();
    let mut req = crate::openai::tests::rich_request();
    req.model = String::new();
    let body = request_body(&model, &req);
    // Keys sorted whatever serde_json's `preserve_order` says.
    let mut body = body;
    body.sort_all_objects();
    insta::assert_snapshot!(serde_json::to_string_pretty(&body).unwrap());
}

#[test]
fn summarizer_breakpoint_goes_on_the_conversation_not_the_instruction() {
    let model = ModelConfig::with_defaults("m", ProviderKind::Anthropic);
    let plain = crate::openai::tests::rich_request();
    let n = plain.messages.len();
    let mut req = plain.clone();
    req.messages
        .push(Message::user("[eonyx compaction] summarize"));
    req.cache_breakpoint = Some(n);
    req.no_tool_calls = true;
    req.cache_key = Some("k".into());
    let body = request_body(&model, &req);
    let msgs = body["messages"].as_array().unwrap();
    let conv = request_body(&model, &plain)["messages"].clone();
    let conv = conv.as_array().unwrap();
    // The conversation part is exactly what the conversation's own
    // request sent (breakpoint included); the instruction follows, uncached.
    assert_eq!(&msgs[..conv.len()], &conv[..]);
    assert_eq!(msgs.len(), conv.len() + 1);
    let last = msgs.last().unwrap();
    assert!(last["content"][0].get("cache_control").is_none());
    assert_eq!(last["content"][0]["text"], "[eonyx compaction] summarize");
    // Tools stay, no tool_choice, no OpenAI-only field.
    assert_eq!(body["tools"], request_body(&model, &plain)["tools"]);
    assert!(body.get("tool_choice").is_none());
    assert!(body.get("prompt_cache_key").is_none());
}

#[test]
fn base_url_is_the_server_root_and_a_trailing_v1_is_accepted() {
    for base in [
        "https://api.anthropic.com",
        "https://api.anthropic.com/",
        "https://api.anthropic.com/v1",
        "https://api.anthropic.com/v1/",
    ] {
        assert_eq!(
            messages_url(base),
            "https://api.anthropic.com/v1/messages",
            "{base}"
        );
    }
    assert_eq!(
        messages_url("http://localhost:4000"),
        "http://localhost:4000/v1/messages"
    );
}

#[test]
fn failed_tool_results_carry_is_error() {
    let mut req = crate::openai::tests::rich_request();
    req.messages = vec![
        req.messages[1].clone(),
        Message::tool_error("call_1", "no such file"),
        Message::tool_result("call_2", "ok"),
    ];
    let body = request_body(
        &ModelConfig::with_defaults("c", ProviderKind::Anthropic),
        &req,
    );
    let results = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(results[0]["is_error"], true);
    assert!(results[1].get("is_error").is_none());
}

#[test]
fn a_model_that_refused_images_gets_a_text_block_in_their_place() {
    let model = ModelConfig::with_defaults("c", ProviderKind::Anthropic);
    let quirks = RequestQuirks {
        no_images: true,
        ..Default::default()
    };
    let body = request_body_with(&model, &crate::openai::tests::rich_request(), quirks);
    let blocks = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[1]["type"], "text");
    assert_eq!(blocks[1]["text"], crate::refusal::IMAGE_NOT_SENT);
    assert!(!body.to_string().contains("\"image\""), "{body}");
}

#[test]
fn consecutive_tool_results_become_one_user_message() {
    let req = crate::openai::tests::rich_request();
    let body = request_body(
        &ModelConfig::with_defaults("c", ProviderKind::Anthropic),
        &req,
    );
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user", "user"]
    );
    let results = msgs[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_use_id"], "call_1");
    assert_eq!(results[1]["tool_use_id"], "call_2");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(body["system"][1].get("cache_control").is_none());
}

#[test]
fn thinking_is_sent_first_signed_with_the_budget_on_top_and_no_temperature() {
    use eonyx_core::config::ReasoningEffort;
    use eonyx_core::{Reasoning, ReasoningApi};
    let mut model = ModelConfig::with_defaults("c", ProviderKind::Anthropic);
    model.name = "claude-sonnet-4-5".into();
    model.reasoning_effort = Some(ReasoningEffort::Medium);
    let mut req = crate::openai::tests::rich_request();
    let mut t = Reasoning::new(ReasoningApi::Anthropic);
    t.text = "Two calls.".into();
    t.signature = Some("sig-1".into());
    let mut red = Reasoning::new(ReasoningApi::Anthropic);
    red.redacted = Some("opaque".into());
    req.messages[1].reasoning = vec![t, red, Reasoning::new(ReasoningApi::Chat)];
    let body = request_body_with(&model, &req, RequestQuirks::default());
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 10000})
    );
    assert_eq!(body["max_tokens"], 256 + 10000);
    assert!(body.get("temperature").is_none());
    let blocks = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(
        blocks[0],
        json!({"type": "thinking", "thinking": "Two calls.", "signature": "sig-1"})
    );
    assert_eq!(
        blocks[1],
        json!({"type": "redacted_thinking", "data": "opaque"})
    );
    assert_eq!(blocks[2]["type"], "text");
    assert!(takes_interleaved_thinking("claude-opus-4-1"));
    assert!(!takes_interleaved_thinking("claude-3-7-sonnet-latest"));
    // A direct budget wins; effort none is no thinking.
    model.thinking_budget_tokens = Some(2048);
    let body = request_body_with(&model, &req, RequestQuirks::default());
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    model.reasoning_effort = Some(ReasoningEffort::None);
    let body = request_body_with(&model, &req, RequestQuirks::default());
    assert!(body.get("thinking").is_none());
    assert_eq!(body["temperature"], 0.2);
}

#[test]
fn streamed_thinking_and_redacted_blocks_are_kept_with_their_signature() {
    let s = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me think.\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"xyz\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"Done.\"}}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    let events = crate::parse_anthropic_sse_chunks(&[s.as_bytes()]).unwrap();
    assert_eq!(
        events[0],
        StreamEvent::ReasoningDelta("Let me think.".into())
    );
    assert_eq!(events[1], StreamEvent::TextDelta("Done.".into()));
    let r = crate::sse::decode_text(AnthropicDecoder::default(), s);
    assert_eq!(r.message.reasoning.len(), 2);
    assert_eq!(r.message.reasoning[0].text, "Let me think.");
    assert_eq!(r.message.reasoning[0].signature.as_deref(), Some("EqQB"));
    assert_eq!(r.message.reasoning[1].redacted.as_deref(), Some("xyz"));
}
