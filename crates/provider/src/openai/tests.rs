//! Chat Completions request shapes.

use super::*;
use eonyx_core::config::ProviderKind;
use eonyx_core::{SystemPrompt, ToolDef};

/// A request with every kind of content: tools, tool calls and results,
/// an image, a multi-part user message.
pub(crate) fn rich_request() -> ChatRequest {
    let mut call = Message::assistant("I'll read it.");
    call.tool_calls = vec![
        ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "src/lib.rs"}),
        },
        ToolCall {
            id: "call_2".into(),
            name: "list_dir".into(),
            arguments: json!({"path": "."}),
        },
    ];
    let mut tool_only = Message::new(Role::Assistant, Content::Text(String::new()));
    tool_only.tool_calls = vec![ToolCall {
        id: "call_3".into(),
        name: "grep".into(),
        arguments: ToolCall::parse_arguments("{broken"),
    }];
    let mut req = ChatRequest::new(
        "gemma-3-270m",
        SystemPrompt {
            stable: "You are eonyx.\n\n# Project context: AGENTS.md\nUse tabs.".into(),
            suffix: "Current date (UTC): 2026-07-05".into(),
        },
        vec![
            Message::new(
                Role::User,
                Content::Parts(vec![
                    Part::Text {
                        text: "What is in this screenshot?".into(),
                    },
                    Part::Image {
                        media_type: Some("image/png".into()),
                        data: Some("iVBORw0KGgo=".into()),
                        url: None,
                    },
                    Part::Image {
                        media_type: None,
                        data: None,
                        url: Some("https://example.com/a.jpg".into()),
                    },
                ]),
            ),
            call,
            Message::tool_result("call_1", "pub fn main() {}"),
            Message::tool_result("call_2", "src/\nCargo.toml"),
            tool_only,
            Message::tool_result("call_3", "error: invalid arguments"),
            Message::user("Thanks. Summarize."),
        ],
    );
    req.tools = vec![ToolDef {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }];
    req.max_tokens = Some(256);
    req.temperature = Some(0.2);
    req
}

#[test]
fn output_cap_key_follows_the_server() {
    let mut model = ModelConfig::with_defaults("m", ProviderKind::Openai);
    let body = request_body(&model, &rich_request(), true);
    assert_eq!(body["max_completion_tokens"], 256);
    assert!(body.get("max_tokens").is_none());
    model.base_url = "http://127.0.0.1:8080/v1".into();
    let body = request_body(&model, &rich_request(), true);
    assert_eq!(body["max_tokens"], 256);
    assert!(body.get("max_completion_tokens").is_none());
    assert!(is_openai_api("https://API.openai.com/v1/"));
    assert!(!is_openai_api("https://api.openai.com.evil.example/v1"));
    assert!(!is_openai_api("https://openrouter.ai/api/v1"));
}

#[test]
fn summarizer_flags_map_to_tool_choice_and_cache_key_only_where_accepted() {
    let mut req = rich_request();
    req.no_tool_calls = true;
    req.cache_key = Some("20260705T091500-1a2b3c4d".into());
    let mut model = ModelConfig::with_defaults("m", ProviderKind::Openai);
    let body = request_body(&model, &req, true);
    assert_eq!(body["tool_choice"], "none");
    assert_eq!(body["prompt_cache_key"], "20260705T091500-1a2b3c4d");
    // The tools are still sent, byte for byte as without the flag.
    let plain = request_body(&model, &rich_request(), true);
    assert_eq!(body["tools"], plain["tools"]);
    assert!(plain.get("tool_choice").is_none());
    // A compatible server never sees the key.
    model.base_url = "http://127.0.0.1:8080/v1".into();
    let body = request_body(&model, &req, true);
    assert!(body.get("prompt_cache_key").is_none());
    assert_eq!(body["tool_choice"], "none");
}

#[test]
fn request_json_shape() {
    let model = ModelConfig::with_defaults("local", ProviderKind::Openai);
    let body = request_body(&model, &rich_request(), true);
    // Keys sorted whatever serde_json's `preserve_order` says.
    let mut body = body;
    body.sort_all_objects();
    insta::assert_snapshot!(serde_json::to_string_pretty(&body).unwrap());
}

#[test]
fn a_model_that_refused_images_gets_a_note_in_their_place() {
    let model = ModelConfig::with_defaults("local", ProviderKind::Openai);
    let quirks = RequestQuirks {
        no_images: true,
        ..Default::default()
    };
    let body = request_body_with(&model, &rich_request(), true, quirks);
    let content = &body["messages"][1]["content"];
    assert_eq!(content[0]["text"], "What is in this screenshot?");
    for i in [1, 2] {
        assert_eq!(content[i]["type"], "text");
        assert_eq!(content[i]["text"], crate::refusal::IMAGE_NOT_SENT);
    }
    assert!(!body.to_string().contains("image_url"), "{body}");
    // Everything else is as without the quirk.
    let plain = request_body(&model, &rich_request(), true);
    assert_eq!(body["messages"][2], plain["messages"][2]);
    assert_eq!(body["tools"], plain["tools"]);
}

#[test]
fn non_streaming_body_is_parsed_and_emitted() {
    let v: Value = serde_json::from_str(
        r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#,
    )
    .unwrap();
    let mut events = Vec::new();
    let r = parse_completion(&v, &mut |e| events.push(e)).unwrap();
    assert_eq!(r.message.tool_calls[0].arguments, json!({"cmd": "ls"}));
    assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(r.usage.unwrap().prompt_tokens, 10);
    assert_eq!(events.len(), 3);
}

#[test]
fn chat_reasoning_goes_back_as_reasoning_content_unless_refused() {
    use eonyx_core::{Reasoning, ReasoningApi};
    let mut req = rich_request();
    let mut r = Reasoning::new(ReasoningApi::Chat);
    r.text = "The file is small.".into();
    req.messages[1].reasoning = vec![r, Reasoning::new(ReasoningApi::Anthropic)];
    let mut model = ModelConfig::with_defaults("ds", ProviderKind::Openai);
    model.base_url = "https://api.deepseek.com/v1".into();
    model.reasoning_effort = Some(eonyx_core::config::ReasoningEffort::Low);
    let body = request_body(&model, &req, true);
    assert_eq!(
        body["messages"][2]["reasoning_content"],
        "The file is small."
    );
    assert_eq!(body["reasoning_effort"], "low");
    // Messages without reasoning carry no field.
    assert!(body["messages"][5].get("reasoning_content").is_none());
    let quirks = RequestQuirks {
        no_reasoning_content: true,
        no_reasoning_effort: true,
        ..Default::default()
    };
    let body = request_body_with(&model, &req, true, quirks);
    assert!(body["messages"][2].get("reasoning_content").is_none());
    assert!(body.get("reasoning_effort").is_none());
}

#[test]
fn streamed_reasoning_content_is_kept_apart_from_the_answer() {
    let s = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"Think \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"more.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Answer.\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9,\"completion_tokens_details\":{\"reasoning_tokens\":6}}}\n\n",
        "data: [DONE]\n\n",
    );
    let events = crate::parse_openai_sse_chunks(&[s.as_bytes()]).unwrap();
    assert_eq!(events[0], StreamEvent::ReasoningDelta("Think ".into()));
    assert_eq!(events[1], StreamEvent::ReasoningDelta("more.".into()));
    assert_eq!(events[2], StreamEvent::TextDelta("Answer.".into()));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Usage(u) if u.reasoning_tokens == 6))
    );
}
