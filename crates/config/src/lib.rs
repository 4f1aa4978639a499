//! Layered configuration (README, section "Configuration reference").
//!
//! Sources, lowest to highest: built-in defaults, the global
//! `<config dir>/config.toml`, the project's `eonyx.json`, the active
//! model's overrides, the active profile's overrides, environment
//! variables, command-line flags. Merging is field by field: a layer only
//! replaces the fields it sets.
//!
//! The `*File` types mirror what may be written in a file (every field
//! optional, unknown keys rejected); [`Config`] is the resolved result with
//! a [`Source`] recorded for each value.
//!
//! Invariants:
//! - Compaction merges field by field: profile > model > project > global >
//!   defaults, with `EONYX_AUTO_COMPACT`, `EONYX_AUTO_COMPACT_TOKENS` and
//!   `EONYX_COMPACTION_RESERVED_TOKENS` on top. The active model key comes
//!   from `--model` > the profile's `model` > `$EONYX_MODEL` (when it is a
//!   key; otherwise it renames the active model) > project > global.
//! - Every error names the file; parse and unknown-key errors also the line
//!   (and column), with the full dotted key and a "did you mean" hint.
//! - Unless its canonical root is in the global `trusted_projects`
//!   (`eonyx trust`), a project's `eonyx.json` sets only the keys in the
//!   allow-list [`trust::UNTRUSTED_MAY_SET`]; `trusted_projects` in a project
//!   file is always ignored. Ignored keys are named in one warning, not an
//!   error.
//! - `memory.enabled` is on the allow-list because an untrusted project may
//!   only turn memory off (`true` there is ignored); no key moves memory
//!   (always `<data dir>/memory`).
//! - Loading never writes; only [`trust_project`] edits `config.toml`, in
//!   place (comments kept), atomically.

use std::collections::BTreeMap;

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use crate::paths::Env;

pub mod load;
pub mod trust;
pub use load::{LoadOptions, load, parse_global, parse_project};
pub use trust::{TrustChange, trust_project};

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

/// `[compaction]` as written in a file: every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionFile {
    pub auto: Option<bool>,
    pub prune: Option<bool>,
    pub threshold_percent: Option<f64>,
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
}

/// Resolved compaction settings (defaults: README, section "Configuration reference").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionConfig {
    pub auto: bool,
    pub prune: bool,
    /// Percent of the effective context window, `1..=100`, fractional ok.
    pub threshold_percent: f64,
    pub buffer_tokens: u64,
    pub keep_turns: u32,
    /// Cap on the verbatim tail, 0 = no cap.
    pub keep_tokens: u64,
    pub summary_max_tokens: u32,
    pub chars_per_token: f64,
    pub image_tokens: u64,
    /// 0 = collapse off.
    pub tool_result_budget_chars: u64,
    pub keep_recent_results: u32,
    pub max_consecutive: u32,
    /// Summarizer model key; empty = the session's model.
    pub model: String,
    /// Summarizer temperature; `None` = the summarizer's default. A model
    /// that refuses it gets none (never a failed compaction).
    pub temperature: Option<f32>,
    /// `EONYX_AUTO_COMPACT_TOKENS`: a fixed trigger overriding the computed
    /// one; `Some(0)` disables auto compaction.
    pub trigger_tokens_override: Option<u64>,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            auto: true,
            prune: true,
            threshold_percent: 80.0,
            buffer_tokens: 20_000,
            keep_turns: 3,
            keep_tokens: 0,
            summary_max_tokens: 4096,
            chars_per_token: 4.0,
            image_tokens: 4096,
            tool_result_budget_chars: 100_000,
            keep_recent_results: 6,
            max_consecutive: 3,
            model: String::new(),
            temperature: None,
            trigger_tokens_override: None,
        }
    }
}

/// `[context]` as written in a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    pub max_file_bytes: Option<u64>,
    pub max_total_bytes: Option<u64>,
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

/// `[skills]` as written in a file. Both keys only size the prompt, so an
/// untrusted project's `eonyx.json` may set them (they cannot send anything
/// anywhere or widen a permission).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsFile {
    pub max_listed_bytes: Option<u64>,
    pub max_reloaded_bytes: Option<u64>,
}

/// Resolved skill caps (README, section "Skills").
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
    /// Safe for an untrusted project: it can only take a tool away.
    pub recall: Option<bool>,
}

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
    /// Whether the model gets the `recall` tool.
    pub recall: bool,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            shell: ShellPolicy::Ask,
            output_cap_bytes: 16 * 1024,
            shell_timeout_secs: 120,
            write: WritePolicy::Ask,
            max_edit_bytes: 1024 * 1024,
            recall: true,
        }
    }
}

/// `[memory]` as written in a file (README, section "Memory").
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
}

/// Resolved memory settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryConfig {
    pub enabled: bool,
    /// The entries in one request take at most this many bytes; the
    /// newest are kept.
    pub max_bytes: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_bytes: 8192,
        }
    }
}

/// Key bindings of the REPL's line editor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EditMode {
    #[default]
    Emacs,
    Vi,
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

/// Resolved REPL settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplConfig {
    pub edit_mode: EditMode,
    /// Persist the input history (`$XDG_STATE_HOME/eonyx/history`).
    pub history: bool,
    /// Entries kept in the history file.
    pub history_size: usize,
}

impl Default for ReplConfig {
    fn default() -> Self {
        Self {
            edit_mode: EditMode::Emacs,
            history: true,
            history_size: 1000,
        }
    }
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
    pub compaction: Option<CompactionFile>,
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
        }
    }
}

