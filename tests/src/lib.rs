//! Test support for eonyx: a fake model server and helpers for running the
//! real `eonyx` binary against it.
//!
//! [`FakeServer`] speaks OpenAI Chat Completions (`POST /v1/chat/completions`),
//! Anthropic Messages (`POST /v1/messages`) and, when asked, llama.cpp's
//! `GET /props` and `GET /v1/models`, on `127.0.0.1:<random port>` with its
//! own tokio runtime. Tests script replies ([`Reply`]), inject faults, set a
//! context window, and assert on every request it recorded
//! ([`RecordedRequest`]).
//!
//! Invariants:
//! - Every request is recorded, in arrival order, before it is answered
//!   (rejected ones included).
//! - Checks run in this order: API key (401), context window (400 with the
//!   provider's real overflow body), then the responder hook, then the
//!   queue, then the default reply. Only a reply taken from the queue
//!   consumes it; a rejected request never does.
//! - The fake's tokenizer is deliberately not eonyx's: one token per 3
//!   characters of every JSON string in `system`, `messages` and `tools`,
//!   plus 4 per message (see [`count_prompt_tokens`]). Cached tokens are the
//!   common prefix with the previous answered request's canonical prompt,
//!   divided by 3 — a prompt cache that only hits on append-only prompts.
//! - Anthropic usage follows the real API: `input_tokens` excludes
//!   `cache_read_input_tokens`.
//! - Nothing touches the real home or data directory: [`Sandbox`] (and its
//!   UTF-8 view [`TestEnv`]) points HOME, EONYX_DATA_DIR, EONYX_CONFIG_DIR
//!   and XDG_STATE_HOME at temporary directories and clears one list of
//!   inherited variables ([`CLEARED_ENV`]).
//!
//! [`ScriptedProvider`] is the in-process provider for unit tests and
//! benches; [`mod@bench`] is the harness every bench prints its
//! `BENCH|measure|ours|baseline|ratio|goal` lines with.

pub mod bench;
mod config;
pub mod http;
pub mod mcp_server;
mod paced;
mod recorded;
mod reply;
mod sandbox;
mod scripted;
mod server;
mod serving;
mod tokens;
mod turns;
pub mod web_server;
mod wire;

pub use config::{
    ConfigWriteError, FAKE_CONTEXT_WINDOW, FAKE_MODEL_KEY, FAKE_MODEL_NAME, FakeConfig,
    write_anthropic_config, write_config,
};
pub use paced::Paced;
pub use recorded::RecordedRequest;
pub use reply::{FakeToolCall, HOLD_LIMIT, Reply, UsageOverride};
pub use sandbox::{CLEARED_ENV, CLEARED_ENV_PREFIXES, Sandbox, TestEnv};
pub use scripted::{ResponderFn, ScriptedProvider, Step, StepFn};
pub use server::{
    COMPACTION_BETA, FORGETFUL_SUMMARY, FakeServer, Moment, NO_MEMORIES, NativeCompact, Ollama,
    Refuse, Responder, Span,
};
pub use tokens::{
    FAKE_CHARS_PER_TOKEN, FAKE_TOKENS_PER_MESSAGE, count_prompt_tokens, count_text_tokens,
};
pub use turns::run_turns;
pub use web_server::{Served, WebReply, WebRequest, WebServer};
pub use wire::{OverflowFlavor, encrypted_of, signature_of};

/// Append to the session file `path` a message record `seq` cut off
/// mid-line, as a crash during a write leaves it (a torn tail).
pub fn tear_tail(path: &std::path::Path, seq: u64) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    write!(f, r#"{{"type":"message","seq":{seq},"ts":"2026-"#)
}

#[cfg(test)]
mod selftest;
