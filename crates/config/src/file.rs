//! The config files as written: every field optional, unknown keys
//! rejected (`deny_unknown_fields`). [`crate::load()`] merges them into a
//! [`crate::Config`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use eonyx_core::config::{NativeMode, OpenAiApi, ReasoningEffort, ReasoningSummary};

use crate::{
    EditMode, McpApproval, ProviderKind, SandboxBackend, SandboxMode, ShellPolicy, WritePolicy,
};

/// `[compaction]` as written in a file: every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionFile {
    pub auto: Option<bool>,
    pub prune: Option<bool>,
    pub threshold_percent: Option<f64>,
    /// Background summaries from this percent of the window (0 = off);
    /// unset = `threshold_percent` − 10.
    pub ahead_percent: Option<f64>,
    pub buffer_tokens: Option<u64>,
    pub keep_turns: Option<u32>,
    pub keep_tokens: Option<u64>,
    pub summary_max_tokens: Option<u32>,
    pub chars_per_token: Option<f64>,
    pub image_tokens: Option<u64>,
    pub tool_result_budget_chars: Option<u64>,
    pub keep_recent_results: Option<u32>,
    pub max_consecutive: Option<u32>,
    pub model: Option<String>,
    /// Summarizer temperature; unset = the summarizer's default (0.1).
    /// Safe for an untrusted project: it only changes the summary's style.
    pub temperature: Option<f32>,
    /// The summarizer's reasoning effort (default `low`).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `"off"` | `"auto"`: whether the provider may compact itself
    /// (docs/compaction.md#native-compaction).
    pub native: Option<NativeMode>,
    /// The budget of `## What the user said` (docs/compaction.md#what-the-user-said);
    /// unset = a fifth of the window, at most 20,000; 0 = off. Safe for an
    /// untrusted project: it only sizes the prompt.
    pub user_words_tokens: Option<u64>,
}

/// `[context]` as written in a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    pub max_file_bytes: Option<u64>,
    pub max_total_bytes: Option<u64>,
}

/// `[skills]` as written in a file. Both keys only size the prompt, so an
/// untrusted project's `eonyx.json` may set them (they cannot send anything
/// anywhere or widen a permission).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsFile {
    pub max_listed_bytes: Option<u64>,
    pub max_reloaded_bytes: Option<u64>,
}

/// `[tools]` as written in a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    pub shell: Option<ShellPolicy>,
    pub output_cap_bytes: Option<u64>,
    pub shell_timeout_secs: Option<u64>,
    /// `write_file` / `edit_file`. Never settable by an untrusted project
    /// (not even to a stricter value): dropped with a warning.
    pub write: Option<WritePolicy>,
    /// Files larger than this are not edited. Safe for an untrusted
    /// project: a guard against huge diffs, not a permission.
    pub max_edit_bytes: Option<u64>,
    /// Background jobs running at once per session (docs/tools.md#jobs).
    /// Safe for an untrusted project: a limit, not a permission.
    pub max_jobs: Option<u32>,
    /// A job's log keeps at most this many bytes (its first MiB and the
    /// newest bytes past it). Safe for an untrusted project.
    pub job_log_max_bytes: Option<u64>,
    /// Safe for an untrusted project: it can only take a tool away.
    pub recall: Option<bool>,
    /// How `shell` commands are confined (docs/using-tools.md, section "Sandbox"). An
    /// untrusted project may set only `"read-only"`.
    pub sandbox: Option<SandboxMode>,
    /// Not from an untrusted project: a backend that does not work here
    /// would mean running unconfined.
    pub sandbox_backend: Option<SandboxBackend>,
    /// More directories commands may write (absolute). Not from an
    /// untrusted project.
    pub sandbox_writable: Option<Vec<String>>,
    /// An untrusted project may only turn the network off.
    pub sandbox_network: Option<bool>,
    /// An untrusted project may only turn it on.
    pub sandbox_required: Option<bool>,
    /// Images (`@image.png`, `run --image`) larger than this are refused
    /// before anything is sent. A size limit, not a permission: safe for an
    /// untrusted project.
    pub max_image_bytes: Option<u64>,
    /// The `task` tool (docs/using-tools.md, section "Tasks"). An untrusted project may
    /// only turn it off.
    pub task: Option<bool>,
    /// `web_fetch` permission (docs/tools.md#web-fetch). An untrusted
    /// project may only make it stricter than the user's.
    pub web_fetch: Option<eonyx_core::config::WebFetchPolicy>,
    /// Bytes of a page read at most. A limit: safe for an untrusted project.
    pub web_fetch_max_bytes: Option<u64>,
    /// The bound on a whole fetch. A limit: safe for an untrusted project.
    pub web_fetch_timeout_secs: Option<u64>,
    /// Hosts fetched without asking. Not from an untrusted project.
    pub web_fetch_domains: Option<Vec<String>>,
    /// `host:port` entries that may be private addresses. Not from an
    /// untrusted project.
    pub web_fetch_private_hosts: Option<Vec<String>>,
}

/// `[tasks]` as written in a file (docs/using-tools.md, section "Tasks").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksFile {
    /// How deep tasks may nest: 1 = the main agent may start tasks, its
    /// children may not. Not from an untrusted project (a deeper tree
    /// gives children a tool they would not have).
    pub max_depth: Option<u32>,
    /// `task` calls of one step that run at once. Safe for an untrusted
    /// project: a limit, like `max_steps`.
    pub max_parallel: Option<u32>,
}

