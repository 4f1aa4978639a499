//! Resolved configuration values that the lower crates take as plain
//! values: the model (`provider`), compaction settings (`compact`), the
//! context-file and skill caps (`prompt`), the shell sandbox (`sandbox`).
//! Reading, merging and validating
//! the config files lives in `eonyx-config`, which resolves these types
//! (docs/config.md, section "Configuration reference").

use serde::{Deserialize, Serialize};

mod compaction;

pub use compaction::{CompactionConfig, NativeMode};

/// Fallback context window when neither config nor server says (docs/compaction.md#window).
pub const FALLBACK_CONTEXT_WINDOW: u64 = 120_000;

/// Which wire protocol a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions compatible.
    #[default]
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

/// `models.<key>.api`: which OpenAI wire a `provider = "openai"` model
/// speaks (docs/providers.md#the-responses-api).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenAiApi {
    /// `POST <base_url>/chat/completions`.
    Chat,
    /// `POST <base_url>/responses`.
    Responses,
}

impl OpenAiApi {
    pub fn as_str(self) -> &'static str {
        match self {
            OpenAiApi::Chat => "chat",
            OpenAiApi::Responses => "responses",
        }
    }
}

/// `reasoning_effort`: how hard a reasoning model thinks
/// (docs/providers.md#reasoning-effort).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

impl ReasoningEffort {
    pub const ALL: [ReasoningEffort; 6] = [
        ReasoningEffort::None,
        ReasoningEffort::Minimal,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
        ReasoningEffort::Xhigh,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
        }
    }

    /// Parse a configured or typed value (`/model KEY EFFORT`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Anthropic extended thinking's `budget_tokens` for this effort
    /// (docs/providers.md#reasoning-effort); `None`: no thinking.
    pub fn anthropic_budget(self) -> Option<u64> {
        match self {
            ReasoningEffort::None => None,
            ReasoningEffort::Minimal => Some(1024),
            ReasoningEffort::Low => Some(4096),
            ReasoningEffort::Medium => Some(10_000),
            ReasoningEffort::High => Some(24_000),
            ReasoningEffort::Xhigh => Some(32_000),
        }
    }
}

/// `reasoning_summary`: whether Responses models are asked for a readable
/// summary of their reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummary {
    #[default]
    Auto,
    None,
}

impl ReasoningSummary {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningSummary::Auto => "auto",
            ReasoningSummary::None => "none",
        }
    }
}

/// Resolved context-file caps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextConfig {
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 64 * 1024,
            max_total_bytes: 256 * 1024,
        }
    }
}

/// Resolved skill caps (docs/skills.md, section "Skills").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillsConfig {
    /// The `# Skills` listing in the stable prefix is cut past this.
    pub max_listed_bytes: u64,
    /// Bodies re-attached after a compaction (`# Skills in use`) stop here.
    pub max_reloaded_bytes: u64,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            max_listed_bytes: 4096,
            max_reloaded_bytes: 16 * 1024,
        }
    }
}

/// `tools.sandbox`: what a confined `shell` command may write
/// (docs/using-tools.md, section "Sandbox").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Write under the project root, the temp dir and `tools.sandbox_writable`.
    #[default]
    WorkspaceWrite,
    /// Write nowhere.
    ReadOnly,
    /// No confinement at all.
    Off,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }
}

/// `tools.sandbox_backend`: which confinement to use on Linux.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBackend {
    /// bubblewrap when it works, else Landlock.
    #[default]
    Auto,
    Bwrap,
    Landlock,
}

impl SandboxBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxBackend::Auto => "auto",
            SandboxBackend::Bwrap => "bwrap",
            SandboxBackend::Landlock => "landlock",
        }
    }
}

/// The resolved `tools.sandbox*` keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    pub backend: SandboxBackend,
    /// More directories a command may write (absolute paths).
    pub writable: Vec<camino::Utf8PathBuf>,
    /// Let commands reach the network.
    pub network: bool,
    /// Refuse to run commands when no backend works (instead of a warning).
    pub required: bool,
}

/// A resolved model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// The key under `[models]` (or `default` for the zero-config model).
    pub key: String,
    pub provider: ProviderKind,
    pub base_url: String,
    /// Model id sent to the API.
    pub name: String,
    pub api_key_env: Option<String>,
    /// Configured window; `None` = unknown (detect, else fallback).
    pub context_window: Option<u64>,
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub temperature: Option<f32>,
    pub retries: u32,
    pub connect_timeout_secs: u64,
    pub idle_timeout_secs: u64,
    /// `provider = "openai"` only: the configured wire; `None` = the
    /// default (Responses on OpenAI's own API, else Chat Completions).
    pub api: Option<OpenAiApi>,
    /// `None`: no reasoning parameter is sent (the server's default).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Anthropic thinking budget, overriding the effort's.
    pub thinking_budget_tokens: Option<u64>,
    pub reasoning_summary: ReasoningSummary,
    /// What the model's tokens cost (`models.<key>.pricing`); `None`: no
    /// cost is ever shown for it.
    pub pricing: Option<crate::cost::Pricing>,
    /// `models.<key>.compaction_native`: wins over `compaction.native`
    /// (docs/compaction.md#native-compaction); `None`: that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_native: Option<NativeMode>,
}

