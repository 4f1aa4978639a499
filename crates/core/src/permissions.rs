//! Permission rules (docs/tools.md#permission-rules): the `[permissions]`
//! `allow`, `ask` and `deny` lists of `config.toml`, a trusted
//! `eonyx.json` and the project's rule file in the user's data dir, as
//! plain values. `eonyx-config` parses them (its `permissions` module);
//! `eonyx-tools` matches them in its approval (its `permissions` module).

use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};

/// Which list a rule is in. Order of strength: deny > ask > allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

impl RuleList {
    pub const ALL: [RuleList; 3] = [RuleList::Allow, RuleList::Ask, RuleList::Deny];

    pub fn as_str(self) -> &'static str {
        match self {
            RuleList::Allow => "allow",
            RuleList::Ask => "ask",
            RuleList::Deny => "deny",
        }
    }
}

impl std::fmt::Display for RuleList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a `shell` rule covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "text", rename_all = "snake_case")]
pub enum ShellRule {
    /// `shell`: every command.
    Any,
    /// `shell(PREFIX:*)`: a simple command whose words start with these
    /// words (whole words).
    Prefix(String),
    /// `shell(TEXT)`: exactly this command (or this part of a line).
    Exact(String),
}

/// One parsed rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rule {
    Shell {
        shell: ShellRule,
    },
    /// `write(GLOB)`: `write_file` / `edit_file` on a matching path.
    Write {
        glob: String,
    },
    /// `read(GLOB)`: `read_file`, `list_dir`, `grep` on a matching path.
    Read {
        glob: String,
    },
    /// `web_fetch(HOST)`: fetching from this host (`*.example.com`: any
    /// subdomain of it).
    WebFetch {
        host: String,
    },
    /// `mcp(SERVER.TOOL)`; `tool: None` is `mcp(SERVER.*)`.
    Mcp {
        server: String,
        tool: Option<String>,
    },
}

/// Where a rule was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleOrigin {
    /// The global `config.toml`.
    Global,
    /// The project's `eonyx.json`.
    Project,
    /// The project's rule file in the user's data dir, written by eonyx
    /// (`p` in the REPL); `eonyx permissions forget N` removes these.
    Saved,
}

/// A rule with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRule {
    pub list: RuleList,
    pub rule: Rule,
    /// As written (`shell(cargo test:*)`).
    pub text: String,
    pub file: Utf8PathBuf,
    pub origin: RuleOrigin,
    /// `false` for an untrusted project's `allow` rules: listed, never
    /// applied.
    pub active: bool,
}

/// Every rule of a session, in file order (global, project, saved), with
/// what their globs are relative to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRules {
    pub rules: Vec<PermissionRule>,
    /// Relative globs are relative to this directory.
    pub project_root: Utf8PathBuf,
    /// What `~` in a glob stands for; `None`: a glob starting with `~`
    /// matches nothing.
    pub home: Option<Utf8PathBuf>,
}

impl PermissionRules {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules that apply (an untrusted project's `allow` rules do not).
    pub fn active(&self) -> impl Iterator<Item = &PermissionRule> {
        self.rules.iter().filter(|r| r.active)
    }

    /// The same rules without any `allow` (ACP's read-only mode: rules may
    /// still deny or ask, never widen).
    pub fn without_allow(&self) -> Self {
        Self {
            rules: self
                .rules
                .iter()
                .filter(|r| r.list != RuleList::Allow)
                .cloned()
                .collect(),
            project_root: self.project_root.clone(),
            home: self.home.clone(),
        }
    }
}
