//! Provider-native compaction through the real binary
//! (docs/compaction.md#native-compaction): off by default; with `auto`, one
//! compact call per compaction on the Responses and Anthropic wires, the
//! items sent back byte for byte (the fake refuses anything else, as the
//! real APIs do), the goal and plan after them (every failure falls back
//! to eonyx's own summarizer: `compaction_native_fallback.rs`);
//! `run -c` sends the same bytes; `/model` elsewhere gets eonyx's own
//! summary of that history.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{COMPACTION_BETA, FakeConfig, NativeCompact, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::{Fx, code, records};
use crate::util::{json_lines, stderr, stdout};

const GOAL: &str = "Make CODEWORD-GOAL parse every fixture";

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Wire {
    Responses,
    Anthropic,
}

/// A project on `wire` keeping one turn at a compaction, with `native`
/// as `models.fake.compaction_native` (`None`: unset) and the fake
/// serving native compaction as `serve`.
pub(crate) fn fx(wire: Wire, native: Option<&str>, serve: NativeCompact) -> Fx {
    fx_tuned(wire, native, serve, |c| c)
}

/// [`fx`] with `tune` applied to the model's config last.
pub(crate) fn fx_tuned(
    wire: Wire,
    native: Option<&str>,
    serve: NativeCompact,
    tune: impl FnOnce(FakeConfig) -> FakeConfig,
) -> Fx {
    let fx = Fx::with(|c| {
        let c = match wire {
            Wire::Responses => c.set("api", "responses"),
            Wire::Anthropic => FakeConfig::anthropic(&base_of(&c)).set("retries", 0),
        };
        let c = c.merge_model_toml("compaction.keep_turns = 1").unwrap();
        tune(match native {
            Some(n) => c.set("compaction_native", n),
            None => c,
        })
    });
    fx.fake.native_compaction(serve);
    fx
}

/// The `base_url` a fake config was written with.
fn base_of(c: &FakeConfig) -> String {
    let text = c.to_toml().unwrap();
    let line = text.lines().find(|l| l.starts_with("base_url = ")).unwrap();
    line["base_url = ".len()..].trim_matches('"').to_owned()
}

pub(crate) fn compactions(fx: &Fx) -> Vec<Value> {
    records(&fx.session())
        .into_iter()
        .filter(|r| r["type"] == "compaction")
        .collect()
}

pub(crate) fn summarizer_requests(fx: &Fx) -> Vec<RecordedRequest> {
    fx.chats()
        .into_iter()
        .filter(RecordedRequest::is_summarizer)
        .collect()
}

/// The native items a request carries, in order: Responses `compaction`
/// items, Anthropic `compaction` blocks.
pub(crate) fn carried(r: &RecordedRequest) -> Vec<Value> {
    if !r.is_anthropic() {
        r.input()
            .into_iter()
            .filter(|i| i["type"] == "compaction")
            .collect()
    } else {
        r.messages()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "compaction")
            .collect()
    }
}