/// `[profiles.<name>]` as written in a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
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
    pub skills: Option<SkillsFile>,
    /// Project roots whose `eonyx.json` may set any key (untrusted, only
    /// [`trust::UNTRUSTED_MAY_SET`]). Only honoured in the global file.
    #[serde(default)]
    pub trusted_projects: Vec<String>,
}

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    Default,
    Global {
        path: Utf8PathBuf,
    },
    Project {
        path: Utf8PathBuf,
    },
    /// A `[models.KEY.compaction]` override in `path`.
    Model {
        key: String,
        path: Utf8PathBuf,
    },
    /// A `[profiles.NAME]` setting in `path`.
    Profile {
        name: String,
        path: Utf8PathBuf,
    },
    Env {
        var: String,
    },
    Flag {
        flag: String,
    },
    /// Detected from the server or learned from an overflow.
    Detected {
        how: String,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Global { path } => write!(f, "{path}"),
            Source::Project { path } => write!(f, "{path}"),
            Source::Model { key, path } => write!(f, "{path} [models.{key}]"),
            Source::Profile { name, path } => write!(f, "{path} [profiles.{name}]"),
            Source::Env { var } => write!(f, "${var}"),
            Source::Flag { flag } => write!(f, "{flag}"),
            Source::Detected { how } => f.write_str(how),
        }
    }
}

/// The resolved configuration for one invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Key of the active model.
    pub model_key: String,
    /// The active model.
    pub model: ModelConfig,
    /// Every configured model, by key.
    pub models: BTreeMap<String, ModelConfig>,
    /// Active profile, if any.
    pub profile: Option<String>,
    /// Compaction settings with model and profile overrides applied.
    pub compaction: CompactionConfig,
    pub context: ContextConfig,
    pub tools: ToolsConfig,
    pub memory: MemoryConfig,
    pub repl: ReplConfig,
    pub skills: SkillsConfig,
    pub max_steps: u32,
    /// Dotted key (e.g. `compaction.threshold_percent`) → source.
    pub sources: BTreeMap<String, Source>,
    /// Non-fatal problems to show on stderr (ignored untrusted keys…).
    pub warnings: Vec<String>,
    pub config_dir: Utf8PathBuf,
    pub global_file: Option<Utf8PathBuf>,
    pub project_root: Utf8PathBuf,
    pub project_file: Option<Utf8PathBuf>,
    /// Whether the project root is trusted.
    pub trusted: bool,
}

impl Config {
    /// Defaults only, as if no file and no environment existed.
    pub fn defaults(project_root: &Utf8Path, config_dir: &Utf8Path) -> Self {
        let model = ModelConfig::with_defaults("default", ProviderKind::Openai);
        Self {
            model_key: model.key.clone(),
            models: BTreeMap::new(),
            model,
            profile: None,
            compaction: CompactionConfig::default(),
            context: ContextConfig::default(),
            tools: ToolsConfig::default(),
            memory: MemoryConfig::default(),
            repl: ReplConfig::default(),
            skills: SkillsConfig::default(),
            max_steps: 50,
            sources: BTreeMap::new(),
            warnings: Vec::new(),
            config_dir: config_dir.to_path_buf(),
            global_file: None,
            project_root: project_root.to_path_buf(),
            project_file: None,
            trusted: false,
        }
    }

    /// Source of a dotted key; `Default` when not recorded.
    pub fn source(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::Default)
    }

    /// Resolve a model key (for `compaction.model`).
    pub fn model_by_key(&self, key: &str) -> Option<&ModelConfig> {
        if key == self.model_key {
            Some(&self.model)
        } else {
            self.models.get(key)
        }
    }
}

/// Errors loading configuration. Each names the file and, where known, the
/// line and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: Utf8PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: Utf8PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}:{line}: unknown key `{key}`{hint}")]
    UnknownKey {
        path: Utf8PathBuf,
        line: usize,
        key: String,
        hint: String,
    },
    #[error("{path}: invalid value for `{key}`: {message}")]
    Invalid {
        path: Utf8PathBuf,
        key: String,
        message: String,
    },
    #[error("invalid value {value:?} in ${var}: {message}")]
    Env {
        var: String,
        value: String,
        message: String,
    },
    #[error(
        "unknown model `{key}`; configured models: {known}. Add [models.{key}] to {config_file}"
    )]
    UnknownModel {
        key: String,
        known: String,
        config_file: Utf8PathBuf,
    },
    #[error(
        "no model name for `{key}` at {base_url}: set $EONYX_MODEL to the model's id, or `name = \"…\"` under [models.{key}] in {config_file} (models.{key}.name){listed}"
    )]
    MissingModelName {
        key: String,
        base_url: String,
        config_file: Utf8PathBuf,
        /// What the server lists, when it lists several (` ; the server lists: a, b`).
        listed: String,
    },
    #[error("unknown profile `{name}`; add [profiles.{name}] to {config_file}")]
    UnknownProfile {
        name: String,
        config_file: Utf8PathBuf,
    },
    #[error("cannot write config file {path}: {source}")]
    Write {
        path: Utf8PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot trust {path}: {source}; give the path of an existing project directory")]
    TrustPath {
        path: Utf8PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Path(#[from] crate::paths::PathError),
}

/// Convenience: an [`Env`] for the process.
pub fn process_env() -> Env {
    Env::from_process()
}
