//! The eonyx agent: the turn loop that composes store, prompt, compact,
//! provider, mcp, sandbox and the built-in tools (`eonyx-tools`).
//!
//! Invariants:
//! - Every message is appended to the session file (and fsynced) before the
//!   turn continues; an append error aborts the turn ("never past the disk").
//! - The compaction trigger is checked before every provider step, including
//!   steps inside a tool loop.
//! - A context overflow on an uncompacted step is compacted and retried at
//!   most once; never a loop.
//! - Every tool call in the session file gets a result, even when the step is
//!   interrupted, so a resumed session is always consistent.
//! - The agent never prints: it reports through [`AgentEvent`]s.
//! - Every tool result passes through [`secrets::Redactor::scrub`] before it
//!   is saved or sent: a provider key's value is stored as `[redacted: NAME]`.

mod agent;
pub mod attach;
pub mod commands;
pub mod confinement;
pub mod cost;
mod effective;
mod error;
mod events;
pub mod limits;
pub mod mcp;
pub mod mining;
mod native;
pub mod permission_rules;
pub mod pins;
pub mod prompt;
pub mod rewind;
pub mod secrets;
mod truncation;

/// The built-in tools (crate `eonyx-tools`), as the agent runs them.
pub use eonyx_tools as tools;

pub use agent::{
    Agent, AgentOptions, AgentStatus, Approvers, COMMAND_HEADER, CommandRun, ContextStatus,
    DraftDone, DraftJob, GoalChange, HookState, LastCompaction, MAX_STOP_BLOCKS, McpState,
    ModelInfo, ModelSwitch, RewindOptions, SessionChoice, SessionGoal, SessionJobs, SessionTokens,
    TurnOutcome, UserInput,
};
pub use effective::{EffectiveRequest, effective_request};
/// The hooks crate, for what frontends pass the agent (`StartSource`).
pub use eonyx_hooks as hooks;
pub use error::{AgentError, InvalidRequest, Status, UsageError, class_of};
pub use events::{AgentEvent, Events};
pub use prompt::{PromptReport, ToolSizes, context_report};
