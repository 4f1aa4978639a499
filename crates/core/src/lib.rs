//! Shared vocabulary of eonyx.
//!
//! Everything the other crates exchange is defined here: messages and their
//! parts, the JSONL record types of a session file, session ids, token
//! estimation, the resolved config values the lower crates take
//! ([`config`]; loading them is `eonyx-config`'s), the environment snapshot
//! and the project-root walk ([`paths`]) and the provider trait with its
//! request, stream-event and error types.
//!
//! Invariants: `core` does no network I/O, never prints, and depends on no
//! other eonyx crate. Every type that appears in a session file round-trips
//! through serde without losing fields (unknown fields are kept in `extra`).

pub mod config;
pub mod cost;
pub mod fs;
pub mod goal;
pub mod hooks;
pub mod id;
pub mod job;
pub mod memory;
pub mod message;
pub mod native;
pub mod paths;
pub mod permissions;
pub mod pin;
pub mod plan;
pub mod provider;
pub mod record;
pub mod said;
pub mod text;
pub mod time;
pub mod timeline;
pub mod tokens;
pub mod tool;

pub use config::{CompactionConfig, McpConfig, McpServerConfig, ModelConfig};
pub use id::{SessionId, SessionIdError};
pub use message::{Content, Message, Part, Reasoning, ReasoningApi, Role, ToolCall, Undo, Usage};
pub use native::{NativeCompaction, NativeProvider};
pub use provider::{
    ChatRequest, ChatResponse, FinishReason, JsonSchema, MINER_SYSTEM_PREFIX, Provider,
    ProviderError, StreamEvent, SystemPrompt, ToolDef,
};
pub use record::{
    CompactionMode, CompactionRecord, CompactionTrigger, ForkedFrom, MessageRecord, ModelRecord,
    Record, RewindRecord, SessionHeader, SummaryDraftRecord, TitleRecord,
};
pub use tool::{ShellOutcome, ToolName};
