//! Memory vocabulary (README, section "Memory"): the entries kept across sessions, shared by
//! the store (which owns the files) and the prompt (which renders them).

use serde::Serialize;

use crate::config::Config;
use crate::paths::Env;

/// Which file an entry lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScope {
    /// Every project.
    Global,
    /// One project root.
    Project,
}

impl MemoryScope {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::Global => "global",
            MemoryScope::Project => "project",
        }
    }

    /// `"global"` or `"project"`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "global" => Some(MemoryScope::Global),
            "project" => Some(MemoryScope::Project),
            _ => None,
        }
    }
}

impl std::fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of a memory file.
///
/// A well-formed line has an id, a date and a session; a line that does not
/// parse (e.g. written by hand) is kept with `id`, `created` and `session`
/// unset and its whole text in `text`, so it is shown as-is, never dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryEntry {
    /// Short stable id (`forget` takes it); `None` for a malformed line.
    pub id: Option<String>,
    pub scope: MemoryScope,
    pub text: String,
    /// `YYYY-MM-DD` (UTC) the entry was saved.
    pub created: Option<String>,
    /// The session that saved it, or `cli`.
    pub session: Option<String>,
}

impl MemoryEntry {
    /// Whether the line parsed (has an id).
    pub fn is_well_formed(&self) -> bool {
        self.id.is_some()
    }
}

/// Keys shorter than this are not matched (too likely to occur by chance).
const MIN_SECRET_LEN: usize = 8;

/// The values of every configured API key: the `api_key_env` of each
/// configured model and of the active one, plus the providers' well-known
/// variables. Used to refuse memory entries that would store a key.
pub fn configured_key_values(config: &Config, env: &Env) -> Vec<String> {
    let mut vars: Vec<&str> = vec!["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];
    vars.extend(config.model.api_key_env.as_deref());
    vars.extend(
        config
            .models
            .values()
            .filter_map(|m| m.api_key_env.as_deref()),
    );
    let mut values: Vec<String> = vars
        .into_iter()
        .filter_map(|v| env.get(v))
        .map(str::trim)
        .filter(|v| v.len() >= MIN_SECRET_LEN)
        .map(str::to_owned)
        .collect();
    values.sort();
    values.dedup();
    values
}

/// Whether `text` contains one of `secrets`.
pub fn contains_secret(text: &str, secrets: &[String]) -> bool {
    secrets
        .iter()
        .any(|s| !s.is_empty() && text.contains(s.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_come_from_configured_and_well_known_variables() {
        let mut config = Config::defaults("/p".as_ref(), "/c".as_ref());
        config.model.api_key_env = Some("MY_KEY".into());
        let env = Env::from_pairs([
            ("MY_KEY", "sk-mine-0123456789"),
            ("ANTHROPIC_API_KEY", "sk-ant-0123456789"),
            ("OPENAI_API_KEY", "short"),
            ("OTHER", "not-a-key-at-all"),
        ]);
        let v = configured_key_values(&config, &env);
        assert_eq!(v, vec!["sk-ant-0123456789", "sk-mine-0123456789"]);
        assert!(contains_secret("the key is sk-mine-0123456789!", &v));
        assert!(!contains_secret("the key is in $MY_KEY", &v));
    }
}
