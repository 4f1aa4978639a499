//! Layered configuration of eonyx (docs/config.md, section "Configuration reference"):
//! reading the files, validating them, applying project trust, merging the
//! layers with the environment and the flags, and the XDG locations
//! ([`paths`]). The plain values the lower crates take (`ModelConfig`,
//! `CompactionConfig`, `ContextConfig`, `SkillsConfig`, `ProviderKind`) are
//! `eonyx_core::config`'s and re-exported here, so callers above take all of
//! config from this crate.
//!
//! Sources, lowest to highest: built-in defaults, the global
//! `<config dir>/config.toml`, the project's `eonyx.json`, the active
//! model's overrides, the active profile's overrides, environment
//! variables, command-line flags. Merging is field by field: a layer only
//! replaces the fields it sets.
//!
//! The steps: [`parse`] (text to a typed [`file::ConfigFile`], unknown keys
//! rejected), [`validate`](mod@validate) (value ranges), [`trust`] (what an untrusted
//! project may set), `resolve` (the merge, a [`Source`] recorded for each
//! value); [`load()`] reads the files and runs them in that order.
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
//! - This crate depends on `eonyx-core` only, never prints and does no
//!   network I/O.

use std::collections::BTreeMap;

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

pub use eonyx_core::config::{
    CompactionConfig, ContextConfig, FALLBACK_CONTEXT_WINDOW, McpApproval, McpConfig,
    McpServerConfig, McpTransport, ModelConfig, ProviderKind, SandboxBackend, SandboxConfig,
    SandboxMode, ShellPolicy, SkillsConfig, ToolsConfig, WritePolicy,
};
pub use eonyx_core::hooks::{HookDef, HookEvent, HooksConfig};

use crate::paths::Env;

pub mod file;
pub mod hooks;
pub mod host_port;
pub mod load;
mod options;
pub mod parse;
pub mod paths;
pub mod permissions;
pub mod profiles;
mod resolve;
pub mod secrets;
pub mod trust;
pub mod validate;
pub use file::{
    CompactionFile, ConfigFile, ContextFile, GoalsFile, McpFile, McpServerFile, MemoryFile,
    ModelFile, ProfileFile, ReplFile, SkillsFile, TasksFile, ToolsFile,
};
pub use load::{LoadOptions, load};
pub use parse::{parse_global, parse_project};
pub use profiles::Profile;
pub use trust::{TrustChange, trust_project};

/// Resolved `[tasks]` settings (docs/using-tools.md, section "Tasks").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TasksConfig {
    /// Sessions this deep (the main one is 0) get no `task` tool.
    pub max_depth: u32,
    /// `task` calls of one step that run at once.
    pub max_parallel: u32,
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            max_depth: 1,
            max_parallel: 4,
        }
    }
}

/// Resolved `[goals]` settings (docs/goals.md, section "Goals").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalsConfig {
    /// Continuation turns a goal may use (`run --goal --max-turns N`
    /// overrides it for one goal).
    pub max_turns: u32,
}

impl Default for GoalsConfig {
    fn default() -> Self {
        Self { max_turns: 20 }
    }
}

/// Resolved memory settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryConfig {
    pub enabled: bool,
    /// The entries in one request take at most this many bytes; the
    /// newest are kept.
    pub max_bytes: u64,
    /// What happens to memories mined from past sessions
    /// (docs/memory.md#mining).
    pub mine: MineMode,
    /// A session is mined once it has been idle this long (from its last
    /// record).
    pub mine_idle_hours: f64,
    /// Sessions with fewer user messages are not mined.
    pub mine_min_user_messages: u32,
    /// Sessions mined in the background per start, at most.
    pub mine_per_start: u32,
    /// The model key mining uses; empty: the session's model.
    pub mine_model: String,
    /// The transcript in one mining request is cut to this many tokens
    /// (its start and its end kept).
    pub mine_budget_tokens: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_bytes: 8192,
            mine: MineMode::Review,
            mine_idle_hours: 2.0,
            mine_min_user_messages: 3,
            mine_per_start: 3,
            mine_model: String::new(),
            mine_budget_tokens: 24_000,
        }
    }
}

/// `memory.mine`: what becomes of memories mined from past sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MineMode {
    /// Proposals wait in an inbox for `eonyx memory review`.
    #[default]
    Review,
    /// Proposals are accepted at once and announced at the next start.
    Auto,
    /// No mining.
    Off,
}

