//! `/model [KEY] [EFFORT]` (docs/models.md, section "Reasoning models and the
//! Responses API"): switch the session's model or reasoning effort for the
//! rest of the session. The new model's config (its compaction overrides
//! included) is resolved as `--model KEY` would, its providers are built and
//! its window asked for, the trigger follows it, and a `model` record in the
//! session file (docs/session-format.md#model-records) makes `eonyx run -c`
//! continue with it.

use eonyx_config::{Config, LoadOptions};
use eonyx_core::config::ReasoningEffort;

use super::Agent;
use super::open::connect;
use super::switch::adopt_model;
use crate::error::{AgentError, UsageError};

/// What `/model` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelSwitch {
    /// A configured model key; `None`: keep the current model.
    pub key: Option<String>,
    /// `None`: the model's configured effort.
    pub effort: Option<ReasoningEffort>,
}

/// The session's model as `/model` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub key: String,
    /// The model id sent to the API.
    pub name: String,
    /// `None`: no effort is sent (the server's default).
    pub effort: Option<ReasoningEffort>,
    /// The window compacted against, and the trigger (when on).
    pub window: u64,
    pub compaction_at: Option<u64>,
    /// Every configured model key.
    pub keys: Vec<String>,
}

/// `model big (gpt-5) · effort high · window 200000 tokens, compaction at ~150000`.
impl std::fmt::Display for ModelInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "model {} ({}) · effort {} · window {} tokens, compaction at ",
            self.key,
            self.name,
            self.effort
                .map_or("not sent (the server's default)", |e| e.as_str()),
            self.window,
        )?;
        match self.compaction_at {
            Some(t) => write!(f, "~{t} tokens"),
            None => f.write_str("off"),
        }
    }
}

impl Agent {
    /// The session's model, effort and window now.
    pub fn model_info(&self) -> ModelInfo {
        ModelInfo {
            key: self.config.model_key.clone(),
            name: self.config.model.name.clone(),
            effort: self.config.model.reasoning_effort,
            window: self.compaction.trigger.window,
            compaction_at: self.compaction.trigger.tokens,
            keys: self.config.models.keys().cloned().collect(),
        }
    }

    /// Read `/model`'s arguments: `KEY`, `EFFORT` or `KEY EFFORT` (a word
    /// that names a configured model is a key, else it must be an effort).
    pub fn parse_model_args(&self, words: &[&str]) -> Result<ModelSwitch, UsageError> {
        let effort = |w: &str| {
            ReasoningEffort::parse(w).ok_or_else(|| UsageError::UnknownEffort {
                given: w.to_owned(),
            })
        };
        let key = |w: &str| {
            if self.config.models.contains_key(w) {
                Ok(w.to_owned())
            } else {
                Err(UsageError::UnknownModel {
                    given: w.to_owned(),
                    keys: self.known_keys(),
                })
            }
        };
        match words {
            [] => Ok(ModelSwitch::default()),
            [one] if self.config.models.contains_key(*one) => Ok(ModelSwitch {
                key: Some((*one).to_owned()),
                effort: None,
            }),
            [one] => match ReasoningEffort::parse(one) {
                Some(e) => Ok(ModelSwitch {
                    key: None,
                    effort: Some(e),
                }),
                None => Err(UsageError::UnknownModel {
                    given: (*one).to_owned(),
                    keys: self.known_keys(),
                }),
            },
            [k, e] => Ok(ModelSwitch {
                key: Some(key(k)?),
                effort: Some(effort(e)?),
            }),
            _ => Err(UsageError::Synopsis("/model [KEY] [EFFORT]")),
        }
    }

    fn known_keys(&self) -> String {
        self.config
            .models
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Switch to `switch.key` (else keep the model) with `switch.effort`
    /// (else the model's configured effort), for the rest of the session;
    /// recorded in the session file. Returns the model now in use.
    pub async fn switch_model(&mut self, switch: &ModelSwitch) -> Result<ModelInfo, AgentError> {
        let key = switch
            .key
            .clone()
            .unwrap_or_else(|| self.config.model_key.clone());
        let mut config = self.config.clone();
        adopt_model(&mut config, &self.model_config_for(&key)?, switch.effort);
        let mut notices = Vec::new();
        let models = connect(
            &mut config,
            self.inherit.provider.as_ref(),
            &self.inherit.env,
            self.store.data_dir(),
            &mut notices,
        )
        .await?;
        // Recorded before anything changes, so the file never says less
        // than the session does.
        self.writer.switch_model(&key, switch.effort)?;
        self.config = config;
        self.compaction.trigger = eonyx_compact::trigger(&self.config.compaction, &models.limits);
        self.compaction.truncation.forget();
        self.models = models;
        self.inherit.model_flag = Some(key);
        self.startup_notices.extend(notices);
        Ok(self.model_info())
    }

    /// The config as `--model KEY` resolves it (its compaction overrides
    /// applied), read again from the same files.
    fn model_config_for(&self, key: &str) -> Result<Config, AgentError> {
        if !self.config.models.contains_key(key) {
            return Err(UsageError::UnknownModel {
                given: key.to_owned(),
                keys: self.known_keys(),
            }
            .into());
        }
        Ok(eonyx_config::load(&LoadOptions {
            cwd: self.cwd.clone(),
            env: self.inherit.env.clone(),
            model: Some(key.to_owned()),
            profile: self.config.profile.clone(),
        })?)
    }
}
