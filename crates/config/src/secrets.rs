//! Which environment variables hold provider API keys (docs/tools.md#keys): the
//! `shell` tool's child never sees them, and the agent scrubs their values
//! from every tool result before it is saved or sent.
//! [`configured_key_values`] gives the values themselves, which memory
//! refuses to store.

use crate::Config;
use crate::paths::Env;

pub use eonyx_core::config::WELL_KNOWN_KEY_VARS;

/// Every variable that may hold a provider key for this invocation: the
/// well-known ones and each configured model's `api_key_env` (all models,
/// not only the active one: the summarizer may use another). Sorted,
/// without duplicates.
pub fn key_env_vars(config: &Config) -> Vec<String> {
    let mut vars: Vec<String> = WELL_KNOWN_KEY_VARS
        .iter()
        .map(|v| (*v).to_owned())
        .collect();
    vars.extend(
        config
            .models
            .values()
            .chain(std::iter::once(&config.model))
            .filter_map(|m| m.api_key_env.clone()),
    );
    vars.sort();
    vars.dedup();
    vars
}

/// Keys shorter than this are not matched (too likely to occur by chance).
const MIN_SECRET_LEN: usize = 8;

/// The values of every key variable [`key_env_vars`] names: the
/// providers' well-known variables (those `shell` strips) and each
/// configured model's `api_key_env`. Memory refuses entries holding one
/// (compared in any case with spaces removed: `eonyx_store::secret`).
pub fn configured_key_values(config: &Config, env: &Env) -> Vec<String> {
    let vars = key_env_vars(config);
    let mut values: Vec<String> = vars
        .iter()
        .filter_map(|v| env.get(v))
        .map(str::trim)
        .filter(|v| v.len() >= MIN_SECRET_LEN)
        .map(str::to_owned)
        .collect();
    values.sort();
    values.dedup();
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ModelConfig, ProviderKind};
    use camino::Utf8Path;

    #[test]
    fn configured_key_vars_join_the_well_known_ones() {
        let mut c = Config::defaults(Utf8Path::new("/p"), Utf8Path::new("/c"));
        let mut m = ModelConfig::with_defaults("corp", ProviderKind::Openai);
        m.api_key_env = Some("CORP_LLM_TOKEN".into());
        c.models.insert("corp".into(), m);
        let vars = key_env_vars(&c);
        assert!(vars.contains(&"CORP_LLM_TOKEN".to_owned()), "{vars:?}");
        assert!(vars.contains(&"OPENAI_API_KEY".to_owned()));
        assert!(vars.contains(&"ANTHROPIC_API_KEY".to_owned()));
        assert_eq!(
            vars.iter().filter(|v| *v == "OPENAI_API_KEY").count(),
            1,
            "no duplicates: {vars:?}"
        );
    }

    #[test]
    fn key_values_come_from_configured_and_well_known_variables() {
        let mut config = Config::defaults("/p".as_ref(), "/c".as_ref());
        config.model.api_key_env = Some("MY_KEY".into());
        let env = Env::from_pairs([
            ("MY_KEY", "sk-mine-0123456789"),
            ("ANTHROPIC_API_KEY", "sk-ant-0123456789"),
            ("OPENAI_API_KEY", "short"),
            ("GEMINI_API_KEY", "AIza-gemini-0123"),
            ("OTHER", "not-a-key-at-all"),
        ]);
        let v = configured_key_values(&config, &env);
        assert_eq!(
            v,
            vec![
                "AIza-gemini-0123",
                "sk-ant-0123456789",
                "sk-mine-0123456789"
            ]
        );
        assert!(eonyx_core::memory::contains_secret(
            "the key is sk-mine-0123456789!",
            &v
        ));
        assert!(!eonyx_core::memory::contains_secret(
            "the key is in $MY_KEY",
            &v
        ));
    }
}
