//! Reasoning models and the Responses API through the real binary
//! (docs/models.md, section "Reasoning models and the Responses API"; docs/providers.md#reasoning): a
//! tool loop on each wire with the fake refusing, as the real APIs do, a
//! request that drops the model's reasoning; the switch of a codex model
//! to the Responses API, remembered; append-only Responses inputs sharing
//! one `prompt_cache_key`; reasoning kept in the session, shown on stderr
//! and in `--json` events, never on stdout.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::PathBuf;
use std::process::Output;

use camino::Utf8Path;
use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::{messages, run_with_stdin, session_id_of};
use crate::util::{Sandbox, json_lines, stderr, stdout};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Wire {
    Chat,
    Anthropic,
    Responses,
}

struct Fx {
    sb: Sandbox,
    fake: FakeServer,
}

impl Fx {
    fn new(wire: Wire, config: impl FnOnce(FakeConfig) -> FakeConfig) -> Self {
        let sb = Sandbox::new();
        sb.write("work/eonyx.json", "{}\n");
        sb.write("work/notes.txt", "the secret number is 4242\n");
        let fake = FakeServer::start();
        let base = match wire {
            Wire::Anthropic => FakeConfig::anthropic(&fake.base_url()),
            Wire::Chat => FakeConfig::openai(&fake.base_url()),
            Wire::Responses => FakeConfig::openai(&fake.base_url()).set("api", "responses"),
        };
        config(base.set("retries", 0))
            .write(Utf8Path::from_path(&sb.config).unwrap())
            .unwrap();
        Self { sb, fake }
    }

    fn run(&self, args: &[&str], input: &str) -> Output {
        let mut c = self.sb.eonyx();
        c.args(args);
        run_with_stdin(c, input)
    }

    fn session(&self) -> PathBuf {
        let dir = self.sb.data.join("sessions");
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files.remove(0)
    }
}

fn reasoning_replies(fake: &FakeServer) {
    fake.push(
        Reply::tool_call("read_file", json!({"path": "notes.txt"}))
            .with_reasoning("I should read the notes first."),
    )
    .push(Reply::text("It is 4242.").with_reasoning("The file says 4242."));
}

/// What the second request sent back of the first step's reasoning.
fn reasoning_sent_back(wire: Wire, second: &RecordedRequest) -> Value {
    match wire {
        Wire::Chat => second
            .messages()
            .into_iter()
            .find(|m| m["role"] == "assistant")
            .map(|m| m["reasoning_content"].clone())
            .unwrap_or_default(),
        Wire::Anthropic => second.body["messages"][1]["content"][0].clone(),
        Wire::Responses => second
            .input()
            .into_iter()
            .find(|i| i["type"] == "reasoning")
            .unwrap_or_default(),
    }
}

