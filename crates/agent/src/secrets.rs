//! The key scrubber: every tool result passes through [`Redactor::scrub`]
//! before it is appended to the session file or shown to the model, so a
//! provider key that reaches a tool's output (a `.env` file read, a verbose
//! `curl`) is saved and sent as `[redacted: NAME]`.

use eonyx_core::paths::Env;

/// Values shorter than this are not scrubbed: no real API key is this
/// short, and replacing a two-letter value everywhere would garble output.
const MIN_SECRET_CHARS: usize = 8;

/// The values of the provider key variables, with their names.
#[derive(Clone, Default)]
pub struct Redactor {
    /// (value, variable name), longest value first so that a key that
    /// contains another is replaced whole.
    secrets: Vec<(String, String)>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values.
        let names: Vec<&str> = self.secrets.iter().map(|(_, n)| n.as_str()).collect();
        f.debug_struct("Redactor").field("names", &names).finish()
    }
}

impl Redactor {
    /// The values that `vars` hold in `env`.
    pub fn new(vars: &[String], env: &Env) -> Self {
        let mut secrets: Vec<(String, String)> = vars
            .iter()
            .filter_map(|name| {
                let value = env.get(name)?.trim();
                (value.chars().count() >= MIN_SECRET_CHARS)
                    .then(|| (value.to_owned(), name.clone()))
            })
            .collect();
        secrets.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
        secrets.dedup_by(|a, b| a.0 == b.0);
        Self { secrets }
    }

    /// `text` with every key value replaced by `[redacted: NAME]`.
    pub fn scrub(&self, text: String) -> String {
        let mut text = text;
        for (value, name) in &self.secrets {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), &format!("[redacted: {name}]"));
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_are_replaced_by_their_variable_name() {
        let env = Env::from_pairs([
            ("OPENAI_API_KEY", "sk-live-0123456789"),
            ("CORP_TOKEN", "sk-live-0123456789-corp"),
            ("SHORT_KEY", "abc"),
            ("UNLISTED", "sk-unlisted-value"),
        ]);
        let vars = ["CORP_TOKEN", "OPENAI_API_KEY", "SHORT_KEY", "MISSING"]
            .map(String::from)
            .to_vec();
        let r = Redactor::new(&vars, &env);
        let out = r.scrub(
            "OPENAI_API_KEY=sk-live-0123456789\ncorp sk-live-0123456789-corp\nabc sk-unlisted-value"
                .to_owned(),
        );
        assert_eq!(
            out,
            "OPENAI_API_KEY=[redacted: OPENAI_API_KEY]\ncorp [redacted: CORP_TOKEN]\nabc sk-unlisted-value"
        );
        assert!(!format!("{r:?}").contains("sk-live"));
    }
}
