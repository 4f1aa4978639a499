//! Tests of the view, the plan, the summarizer request and `compact`, with a
//! scripted provider.

use std::sync::{Arc, Mutex};

use eonyx_core::provider::SUMMARIZER_SYSTEM_PREFIX;
use eonyx_core::{
    ChatRequest, CompactionConfig, CompactionRecord, CompactionTrigger, Message, MessageRecord,
    Provider, ProviderError, Role, SummaryDraftRecord, SystemPrompt, ToolCall, Usage,
};
use eonyx_tests::{ScriptedProvider, Step};
use serde_json::json;

use crate::*;

mod ahead;
mod compacting;
mod plan;
mod reserve;
mod shared_prefix;
mod simulation;
mod summary;
mod view;

// ---------- helpers ----------

struct Hist {
    seq: u64,
    recs: Vec<MessageRecord>,
}

impl Hist {
    fn new() -> Self {
        Self {
            seq: 0,
            recs: Vec::new(),
        }
    }
    fn push(&mut self, m: Message) -> MessageRecord {
        self.seq += 1;
        let r = MessageRecord {
            seq: self.seq,
            ts: String::new(),
            message: m,
        };
        self.recs.push(r.clone());
        r
    }
    fn user(&mut self, t: &str) -> MessageRecord {
        self.push(Message::user(t))
    }
    fn say(&mut self, t: &str) -> MessageRecord {
        self.push(Message::assistant(t))
    }
    /// An assistant message with one call and its result.
    fn tool(&mut self, name: &str, args: serde_json::Value, out: &str) -> [MessageRecord; 2] {
        let id = format!("call{}", self.seq + 1);
        let mut a = Message::assistant("");
        a.tool_calls.push(ToolCall {
            id: id.clone(),
            name: name.into(),
            arguments: args,
        });
        [self.push(a), self.push(Message::tool_result(id, out))]
    }
}

fn cfg() -> CompactionConfig {
    CompactionConfig::default()
}

fn view_of(h: &Hist, c: &CompactionConfig, cap: u64) -> ContextView {
    let mut v = ContextView::new(c, cap);
    for r in &h.recs {
        v.push(r.clone());
    }
    v
}

fn texts(v: &ContextView) -> Vec<String> {
    v.messages().iter().map(|m| m.content.text()).collect()
}

fn collapsed(v: &ContextView) -> usize {
    texts(v)
        .iter()
        .filter(|t| t.starts_with("[tool result collapsed"))
        .count()
}

/// A provider that answers from a script and records the requests.
fn scripted(replies: Vec<Result<&str, ProviderError>>) -> ScriptedProvider {
    ScriptedProvider::new(replies.into_iter().map(|r| match r {
        Ok(text) => Step::text(text),
        Err(e) => Step::Fail(e),
    }))
}

/// A provider that never answers (and ignores its cancel token).
fn hang() -> ScriptedProvider {
    ScriptedProvider::answering(|_| Step::Hang).named("hang")
}

const SUMMARY: &str = "## Active goal\nship it\n## Constraints and preferences\nnone\n## Progress\nnone\n## Decisions\nnone\n## Changed files\nnone\n## Open tasks and next steps\nnone\n## Critical context\nnone";

async fn run_compact(
    p: &dyn Provider,
    v: &ContextView,
    plan: Plan,
    focus: Option<&str>,
    cancel: CancellationToken,
) -> Result<CompactionRecord, CompactError> {
    let e = Estimator::new(4.0, 4096);
    let cfg = cfg();
    let input = CompactInput {
        model_name: "m",
        view: v,
        plan: &plan,
        cfg: &cfg,
        focus,
        trigger: CompactionTrigger::Manual,
        estimator: &e,
        window: 100_000,
        system_chars: 1000,
        next: None,
        pinned: crate::Pinned::Nothing,
        said_note: None,
    };
    compact(p, input, &mut |_| {}, cancel).await
}

/// `turns` user turns, each with `tools` tool exchanges and a final answer.
fn session(turns: usize, tools: usize, out: usize) -> Hist {
    let mut h = Hist::new();
    for t in 0..turns {
        h.user(&format!("request {t}"));
        for i in 0..tools {
            h.tool(
                "read_file",
                json!({"path": format!("t{t}_{i}")}),
                &"r".repeat(out),
            );
        }
        h.say(&format!("answer {t}"));
    }
    h
}

fn est() -> Estimator {
    Estimator::new(4.0, 4096)
}