/// `[goals]` as written in a file (docs/goals.md, section "Goals").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalsFile {
    /// Continuation turns a goal may use before it stops
    /// (`budget_limited`). Safe for an untrusted project: a limit.
    pub max_turns: Option<u32>,
}

/// `[memory]` as written in a file (docs/memory.md, section "Using memory").
///
/// Trust: an untrusted project's `eonyx.json` may set `enabled = false`
/// (turning memory off is always safe) and `max_bytes` (a cap, like the
/// context caps), never `enabled = true` over the user's `false`. There is
/// no key for where memory lives: it is always `<data dir>/memory/`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryFile {
    pub enabled: Option<bool>,
    pub max_bytes: Option<u64>,
    /// Mining past sessions (docs/memory.md#mining): an untrusted
    /// project may only set `"off"`.
    pub mine: Option<crate::MineMode>,
    pub mine_idle_hours: Option<f64>,
    pub mine_min_user_messages: Option<u32>,
    pub mine_per_start: Option<u32>,
    pub mine_model: Option<String>,
    pub mine_budget_tokens: Option<u64>,
}

/// `[repl]` as written in a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplFile {
    /// Safe for an untrusted project: only changes key bindings.
    pub edit_mode: Option<EditMode>,
    /// Safe for an untrusted project: it can only turn history off
    /// (`true` from a project does not override a global `false`).
    pub history: Option<bool>,
    /// Not from an untrusted project: the history is shared by all
    /// projects, and a small bound would cut it for all of them.
    pub history_size: Option<usize>,
}

/// `[ui]` as written in a file. Display only: an untrusted project may set it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiFile {
    /// How the REPL shows a model's reasoning (`show`, `fold`, `hide`).
    pub reasoning: Option<crate::ReasoningDisplay>,
}

/// `[mcp]` as written in a file (docs/mcp.md#deferred-schemas).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpFile {
    pub defer_above_tokens: Option<u64>,
}

/// `[mcp_servers.<name>]` as written in a file (docs/mcp.md#configuration).
/// Every field is optional so a trusted project can change one field of a
/// server the global config defines. None of these keys is on the
/// untrusted allow-list: a server runs a program or reaches a URL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerFile {
    /// stdio: the program to run.
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    /// Streamable HTTP: the endpoint.
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub bearer_token_env_var: Option<String>,
    pub enabled: Option<bool>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    pub startup_timeout_secs: Option<u64>,
    pub tool_timeout_secs: Option<u64>,
    pub required: Option<bool>,
    pub approval: Option<McpApproval>,
}

/// `[models.<key>]` as written in a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub provider: Option<ProviderKind>,
    pub base_url: Option<String>,
    pub name: Option<String>,
    pub api_key_env: Option<String>,
    pub context_window: Option<u64>,
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub temperature: Option<f32>,
    pub retries: Option<u32>,
    pub connect_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    /// `"chat"` | `"responses"`, openai only (docs/providers.md#the-responses-api).
    pub api: Option<OpenAiApi>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub thinking_budget_tokens: Option<u64>,
    pub reasoning_summary: Option<ReasoningSummary>,
    pub compaction: Option<CompactionFile>,
    pub pricing: Option<PricingFile>,
    /// `"off"` | `"auto"`: wins over `compaction.native`
    /// (docs/compaction.md#native-compaction).
    pub compaction_native: Option<NativeMode>,
}

/// `models.<key>.pricing` as written: USD per million tokens (docs/sessions.md,
/// section "Cost"). `input` and `output` are required; cached and
/// cache-written prompt tokens cost `input` unless their price is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PricingFile {
    pub input: Option<f64>,
    pub cached_input: Option<f64>,
    pub output: Option<f64>,
    pub cache_write: Option<f64>,
}

/// `[profiles.<name>]` as written in a file: what `--profile NAME` and a
/// `task` with `profile: NAME` run with. A profile of a built-in name
/// (`explore`, `general`) is merged over the built-in field by field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    /// One line for the `task` tool's description (which profile to pick).
    pub description: Option<String>,
    /// Instructions added to a task child's system prompt.
    pub instructions: Option<String>,
    /// Allow-list of tool names (unset: every tool the parent has). Only
    /// ever narrows; not from an untrusted project, which could otherwise
    /// hand `explore` the shell.
    pub tools: Option<Vec<String>>,
    pub model: Option<String>,
    pub compaction: Option<CompactionFile>,
}

/// A whole config file (global `config.toml` or project `eonyx.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Default model key.
    pub model: Option<String>,
    pub max_steps: Option<u32>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelFile>,
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileFile>,
    pub compaction: Option<CompactionFile>,
    pub context: Option<ContextFile>,
    pub tools: Option<ToolsFile>,
    pub memory: Option<MemoryFile>,
    pub repl: Option<ReplFile>,
    pub ui: Option<UiFile>,
    pub skills: Option<SkillsFile>,
    pub mcp: Option<McpFile>,
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerFile>,
    pub tasks: Option<TasksFile>,
    /// Commands run at points of the agent's life (docs/hooks.md). Never
    /// run from an untrusted project.
    pub hooks: Option<crate::hooks::HooksFile>,
    pub goals: Option<GoalsFile>,
    /// Permission rules (docs/tools.md#permission-rules). An untrusted
    /// project's `allow` rules are ignored (one warning); its `deny` and
    /// `ask` rules apply.
    pub permissions: Option<crate::permissions::PermissionsFile>,
    /// Project roots whose `eonyx.json` may set any key (untrusted, only
    /// [`crate::trust::UNTRUSTED_MAY_SET`]). Only honoured in the global file.
    #[serde(default)]
    pub trusted_projects: Vec<String>,
}