/// What the user was told: stderr, and the `warning` events of `--json`.
pub(crate) fn said(o: &std::process::Output) -> String {
    let mut out = stderr(o);
    for e in json_lines(&o.stdout) {
        if e["type"] == "warning" {
            out.push_str(e["message"].as_str().unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

/// The limits cache (`limits.json`), where a fallback is remembered.
pub(crate) fn limits(fx: &Fx) -> String {
    std::fs::read_to_string(fx.sb.data.join("limits.json")).unwrap_or_default()
}

#[test]
fn off_by_default_auto_compacts_natively_and_every_later_request_carries_the_item() {
    // Off by default: the fake offers it, eonyx's own summarizer writes.
    let off = fx(Wire::Responses, None, NativeCompact::Works);
    let o = off.run(&["--json"], "one\ntwo\n/compact\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(off.fake.native_calls().is_empty());
    assert_eq!(summarizer_requests(&off).len(), 1);
    assert!(compactions(&off)[0].get("native").is_none());

    let on = fx(Wire::Responses, Some("auto"), NativeCompact::Works);
    let o = on.run(
        &["--json"],
        "one CODEWORD-ONE\ntwo\n/compact\nthree\n/compact\nfour\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(on.fake.refusals(), 0, "{}", stderr(&o));
    // One compact call per compaction, no summarizer at all.
    let calls = on.fake.native_calls();
    assert_eq!(calls.len(), 2);
    assert!(summarizer_requests(&on).is_empty());
    let saved = compactions(&on);
    assert_eq!(saved.len(), 2);
    let issued = on.fake.native_issued();
    assert_eq!(issued.len(), 2);
    for (c, item) in saved.iter().zip(&issued) {
        assert_eq!(c["native"]["provider"], "responses");
        assert_eq!(c["native"]["model"], "fake-model");
        let items = c["native"]["items"].as_array().unwrap();
        assert_eq!(
            items.last(),
            Some(item),
            "the record keeps the items as returned"
        );
        let n = item["encrypted_content"].as_str().unwrap().len();
        assert!(
            c["summary"]
                .as_str()
                .unwrap()
                .contains(&format!("[compacted by the provider: opaque, {n} bytes]")),
            "{c}"
        );
        assert!(c["usage"]["prompt_tokens"].as_u64().unwrap() > 0, "{c}");
    }
    // The compact call: the request's model, instructions, tools and
    // cache key with the part to compact; nothing a /responses request
    // has besides (the fake refuses unknown parameters).
    let agent = on.agent_requests();
    let first = &calls[0].body;
    assert_eq!(first["model"], agent[0].body["model"]);
    assert_eq!(first["instructions"], agent[0].body["instructions"]);
    assert_eq!(first["tools"], agent[0].body["tools"]);
    assert_eq!(first["prompt_cache_key"], agent[0].body["prompt_cache_key"]);
    assert!(first.get("stream").is_none() && first.get("store").is_none());
    // The second compacts the first's items too.
    assert_eq!(carried(&calls[1]), vec![issued[0].clone()]);
    // Every request after a compaction starts with that compaction's items.
    let after_first = agent
        .iter()
        .skip_while(|r| carried(r).is_empty())
        .collect::<Vec<_>>();
    assert_eq!(after_first.len(), 2, "three and four");
    assert_eq!(carried(after_first[0]), vec![issued[0].clone()]);
    assert_eq!(carried(after_first[1]), vec![issued[1].clone()]);
    // The record's items, as returned (the retained user messages and the
    // compaction item), are the first input items.
    let items = saved[1]["native"]["items"].as_array().unwrap();
    assert_eq!(after_first[1].input()[..items.len()], items[..]);
    assert!(
        !after_first[1]
            .system_text()
            .contains("# Summary of earlier conversation")
    );
    // The raw bytes of the item are the same in every request that carries it.
    let raw = serde_json::to_string(&issued[1]).unwrap();
    assert!(after_first[1].raw_body.contains(&raw));
    // `--json`: the compaction events say they were native.
    let events = json_lines(&o.stdout);
    let native_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert!(!native_events.is_empty());
    assert!(
        native_events.iter().all(|e| e["native"] == true),
        "{events:#?}"
    );
}

#[test]
fn auto_compaction_at_the_trigger_is_native_once_per_compaction_and_never_overflows() {
    const WINDOW: u64 = 8192;
    let fx = Fx::with(|c| {
        c.set("api", "responses")
            .set("compaction_native", "auto")
            .set("context_window", WINDOW as i64)
            .merge_model_toml("compaction.threshold_percent = 60\ncompaction.keep_turns = 1")
            .unwrap()
    });
    fx.fake
        .native_compaction(NativeCompact::Works)
        .set_context_window(Some(WINDOW));
    let lines: Vec<String> = (1..=14).map(|n| crate::compaction::line(n, 720)).collect();
    let o = fx.run(&["--json"], &(lines.join("\n") + "\n"));
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0, "{}", stderr(&o));
    let saved = compactions(&fx);
    assert!(!saved.is_empty(), "the trigger fired");
    assert!(saved.iter().all(|c| c["native"]["provider"] == "responses"));
    assert_eq!(fx.fake.native_calls().len(), saved.len());
    assert!(summarizer_requests(&fx).is_empty());
    for r in fx.chats() {
        assert!(r.prompt_tokens <= WINDOW, "{} tokens sent", r.prompt_tokens);
    }
    // No summary is written ahead with native compaction on.
    assert!(
        !records(&fx.session())
            .iter()
            .any(|r| r["type"] == "summary_draft")
    );
}

#[test]
fn anthropic_sends_the_signed_block_first_with_the_beta_header_and_counts_its_usage() {
    let fx = fx(Wire::Anthropic, Some("auto"), NativeCompact::Works);
    let o = fx.run(
        &["--json"],
        "one CODEWORD-ONE\ntwo\n/compact\nthree\n/status\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0, "{}", stderr(&o));
    // `/status` says the last compaction was native.
    let events = json_lines(&o.stdout);
    let status = events.iter().find(|e| e["type"] == "status").unwrap();
    assert_eq!(status["last_compaction"]["native"], true, "{status}");
    let calls = fx.fake.native_calls();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.body["compaction"]["type"], "summarize");
    assert!(
        call.body["compaction"]["instructions"]
            .as_str()
            .unwrap()
            .contains("goal, plan and running jobs")
    );
    assert!(
        call.header("anthropic-beta")
            .unwrap()
            .contains(COMPACTION_BETA)
    );
    let issued = fx.fake.native_issued();
    let last = fx.agent_requests().pop().unwrap();
    // First content of the first message, byte for byte, with the header.
    assert_eq!(last.messages()[0]["content"][0], issued[0]);
    assert!(
        last.header("anthropic-beta")
            .unwrap()
            .contains(COMPACTION_BETA)
    );
    assert!(
        last.raw_body
            .contains(&serde_json::to_string(&issued[0]).unwrap())
    );
    // The record: the block, Anthropic's text as the summary, the usage
    // of `usage.iterations`.
    let c = &compactions(&fx)[0];
    assert_eq!(c["native"]["provider"], "anthropic");
    assert_eq!(c["native"]["items"][0], issued[0]);
    let text = issued[0]["content"].as_str().unwrap();
    assert!(text.contains("CODEWORD-ONE"), "{text}");
    assert!(c["summary"].as_str().unwrap().starts_with(text));
    assert!(c["usage"]["prompt_tokens"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(c["usage"]["completion_tokens"], 64);
    // `sessions show` says it was native and shows the provider's text.
    let id = crate::agent::session_id_of(&fx.session());
    let shown = fx.run(&["sessions", "show", &id], "");
    let shown = stdout(&shown);
    assert!(shown.contains("native, by anthropic fake-model"), "{shown}");
    assert!(shown.contains(text), "{shown}");
    // The Markdown export too.
    let md = fx.run(&["sessions", "export", &id, "--format", "markdown"], "");
    let md = stdout(&md);
    assert!(md.contains("· native (anthropic, fake-model)"), "{md}");
    assert!(md.contains("Compacted by the provider"), "{md}");
}

#[test]
fn the_goal_and_the_plan_follow_the_items_after_a_native_compaction() {
    let fx = Fx::with(|c| {
        c.set("api", "responses")
            .set("compaction_native", "auto")
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap()
            .merge_top_toml("[goals]\nmax_turns = 2")
            .unwrap()
    });
    fx.fake.native_compaction(NativeCompact::Works);
    fx.fake.push_all([
        Reply::plan(&[
            ("read the fixtures", "completed"),
            ("fix the CODEWORD-STEP tokenizer", "in_progress"),
        ]),
        Reply::text("on it"),
    ]);
    let input = format!("/goal {GOAL}\n/compact\nsomething else\n/compact\nwhere are we?\n");
    let o = fx.run(&["--json"], &input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0, "{}", stderr(&o));
    assert_eq!(fx.fake.native_calls().len(), 2);
    let last = fx.agent_requests().pop().unwrap();
    let input = last.input();
    let saved = compactions(&fx);
    let items = saved.last().unwrap()["native"]["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(input[..items.len()], items[..]);
    assert_eq!(items.last(), fx.fake.native_issued().last());
    // Then eonyx's pinned section as its own message, then the kept turns.
    let pinned = input
        .iter()
        .position(|i| {
            i["role"] == "user"
                && i["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("## Goal (kept verbatim by eonyx)"))
        })
        .expect("the pinned section");
    let text = input[pinned]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(GOAL), "{text}");
    assert!(
        text.contains("- [in_progress] fix the CODEWORD-STEP tokenizer"),
        "{text}"
    );
    assert!(
        input[..pinned].iter().any(|i| i["type"] == "compaction"),
        "the items come first"
    );
    assert!(
        last.user_texts()
            .last()
            .is_some_and(|t| t.contains("where are we?"))
    );
}

#[test]
fn a_running_job_follows_the_items_after_a_native_compaction() {
    let fx = fx(Wire::Responses, Some("auto"), NativeCompact::Works);
    fx.fake.push_all([
        Reply::tool_call(
            "shell",
            json!({"command": "sleep 9875301", "background": true}),
        ),
        Reply::text("started"),
    ]);
    let input = "start the server\nsecond\n/compact\nthird\n/compact\nwhere are we?\n";
    let o = fx.run(&["--allow-shell", "--json"], input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0, "{}", stderr(&o));
    assert_eq!(fx.fake.native_calls().len(), 2, "{}", stderr(&o));
    assert!(summarizer_requests(&fx).is_empty());
    let saved = compactions(&fx);
    assert_eq!(saved.last().unwrap()["jobs"][0]["command"], "sleep 9875301");
    // Every request after the first compaction names the job: the last
    // one through eonyx's pinned section after the provider's items.
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 5, "{}", stderr(&o));
    for r in &reqs[2..] {
        assert!(r.all_text().contains("sleep 9875301"), "{}", r.all_text());
    }
    let input = reqs.last().unwrap().input();
    let pinned = input
        .iter()
        .position(|i| {
            i["role"] == "user"
                && i["content"][0]["text"].as_str().is_some_and(|t| {
                    t.contains("## Background jobs running at this compaction (kept verbatim by eonyx)\n- job 1: sleep 9875301 (started ")
                })
        })
        .unwrap_or_else(|| panic!("no pinned job in {input:#?}"));
    assert!(
        input[..pinned].iter().any(|i| i["type"] == "compaction"),
        "the items come first"
    );
    // Nothing else carries it: the turn that started it was compacted.
    let others = input
        .iter()
        .enumerate()
        .filter(|(n, i)| *n != pinned && i.to_string().contains("sleep 9875301"))
        .count();
    assert_eq!(others, 0, "{input:#?}");
}

#[test]
fn run_c_after_a_native_compaction_sends_the_same_bytes() {
    for wire in [Wire::Responses, Wire::Anthropic] {
        let fx = fx(wire, Some("auto"), NativeCompact::Works);
        let o = fx.run(&[], "one\ntwo\n/compact\nthree\n");
        assert_eq!(code(&o), Some(0), "{wire:?}: {}", stderr(&o));
        let before = fx.agent_requests().pop().unwrap();
        let o = fx.run(&["-c"], "four\n");
        assert_eq!(code(&o), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fx.fake.refusals(), 0, "{wire:?}");
        let after = fx.agent_requests().pop().unwrap();
        let item = serde_json::to_string(&fx.fake.native_issued()[0]).unwrap();
        assert!(before.raw_body.contains(&item), "{wire:?}");
        assert!(after.raw_body.contains(&item), "{wire:?}");
        // The resumed request extends the live one: same items, same
        // messages before "four".
        let key = if wire == Wire::Responses {
            "input"
        } else {
            "messages"
        };
        let b = before.body[key].as_array().unwrap();
        let a = after.body[key].as_array().unwrap();
        assert!(a.len() > b.len(), "{wire:?}");
        // The last block's cache breakpoint moves on Anthropic: compare
        // all but the last message.
        assert_eq!(a[..b.len() - 1], b[..b.len() - 1], "{wire:?}");
    }
}

#[test]
fn model_switch_to_another_provider_drops_the_items_for_eonyx_own_summary() {
    let fx = fx(Wire::Responses, Some("auto"), NativeCompact::Works);
    let base = fx.fake.base_url();
    let path = fx.sb.config.join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[models.claude]\nprovider = \"anthropic\"\nbase_url = \"{base}\"\nname = \"claude-model\"\ncontext_window = 32768\nmax_output_tokens = 256\nretries = 0\n"
    ));
    std::fs::write(&path, text).unwrap();
    let o = fx.run(
        &[],
        "one CODEWORD-ONE\ntwo\n/compact\nthree\n/model claude\nfour\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 0, "{}", stderr(&o));
    let err = said(&o);
    assert!(err.contains("compacted natively by another model"), "{err}");
    let summaries = summarizer_requests(&fx);
    assert_eq!(summaries.len(), 1);
    assert!(summaries[0].is_anthropic());
    assert!(summaries[0].all_text().contains("CODEWORD-ONE"));
    let last = fx.agent_requests().pop().unwrap();
    assert!(last.is_anthropic());
    assert!(carried(&last).is_empty());
    assert!(
        last.system_text()
            .contains("# Summary of earlier conversation")
    );
    assert!(
        last.header("anthropic-beta")
            .is_none_or(|b| !b.contains(COMPACTION_BETA))
    );
    let saved = compactions(&fx);
    assert_eq!(saved.len(), 2);
    assert!(saved[1].get("native").is_none());
}

#[test]
fn chat_completions_never_tries_it() {
    let fx = Fx::with(|c| {
        c.set("compaction_native", "auto")
            .merge_model_toml("compaction.keep_turns = 1")
            .unwrap()
    });
    fx.fake.native_compaction(NativeCompact::Works);
    let o = fx.run(&[], "one\ntwo\n/compact\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(fx.fake.native_calls().is_empty());
    assert_eq!(summarizer_requests(&fx).len(), 1);
    assert!(!said(&o).contains("native compaction"));
}