impl ModelConfig {
    /// Defaults for a model of `provider` kind.
    pub fn with_defaults(key: impl Into<String>, provider: ProviderKind) -> Self {
        let (base_url, api_key_env) = match provider {
            ProviderKind::Openai => ("https://api.openai.com/v1", "OPENAI_API_KEY"),
            ProviderKind::Anthropic => ("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
        };
        Self {
            key: key.into(),
            provider,
            base_url: base_url.to_owned(),
            name: String::new(),
            api_key_env: Some(api_key_env.to_owned()),
            context_window: None,
            max_input_tokens: None,
            max_output_tokens: None,
            temperature: None,
            retries: 4,
            connect_timeout_secs: 10,
            idle_timeout_secs: 120,
            api: None,
            reasoning_effort: None,
            thinking_budget_tokens: None,
            reasoning_summary: ReasoningSummary::Auto,
            pricing: None,
            compaction_native: None,
        }
    }

    /// Whether `base_url` is OpenAI's own API (not a compatible server).
    pub fn is_openai_api(&self) -> bool {
        let rest = self
            .base_url
            .strip_prefix("https://")
            .or_else(|| self.base_url.strip_prefix("http://"))
            .unwrap_or(&self.base_url);
        let host = rest.split(['/', ':']).next().unwrap_or("");
        host.eq_ignore_ascii_case("api.openai.com")
    }

    /// The wire this model speaks before anything is learned: the
    /// configured `api`, else Responses on OpenAI's own API, else Chat.
    pub fn default_api(&self) -> OpenAiApi {
        self.api.unwrap_or(if self.is_openai_api() {
            OpenAiApi::Responses
        } else {
            OpenAiApi::Chat
        })
    }

    /// Anthropic: the thinking budget when thinking is on
    /// (`thinking_budget_tokens`, else the effort's). The budget alone
    /// turns thinking on; an explicit `reasoning_effort = "none"` keeps it
    /// off whatever the budget.
    pub fn thinking_budget(&self) -> Option<u64> {
        match self.reasoning_effort {
            Some(e) => e
                .anthropic_budget()
                .map(|b| self.thinking_budget_tokens.unwrap_or(b)),
            None => self.thinking_budget_tokens,
        }
    }
}

/// Who decides whether a tool call of an MCP server may run
/// (`mcp_servers.NAME.approval`; docs/mcp.md#approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum McpApproval {
    /// The REPL asks; batch runs and `eonyx run` deny unless `--allow-mcp`.
    #[default]
    Ask,
    Allow,
    /// Always denied, whatever the flags.
    Deny,
}

impl McpApproval {
    pub fn as_str(self) -> &'static str {
        match self {
            McpApproval::Ask => "ask",
            McpApproval::Allow => "allow",
            McpApproval::Deny => "deny",
        }
    }
}

/// How eonyx reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to eonyx's environment (minus the provider key variables).
        env: std::collections::BTreeMap<String, String>,
        /// Working directory; relative to the project root; `None` = the
        /// project root.
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: std::collections::BTreeMap<String, String>,
        /// The variable holding a bearer token sent as `Authorization`.
        bearer_token_env_var: Option<String>,
    },
}

/// Defaults of `[mcp_servers.NAME]` (docs/config.md, section "Configuration reference").
pub const MCP_STARTUP_TIMEOUT_SECS: u64 = 10;
pub const MCP_TOOL_TIMEOUT_SECS: u64 = 60;

/// One resolved `[mcp_servers.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    pub name: String,
    /// `None` when neither `command` nor `url` is set: the server cannot
    /// start (a warning when the config is loaded, a failed start after).
    pub transport: Option<McpTransport>,
    pub enabled: bool,
    /// Only these tools (by the server's names); `None` = all.
    pub enabled_tools: Option<Vec<String>>,
    /// Never these tools (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    pub startup_timeout_secs: u64,
    pub tool_timeout_secs: u64,
    /// A failed start stops the run (exit 1) instead of a warning.
    pub required: bool,
    pub approval: McpApproval,
}

impl McpServerConfig {
    /// A server with the defaults and no transport.
    pub fn with_defaults(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: None,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            startup_timeout_secs: MCP_STARTUP_TIMEOUT_SECS,
            tool_timeout_secs: MCP_TOOL_TIMEOUT_SECS,
            required: false,
            approval: McpApproval::Ask,
        }
    }

    /// Whether the server offers its tool `tool` (`enabled_tools`, then
    /// `disabled_tools`).
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// Resolved MCP settings: `[mcp]` and every `[mcp_servers.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpConfig {
    /// Past this many tokens of MCP tool definitions the schemas are
    /// deferred (docs/mcp.md#deferred-schemas); `None` = a tenth of the
    /// context window.
    pub defer_above_tokens: Option<u64>,
    /// By name (sorted).
    pub servers: std::collections::BTreeMap<String, McpServerConfig>,
}

