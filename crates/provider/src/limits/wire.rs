//! The probe replies as typed values: llama.cpp `/props`, OpenAI-style
//! `/models` (vLLM, OpenRouter, llama.cpp), Ollama `/api/show` and
//! `/api/ps`. Read leniently (see `crate::wire`).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::wire::{list, object, opt, present_opt};

/// llama.cpp `GET /props`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Props {
    #[serde(default, deserialize_with = "opt")]
    pub default_generation_settings: Option<GenerationSettings>,
    /// Older builds: at the top level. `Some(None)`: present, not a count.
    #[serde(default, deserialize_with = "present_opt")]
    pub n_ctx: Option<Option<u64>>,
    /// How many requests the server runs at once.
    #[serde(default, deserialize_with = "opt")]
    pub total_slots: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct GenerationSettings {
    /// The per-slot window. `Some(None)`: present, not a count.
    #[serde(default, deserialize_with = "present_opt")]
    pub n_ctx: Option<Option<u64>>,
}

/// `GET {base_url}/models`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Models {
    #[serde(default, deserialize_with = "list")]
    pub data: Option<Vec<ModelEntry>>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ModelEntry {
    #[serde(default, deserialize_with = "opt")]
    pub id: Option<String>,
    /// vLLM.
    #[serde(default, deserialize_with = "opt")]
    pub max_model_len: Option<u64>,
    /// OpenRouter.
    #[serde(default, deserialize_with = "opt")]
    pub context_length: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub top_provider: Option<TopProvider>,
}

/// OpenRouter's limits of the provider it routes to.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TopProvider {
    #[serde(default, deserialize_with = "opt")]
    pub context_length: Option<u64>,
    #[serde(default, deserialize_with = "opt")]
    pub max_completion_tokens: Option<u64>,
}

/// Ollama `POST /api/show`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Show {
    /// Modelfile parameters, one `name value` a line.
    #[serde(default, deserialize_with = "opt")]
    pub parameters: Option<String>,
    /// Keyed by architecture (`llama.context_length`, …), so kept as a map.
    #[serde(default, deserialize_with = "object")]
    pub model_info: Option<Map<String, Value>>,
}

/// Ollama `GET /api/ps`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Ps {
    #[serde(default, deserialize_with = "list")]
    pub models: Option<Vec<Loaded>>,
}

/// A loaded model.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Loaded {
    #[serde(default, deserialize_with = "opt")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "opt")]
    pub model: Option<String>,
    /// The window it runs with (Ollama ≥ 0.11).
    #[serde(default, deserialize_with = "opt")]
    pub context_length: Option<u64>,
}