impl MineMode {
    pub fn as_str(self) -> &'static str {
        match self {
            MineMode::Review => "review",
            MineMode::Auto => "auto",
            MineMode::Off => "off",
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

/// Resolved REPL settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplConfig {
    pub edit_mode: EditMode,
    /// Persist the input history (`$XDG_STATE_HOME/eonyx/history`).
    pub history: bool,
    /// Entries kept in the history file.
    pub history_size: usize,
}

/// `ui.reasoning`: how a model's reasoning is shown on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningDisplay {
    /// Streamed dimmed and left as it is.
    Show,
    /// Streamed dimmed, folded to one line when the answer starts.
    #[default]
    Fold,
    /// Not shown (still kept in the session).
    Hide,
}

impl ReasoningDisplay {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningDisplay::Show => "show",
            ReasoningDisplay::Fold => "fold",
            ReasoningDisplay::Hide => "hide",
        }
    }
}

/// Resolved `[ui]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiConfig {
    pub reasoning: ReasoningDisplay,
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
    /// A built-in profile's setting (`explore`, `general`).
    Builtin {
        profile: String,
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
            Source::Builtin { profile } => write!(f, "built-in profile {profile}"),
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
    pub ui: UiConfig,
    pub skills: SkillsConfig,
    /// `[mcp]` and the `[mcp_servers.NAME]` of the global config and a
    /// trusted project (docs/mcp.md#configuration).
    pub mcp: McpConfig,
    pub tasks: TasksConfig,
    /// Every hook of the global config and the project's (an untrusted
    /// project's marked as not running; docs/hooks.md).
    pub hooks: HooksConfig,
    pub goals: GoalsConfig,
    /// Every profile by name: the built-ins with the configured ones merged
    /// over them (docs: docs/using-tools.md, section "Tasks").
    pub profiles: BTreeMap<String, Profile>,
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
    /// The project's saved permission rules (`p` in the REPL), in the
    /// user's data dir; `None` when there is no data dir.
    pub permissions_file: Option<Utf8PathBuf>,
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
            ui: UiConfig::default(),
            skills: SkillsConfig::default(),
            mcp: McpConfig::default(),
            tasks: TasksConfig::default(),
            hooks: HooksConfig::default(),
            goals: GoalsConfig::default(),
            profiles: profiles::builtins(),
            max_steps: 50,
            sources: BTreeMap::new(),
            warnings: Vec::new(),
            config_dir: config_dir.to_path_buf(),
            global_file: None,
            project_root: project_root.to_path_buf(),
            project_file: None,
            trusted: false,
            permissions_file: None,
        }
    }

    /// Source of a dotted key; `Default` when not recorded.
    pub fn source(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::Default)
    }

    /// The active profile (`--profile`, or the one a task child runs with).
    pub fn active_profile(&self) -> Option<&Profile> {
        self.profiles.get(self.profile.as_deref()?)
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
    #[error("unknown profile `{name}`; profiles: {known}. Add [profiles.{name}] to {config_file}")]
    UnknownProfile {
        name: String,
        known: String,
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

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

impl ConfigError {
    /// A syntax error in `text`, the file `path`, at byte `offset`.
    pub(crate) fn parse_at(
        path: &Utf8Path,
        text: &str,
        offset: usize,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = line_col(text, offset);
        ConfigError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// How the directory a config file is written into is made when missing:
/// private (0700: the saved permission rules) or as the umask says (the
/// global config's directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirPrivacy {
    Private,
    Umask,
}

/// Replace the config file `path` with `text` atomically (fsynced, the
/// file 0600), making its directory first as `dir` says.
pub(crate) fn write_config_file(
    path: &Utf8Path,
    text: &str,
    dir: DirPrivacy,
) -> Result<(), ConfigError> {
    let err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let parent = path.parent().unwrap_or(Utf8Path::new("."));
    match dir {
        DirPrivacy::Private => eonyx_core::fs::create_private_dir(parent),
        DirPrivacy::Umask => std::fs::create_dir_all(parent),
    }
    .map_err(err)?;
    let how = eonyx_core::fs::AtomicWrite {
        durable: true,
        private: true,
    };
    eonyx_core::fs::write_atomic(path, text.as_bytes(), how).map_err(err)
}

/// Convenience: an [`Env`] for the process.
pub fn process_env() -> Env {
    Env::from_process()
}

#[cfg(test)]
mod tests;
