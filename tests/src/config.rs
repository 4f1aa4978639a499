//! Config files and environments for running the real `eonyx` binary
//! against the fake server.

use camino::{Utf8Path, Utf8PathBuf};

/// The model key the written configs define and select.
pub const FAKE_MODEL_KEY: &str = "fake";
/// The model id the written configs send.
pub const FAKE_MODEL_NAME: &str = "fake-model";
/// The context window the written configs declare unless overridden.
pub const FAKE_CONTEXT_WINDOW: i64 = 32_768;

/// Failures writing a config or preparing a test environment.
#[derive(Debug, thiserror::Error)]
pub enum ConfigWriteError {
    #[error("the model overrides are not valid TOML key/value lines: {0}")]
    Overrides(#[from] toml::de::Error),
    #[error("the config could not be rendered as TOML: {0}")]
    Render(#[from] toml::ser::Error),
    #[error("could not write {path}: {source}")]
    Write {
        path: Utf8PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the temporary directory {0} is not valid UTF-8")]
    NonUtf8(String),
}

/// A `config.toml` with one model, `[models.fake]`, selected as default.
///
/// ```text
/// model = "fake"
/// [models.fake]
/// provider = "openai"
/// base_url = "http://127.0.0.1:PORT/v1"
/// name = "fake-model"
/// context_window = 32768
/// max_output_tokens = 256
/// ```
#[derive(Debug, Clone)]
pub struct FakeConfig {
    top: toml::Table,
    model: toml::Table,
}

impl FakeConfig {
    fn new(provider: &str, base_url: &str) -> Self {
        let mut model = toml::Table::new();
        model.insert("provider".into(), provider.into());
        model.insert("base_url".into(), base_url.into());
        model.insert("name".into(), FAKE_MODEL_NAME.into());
        model.insert("context_window".into(), FAKE_CONTEXT_WINDOW.into());
        model.insert("max_output_tokens".into(), 256.into());
        let mut top = toml::Table::new();
        top.insert("model".into(), FAKE_MODEL_KEY.into());
        Self { top, model }
    }

    /// An OpenAI Chat Completions model at `base_url`.
    pub fn openai(base_url: &str) -> Self {
        Self::new("openai", base_url)
    }

    /// An Anthropic Messages model at `base_url`.
    pub fn anthropic(base_url: &str) -> Self {
        Self::new("anthropic", base_url)
    }

    /// Set a key of `[models.fake]` (e.g. `("retries", 0)`).
    pub fn set(mut self, key: &str, value: impl Into<toml::Value>) -> Self {
        self.model.insert(key.into(), value.into());
        self
    }

    /// Remove a key of `[models.fake]` (e.g. `context_window`, to exercise detection).
    pub fn unset(mut self, key: &str) -> Self {
        self.model.remove(key);
        self
    }

    /// `context_window`, or none at all.
    pub fn context_window(self, window: Option<i64>) -> Self {
        match window {
            Some(w) => self.set("context_window", w),
            None => self.unset("context_window"),
        }
    }

    /// Set a top-level key (e.g. `("compaction", table)` or `("max_steps", 4)`).
    pub fn top(mut self, key: &str, value: impl Into<toml::Value>) -> Self {
        self.top.insert(key.into(), value.into());
        self
    }

    /// Merge TOML `key = value` lines (dotted keys allowed, e.g.
    /// `compaction.keep_turns = 1`) into `[models.fake]`; they replace defaults.
    pub fn merge_model_toml(mut self, overrides: &str) -> Result<Self, ConfigWriteError> {
        let parsed: toml::Table = toml::from_str(overrides)?;
        for (k, v) in parsed {
            self.model.insert(k, v);
        }
        Ok(self)
    }

    /// Merge TOML text into the top level (e.g. a `[compaction]` table).
    pub fn merge_top_toml(mut self, text: &str) -> Result<Self, ConfigWriteError> {
        let parsed: toml::Table = toml::from_str(text)?;
        for (k, v) in parsed {
            self.top.insert(k, v);
        }
        Ok(self)
    }

    /// The file's text.
    pub fn to_toml(&self) -> Result<String, ConfigWriteError> {
        let mut models = toml::Table::new();
        models.insert(FAKE_MODEL_KEY.into(), self.model.clone().into());
        let mut doc = self.top.clone();
        doc.insert("models".into(), models.into());
        Ok(toml::to_string(&doc)?)
    }

    /// Write `<config_dir>/config.toml` (creating the directory); returns its path.
    pub fn write(&self, config_dir: &Utf8Path) -> Result<Utf8PathBuf, ConfigWriteError> {
        let path = config_dir.join("config.toml");
        let text = self.to_toml()?;
        let write = |source| ConfigWriteError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(config_dir).map_err(write)?;
        std::fs::write(&path, text).map_err(write)?;
        Ok(path)
    }
}

/// Write an OpenAI-flavoured `config.toml` for the fake at `base_url`;
/// `model_overrides` are TOML lines merged into `[models.fake]`
/// (e.g. `"context_window = 4096\nretries = 0"`).
pub fn write_config(
    config_dir: &Utf8Path,
    base_url: &str,
    model_overrides: &str,
) -> Result<Utf8PathBuf, ConfigWriteError> {
    FakeConfig::openai(base_url)
        .merge_model_toml(model_overrides)?
        .write(config_dir)
}

/// Like [`write_config`] with `provider = "anthropic"`.
pub fn write_anthropic_config(
    config_dir: &Utf8Path,
    base_url: &str,
    model_overrides: &str,
) -> Result<Utf8PathBuf, ConfigWriteError> {
    FakeConfig::anthropic(base_url)
        .merge_model_toml(model_overrides)?
        .write(config_dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TestEnv;

    #[test]
    fn written_config_selects_the_fake_model_and_merges_overrides() {
        let env = TestEnv::new().unwrap();
        let path = write_config(
            &env.config_dir,
            "http://127.0.0.1:9/v1",
            "context_window = 4096\ncompaction.keep_turns = 1",
        )
        .unwrap();
        let parsed: toml::Table = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(parsed["model"].as_str(), Some("fake"));
        let m = &parsed["models"]["fake"];
        assert_eq!(m["provider"].as_str(), Some("openai"));
        assert_eq!(m["base_url"].as_str(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(m["name"].as_str(), Some("fake-model"));
        assert_eq!(m["context_window"].as_integer(), Some(4096));
        assert_eq!(m["compaction"]["keep_turns"].as_integer(), Some(1));

        let text = FakeConfig::anthropic("http://x/v1")
            .context_window(None)
            .to_toml()
            .unwrap();
        assert!(text.contains("provider = \"anthropic\""), "{text}");
        assert!(!text.contains("context_window"), "{text}");
        assert!(write_config(&env.config_dir, "u", "not toml at all").is_err());
    }

    #[test]
    fn written_config_is_accepted_by_the_config_loader() {
        // The file must parse as eonyx's own config schema (unknown keys rejected).
        let text = FakeConfig::openai("http://127.0.0.1:9/v1")
            .set("retries", 0)
            .to_toml()
            .unwrap();
        let parsed: Result<eonyx_config::ConfigFile, _> = toml::from_str(&text);
        assert!(parsed.is_ok(), "{parsed:?}\n{text}");
    }
}