impl McpConfig {
    /// The servers that are switched on, by name.
    pub fn enabled(&self) -> impl Iterator<Item = &McpServerConfig> {
        self.servers.values().filter(|s| s.enabled)
    }

    /// The deferral limit for a context window of `window` tokens.
    pub fn defer_limit(&self, window: u64) -> u64 {
        self.defer_above_tokens.unwrap_or(window / 10)
    }
}

/// Policy for the `shell` tool (and for paths outside the project root).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ShellPolicy {
    /// Ask in the REPL; deny in batch and `run` (unless `--allow-shell`).
    #[default]
    Ask,
    Allow,
    Deny,
}

/// Policy for the editing tools (`tools.write`): the same three answers as
/// `tools.shell`; `--allow-write` plays the part of `--allow-shell`.
pub type WritePolicy = ShellPolicy;

/// Resolved tool settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsConfig {
    pub shell: ShellPolicy,
    /// Tool output shown to the model beyond this is truncated visibly.
    pub output_cap_bytes: u64,
    pub shell_timeout_secs: u64,
    /// Permission for `write_file` and `edit_file`.
    pub write: WritePolicy,
    /// `edit_file` refuses files larger than this.
    pub max_edit_bytes: u64,
    /// Background jobs running at once per session (docs/tools.md#jobs).
    pub max_jobs: u32,
    /// A job's log keeps at most this many bytes.
    pub job_log_max_bytes: u64,
    /// Whether the model gets the `recall` tool.
    pub recall: bool,
    /// The `tools.sandbox*` keys.
    pub sandbox: SandboxConfig,
    /// Images larger than this are refused before they are sent.
    pub max_image_bytes: u64,
    /// Whether the model gets the `task` tool (also bounded by
    /// `tasks.max_depth`).
    pub task: bool,
    /// The `tools.web_fetch*` keys (docs/tools.md#web-fetch).
    pub web: WebFetchConfig,
    /// The `[permissions]` rules of every layer (docs/tools.md#permission-rules),
    /// applied by the tools' approval before `shell` and `write` above.
    #[serde(
        default,
        skip_serializing_if = "crate::permissions::PermissionRules::is_empty"
    )]
    pub permissions: crate::permissions::PermissionRules,
}

/// Permission for `web_fetch` (`tools.web_fetch`), ordered from strictest
/// to loosest so an untrusted project's value can be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WebFetchPolicy {
    /// Never fetched, whatever `--allow-web` and `tools.web_fetch_domains` say.
    Deny,
    /// Asked per host in the REPL; denied in batch and `run` unless
    /// `--allow-web` or the host matches `tools.web_fetch_domains`.
    #[default]
    Ask,
    Allow,
}

impl WebFetchPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            WebFetchPolicy::Deny => "deny",
            WebFetchPolicy::Ask => "ask",
            WebFetchPolicy::Allow => "allow",
        }
    }
}

/// Default `tools.web_fetch_max_bytes`: 5 MiB.
pub const WEB_FETCH_MAX_BYTES: u64 = 5 * 1024 * 1024;
/// Default `tools.web_fetch_timeout_secs`: the bound on a whole fetch.
pub const WEB_FETCH_TIMEOUT_SECS: u64 = 30;

/// The `tools.web_fetch*` keys, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebFetchConfig {
    /// `tools.web_fetch`.
    pub policy: WebFetchPolicy,
    /// `tools.web_fetch_max_bytes`: no more of a body is read.
    pub max_bytes: u64,
    /// `tools.web_fetch_timeout_secs`: the bound on a whole fetch, every
    /// redirect hop and the body included.
    pub timeout_secs: u64,
    /// `tools.web_fetch_domains`: hosts fetched without asking
    /// (`"docs.rs"`, `"*.python.org"`).
    pub domains: Vec<String>,
    /// `tools.web_fetch_private_hosts`: `host:port` entries (as written in
    /// the URL) that may be private, loopback or link-local addresses.
    pub private_hosts: Vec<String>,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            policy: WebFetchPolicy::Ask,
            max_bytes: WEB_FETCH_MAX_BYTES,
            timeout_secs: WEB_FETCH_TIMEOUT_SECS,
            domains: Vec::new(),
            private_hosts: Vec::new(),
        }
    }
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            shell: ShellPolicy::Ask,
            output_cap_bytes: 16 * 1024,
            shell_timeout_secs: 120,
            write: WritePolicy::Ask,
            max_edit_bytes: 1024 * 1024,
            max_jobs: 8,
            job_log_max_bytes: 64 * 1024 * 1024,
            recall: true,
            sandbox: SandboxConfig::default(),
            max_image_bytes: 5 * 1024 * 1024,
            task: true,
            web: WebFetchConfig::default(),
            permissions: crate::permissions::PermissionRules::default(),
        }
    }
}

/// The key variables of well-known LLM providers, removed from the `shell`
/// tool's environment even when no configured model names them
/// (docs/tools.md#keys).
pub const WELL_KNOWN_KEY_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY",
    "COHERE_API_KEY",
    "CEREBRAS_API_KEY",
];