#[test]
fn a_tool_loop_succeeds_on_each_wire_with_the_reasoning_sent_back() {
    for wire in [Wire::Chat, Wire::Anthropic, Wire::Responses] {
        let fx = Fx::new(wire, |c| c.set("reasoning_effort", "high"));
        fx.fake.require_reasoning_back(true);
        reasoning_replies(&fx.fake);
        let o = fx.run(&["run", "--json", "what is in notes.txt?"], "");
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fx.fake.refusals(), 0, "{wire:?}");
        let reqs = fx.fake.chat_requests();
        assert_eq!(reqs.len(), 2, "{wire:?}");
        let back = reasoning_sent_back(wire, &reqs[1]);
        match wire {
            Wire::Chat => {
                assert_eq!(back, "I should read the notes first.");
                assert_eq!(reqs[0].body["reasoning_effort"], "high");
            }
            Wire::Anthropic => {
                assert_eq!(back["type"], "thinking", "{back}");
                assert_eq!(
                    back["signature"],
                    eonyx_tests::signature_of("I should read the notes first.")
                );
                // The budget is on top of the answer's cap; no temperature.
                assert_eq!(reqs[0].body["thinking"]["budget_tokens"], 24_000);
                assert_eq!(reqs[0].max_tokens(), Some(256 + 24_000));
                assert!(reqs[0].temperature().is_none());
                assert_eq!(
                    reqs[0].header("anthropic-beta"),
                    None,
                    "fake-model is no Claude 4 model"
                );
            }
            Wire::Responses => {
                assert_eq!(
                    back["encrypted_content"],
                    eonyx_tests::encrypted_of("I should read the notes first.")
                );
                assert_eq!(reqs[0].body["reasoning"]["effort"], "high");
                assert_eq!(
                    reqs[0].body["include"],
                    json!(["reasoning.encrypted_content"])
                );
                assert_eq!(reqs[0].body["store"], false);
            }
        }

        // stdout holds events only: reasoning apart from the answer text.
        let events = json_lines(&o.stdout);
        let of = |t: &str| -> String {
            events
                .iter()
                .filter(|e| e["type"] == t)
                .map(|e| e["delta"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert!(
            of("reasoning").contains("I should read the notes first."),
            "{wire:?}"
        );
        assert!(!of("text").contains("notes first"), "{wire:?}");
        assert_eq!(of("text"), "It is 4242.");
        let done = events
            .iter()
            .find(|e| e["type"] == "turn_completed")
            .unwrap();
        assert!(done["usage"]["reasoning_tokens"].is_u64(), "{done}");

        // The session keeps every reasoning part, as the API gave it.
        let saved = messages(&fx.session());
        assert_eq!(
            saved[1]["reasoning"][0]["api"],
            match wire {
                Wire::Chat => "chat",
                Wire::Anthropic => "anthropic",
                Wire::Responses => "responses",
            }
        );
        let kept = serde_json::to_string(&saved[1]["reasoning"]).unwrap();
        assert!(kept.contains("I should read the notes first."), "{kept}");
        assert!(
            serde_json::to_string(&saved[3]["reasoning"])
                .unwrap()
                .contains("The file says 4242."),
            "{wire:?}"
        );
    }
}

#[test]
fn a_thinking_budget_alone_turns_thinking_on_with_exactly_that_budget() {
    let fx = Fx::new(Wire::Anthropic, |c| c.set("thinking_budget_tokens", 2048));
    fx.fake.require_reasoning_back(true);
    reasoning_replies(&fx.fake);
    let o = fx.run(&["run", "what is in notes.txt?"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0, "the thinking went back");
    let reqs = fx.fake.chat_requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(
            r.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        // Raised by the budget as with an effort; no temperature.
        assert_eq!(r.max_tokens(), Some(256 + 2048));
        assert!(r.temperature().is_none());
    }
    assert_eq!(
        reasoning_sent_back(Wire::Anthropic, &reqs[1])["type"],
        "thinking"
    );
    assert_eq!(stdout(&o).trim(), "It is 4242.");

    // Below Anthropic's smallest budget: a config error naming the key.
    let fx = Fx::new(Wire::Anthropic, |c| c.set("thinking_budget_tokens", 1000));
    let o = fx.run(&["run", "hi"], "");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("models.fake.thinking_budget_tokens"),
        "{}",
        stderr(&o)
    );
    assert!(fx.fake.chat_requests().is_empty());
}

#[test]
fn without_json_the_answer_alone_is_on_stdout_and_the_reasoning_folded_on_stderr() {
    let fx = Fx::new(Wire::Chat, |c| c.set("reasoning_effort", "low"));
    reasoning_replies(&fx.fake);
    let o = fx.run(&["run", "what is in notes.txt?"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "It is 4242.\n");
    assert!(
        stderr(&o).contains("thought (6 words): I should read the notes first."),
        "{}",
        stderr(&o)
    );
    // `ui.reasoning = "hide"`: not shown at all, still kept.
    let fx = Fx::new(Wire::Chat, |c| c.set("reasoning_effort", "low"));
    std::fs::write(
        fx.sb.root.join("work/eonyx.json"),
        r#"{"ui": {"reasoning": "hide"}}"#,
    )
    .unwrap();
    reasoning_replies(&fx.fake);
    let o = fx.run(&["run", "what is in notes.txt?"], "");
    assert_eq!(stdout(&o), "It is 4242.\n");
    assert!(!stderr(&o).contains("notes first"), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(fx.session())
            .unwrap()
            .contains("I should read the notes first.")
    );
}

#[test]
fn a_reply_cut_with_nothing_but_reasoning_says_where_the_budget_went() {
    let fx = Fx::new(Wire::Responses, |c| c.set("reasoning_effort", "xhigh"));
    fx.fake.push(
        Reply::text("")
            .with_reasoning("Thinking at great length about it.")
            .with_finish_reason("length"),
    );
    let o = fx.run(&["run", "hard question"], "");
    let err = stderr(&o);
    assert!(
        err.contains("the whole output budget (max_output_tokens = 256) went to reasoning"),
        "{err}"
    );
    assert!(err.contains("models.fake.max_output_tokens"), "{err}");
    assert!(!stdout(&o).contains("great length"), "{}", stdout(&o));
}

#[test]
fn a_codex_model_moves_to_the_responses_api_and_the_next_run_goes_there_first() {
    let fx = Fx::new(Wire::Chat, |c| c.set("name", "gpt-5-codex"));
    fx.fake
        .push(Reply::text("first"))
        .push(Reply::text("second"));
    let o = fx.run(&["run", "hello"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "first\n");
    assert_eq!(
        stderr(&o)
            .matches("is served only by the Responses API")
            .count(),
        1,
        "{}",
        stderr(&o)
    );
    let paths = || -> Vec<String> {
        fx.fake
            .chat_requests()
            .iter()
            .map(|r| r.path.clone())
            .collect()
    };
    assert_eq!(paths(), ["/v1/chat/completions", "/v1/responses"]);

    let o = fx.run(&["run", "-c", "again"], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "second\n");
    assert!(!stderr(&o).contains("Responses API"), "{}", stderr(&o));
    assert_eq!(paths()[2..], ["/v1/responses"]);

    let o = fx.run(&["config"], "");
    let listing = stdout(&o);
    let line = listing
        .lines()
        .find(|l| l.starts_with("models.fake.api "))
        .unwrap_or_default();
    assert!(line.contains("\"responses\""), "{listing}");
    assert!(line.contains("learned"), "{line}");
}

/// The canonical JSON of each item (keys sorted by serde_json's map).
fn canonical(items: &[Value]) -> Vec<String> {
    items.iter().map(Value::to_string).collect()
}

#[test]
fn responses_requests_are_append_only_and_share_the_session_cache_key() {
    let fx = Fx::new(Wire::Responses, |c| c.set("reasoning_effort", "medium"));
    fx.fake.require_reasoning_back(true);
    reasoning_replies(&fx.fake);
    fx.fake
        .push(Reply::tool_call("list_dir", json!({"path": "."})).with_reasoning("Look around."))
        .push(Reply::text("Done.").with_reasoning("Nothing else."));
    let o = fx.run(&[], "what is in notes.txt?\nand the directory?\n");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0);
    let reqs: Vec<RecordedRequest> = fx
        .fake
        .chat_requests()
        .into_iter()
        .filter(|r| !r.is_summarizer())
        .collect();
    assert_eq!(reqs.len(), 4);
    let key = session_id_of(&fx.session());
    for pair in reqs.windows(2) {
        let (a, b) = (canonical(&pair[0].input()), canonical(&pair[1].input()));
        assert!(b.len() > a.len());
        assert_eq!(b[..a.len()], a[..], "an input item changed");
        assert_eq!(pair[0].body["instructions"], pair[1].body["instructions"]);
        assert_eq!(pair[0].body["tools"], pair[1].body["tools"]);
    }
    for r in &reqs {
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(r.body["prompt_cache_key"], key.as_str());
    }
    // Every step's reasoning is in place in the last request.
    let last = reqs[3].input();
    let kinds: Vec<&str> = last.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "reasoning",
            "message",
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
        ]
    );
}

/// `eonyx acp`: the model's reasoning reaches the editor as
/// `agent_thought_chunk` updates, apart from the answer, live and again
/// when the session is loaded (docs/acp.md#updates).
#[test]
fn acp_sends_reasoning_as_thought_chunks_live_and_on_load() {
    use crate::acp_util::{AcpClient, reloaded, started};
    let fx = crate::agent::Fx::with(|c| c.set("reasoning_effort", "high"));
    fx.fake
        .push(Reply::text("It is 4242.").with_reasoning("The notes say 4242."));
    let (mut c, s) = started(&fx);
    let r = c.prompt(&s, "what is the number?");
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let thought = |c: &AcpClient| -> String {
        c.updates_of(&s, "agent_thought_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    };
    assert_eq!(thought(&c), "The notes say 4242.");
    assert_eq!(c.answer_text(&s), "It is 4242.");
    c.finish_ok();

    let (c, _, kinds) = reloaded(&fx, &s);
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(thought(&c), "The notes say 4242.");
    c.finish_ok();
}
