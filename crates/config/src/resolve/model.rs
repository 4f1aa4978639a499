//! Models: each `[models.KEY]` merged over the layers, the implicit
//! zero-config model, and the choice of the active one.

use std::collections::{BTreeMap, BTreeSet};

use camino::Utf8Path;

use super::{Layer, file_source};
use crate::options::{IMPLICIT_MODEL_KEY, LoadOptions, OPENAI_DEFAULT_BASE_URL};
use crate::paths::Env;
use crate::{Config, ConfigError, ModelConfig, ProviderKind, Source};

/// Models: union of keys, project fields over global fields; with none
/// configured, the implicit model (OpenAI, or Anthropic when only
/// `ANTHROPIC_*` is set). Returns whether it is zero config.
pub(super) fn resolve_models(cfg: &mut Config, layers: &[Layer], env: &Env) -> bool {
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for l in layers {
        keys.extend(l.file.models.keys().cloned());
    }
    let openai_base = env.get("OPENAI_BASE_URL");
    let anthropic_base = env.get("ANTHROPIC_BASE_URL");
    for key in &keys {
        let (model, sources) = resolve_model(key, layers, openai_base, anthropic_base);
        for (field, src) in sources {
            cfg.sources.insert(format!("models.{key}.{field}"), src);
        }
        cfg.models.insert(key.clone(), model);
    }
    let zero_config = cfg.models.is_empty();
    // Zero config speaks Anthropic when only ANTHROPIC_* is set (docs/providers.md#base-urls-and-zero-config).
    let zero_anthropic = zero_config
        && openai_base.is_none()
        && env.get("OPENAI_API_KEY").is_none()
        && (anthropic_base.is_some() || env.get("ANTHROPIC_API_KEY").is_some());
    if zero_anthropic {
        let mut model = ModelConfig::with_defaults(IMPLICIT_MODEL_KEY, ProviderKind::Anthropic);
        cfg.sources.insert(
            format!("models.{IMPLICIT_MODEL_KEY}.provider"),
            Source::Env {
                var: if anthropic_base.is_some() {
                    "ANTHROPIC_BASE_URL".into()
                } else {
                    "ANTHROPIC_API_KEY".into()
                },
            },
        );
        if let Some(url) = anthropic_base {
            model.base_url = url.to_owned();
            cfg.sources.insert(
                format!("models.{IMPLICIT_MODEL_KEY}.base_url"),
                Source::Env {
                    var: "ANTHROPIC_BASE_URL".into(),
                },
            );
        }
        cfg.models.insert(IMPLICIT_MODEL_KEY.to_owned(), model);
    } else if zero_config {
        let mut model = ModelConfig::with_defaults(IMPLICIT_MODEL_KEY, ProviderKind::Openai);
        if let Some(url) = openai_base {
            model.base_url = url.to_owned();
            cfg.sources.insert(
                format!("models.{IMPLICIT_MODEL_KEY}.base_url"),
                Source::Env {
                    var: "OPENAI_BASE_URL".into(),
                },
            );
        } else {
            model.base_url = OPENAI_DEFAULT_BASE_URL.to_owned();
        }
        cfg.models.insert(IMPLICIT_MODEL_KEY.to_owned(), model);
    }

    zero_config
}

/// Active model key: --model > profile > $EONYX_MODEL (when a key) >
/// project > global > the only / implicit model. `--model` in zero config,
/// or `$EONYX_MODEL` that is no key, renames the active model instead.
pub(super) fn choose_active_model(
    cfg: &mut Config,
    layers: &[Layer],
    opts: &LoadOptions,
    profile: &Option<String>,
    zero_config: bool,
    global_path: &Utf8Path,
) -> Result<String, ConfigError> {
    let env = &opts.env;
    let env_model = env.get("EONYX_MODEL");
    // Zero config: `--model NAME` names the implicit model's API model id
    // (there are no keys to choose from).
    let flag_name = opts
        .model
        .as_ref()
        .filter(|k| zero_config && !cfg.models.contains_key(*k));
    let mut choice: Option<(String, Source)> =
        opts.model.clone().filter(|_| flag_name.is_none()).map(|k| {
            (
                k,
                Source::Flag {
                    flag: "--model".into(),
                },
            )
        });
    if choice.is_none()
        && let Some(p) = &profile
    {
        for l in layers.iter().rev() {
            if let Some(m) = l.file.profiles.get(p).and_then(|pf| pf.model.clone()) {
                choice = Some((
                    m,
                    Source::Profile {
                        name: p.clone(),
                        path: file_source(&l.source),
                    },
                ));
                break;
            }
        }
    }
    if choice.is_none()
        && let Some(m) = env_model.filter(|m| cfg.models.contains_key(*m))
    {
        choice = Some((
            m.to_owned(),
            Source::Env {
                var: "EONYX_MODEL".into(),
            },
        ));
    }
    if choice.is_none() {
        for l in layers.iter().rev() {
            if let Some(m) = &l.file.model {
                choice = Some((m.clone(), l.source.clone()));
                break;
            }
        }
    }
    let (model_key, model_source) = match choice {
        Some(c) => c,
        None if cfg.models.len() == 1 || cfg.models.contains_key(IMPLICIT_MODEL_KEY) => {
            let key = if cfg.models.contains_key(IMPLICIT_MODEL_KEY) {
                IMPLICIT_MODEL_KEY.to_owned()
            } else {
                cfg.models.keys().next().cloned().unwrap_or_default()
            };
            (key, Source::Default)
        }
        None => {
            return Err(ConfigError::Invalid {
                path: global_path.to_path_buf(),
                key: "model".into(),
                message: format!(
                    "several models are configured ({}) and none is chosen; \
                     set `model = \"KEY\"` at the top of the file or pass --model KEY",
                    cfg.models.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
    };
    let Some(mut model) = cfg.models.get(&model_key).cloned() else {
        return Err(ConfigError::UnknownModel {
            key: model_key,
            known: cfg.models.keys().cloned().collect::<Vec<_>>().join(", "),
            config_file: global_path.to_path_buf(),
        });
    };
    cfg.sources.insert("model".into(), model_source);
    if let Some(name) = flag_name {
        model.name = name.clone();
        cfg.sources.insert(
            format!("models.{model_key}.name"),
            Source::Flag {
                flag: "--model".into(),
            },
        );
        cfg.models.insert(model_key.clone(), model.clone());
    } else if let Some(name) = env_model.filter(|m| !cfg.models.contains_key(*m)) {
        model.name = name.to_owned();
        cfg.sources.insert(
            format!("models.{model_key}.name"),
            Source::Env {
                var: "EONYX_MODEL".into(),
            },
        );
        cfg.models.insert(model_key.clone(), model.clone());
    }
    cfg.model_key = model_key.clone();
    cfg.model = model;
    Ok(model_key)
}

/// Merge `[models.key]` over the layers; returns the model and the source of
/// every field.
fn resolve_model(
    key: &str,
    layers: &[Layer],
    openai_base: Option<&str>,
    anthropic_base: Option<&str>,
) -> (ModelConfig, Vec<(&'static str, Source)>) {
    let mut provider = (ProviderKind::Openai, Source::Default);
    for l in layers {
        if let Some(p) = l.file.models.get(key).and_then(|m| m.provider) {
            provider = (p, l.source.clone());
        }
    }
    let mut m = ModelConfig::with_defaults(key, provider.0);
    let mut sources: BTreeMap<&'static str, Source> = [
        "provider",
        "base_url",
        "name",
        "api_key_env",
        "context_window",
        "max_input_tokens",
        "max_output_tokens",
        "temperature",
        "retries",
        "connect_timeout_secs",
        "idle_timeout_secs",
        "api",
        "reasoning_effort",
        "thinking_budget_tokens",
        "reasoning_summary",
        "pricing",
        "compaction_native",
    ]
    .into_iter()
    .map(|f| (f, Source::Default))
    .collect();
    sources.insert("provider", provider.1);
    let env_base = match provider.0 {
        ProviderKind::Openai => openai_base.map(|u| (u, "OPENAI_BASE_URL")),
        ProviderKind::Anthropic => anthropic_base.map(|u| (u, "ANTHROPIC_BASE_URL")),
    };
    if let Some((url, var)) = env_base {
        m.base_url = url.to_owned();
        sources.insert("base_url", Source::Env { var: var.into() });
    }
    for l in layers {
        let Some(f) = l.file.models.get(key) else {
            continue;
        };
        let src = &l.source;
        let mut set = |field: &'static str| {
            sources.insert(field, src.clone());
        };
        if let Some(v) = &f.base_url {
            m.base_url = v.clone();
            set("base_url");
        }
        if let Some(v) = &f.name {
            m.name = v.clone();
            set("name");
        }
        if let Some(v) = &f.api_key_env {
            m.api_key_env = Some(v.clone());
            set("api_key_env");
        }
        if let Some(v) = f.context_window {
            m.context_window = Some(v);
            set("context_window");
        }
        if let Some(v) = f.max_input_tokens {
            m.max_input_tokens = Some(v);
            set("max_input_tokens");
        }
        if let Some(v) = f.max_output_tokens {
            m.max_output_tokens = Some(v);
            set("max_output_tokens");
        }
        if let Some(v) = f.temperature {
            m.temperature = Some(v);
            set("temperature");
        }
        if let Some(v) = f.retries {
            m.retries = v;
            set("retries");
        }
        if let Some(v) = f.connect_timeout_secs {
            m.connect_timeout_secs = v;
            set("connect_timeout_secs");
        }
        if let Some(v) = f.idle_timeout_secs {
            m.idle_timeout_secs = v;
            set("idle_timeout_secs");
        }
        if let Some(v) = f.api {
            m.api = Some(v);
            set("api");
        }
        if let Some(v) = f.reasoning_effort {
            m.reasoning_effort = Some(v);
            set("reasoning_effort");
        }
        if let Some(v) = f.thinking_budget_tokens {
            m.thinking_budget_tokens = Some(v);
            set("thinking_budget_tokens");
        }
        if let Some(v) = f.reasoning_summary {
            m.reasoning_summary = v;
            set("reasoning_summary");
        }
        // The whole table of the highest layer that has one (validation
        // made `input` and `output` present).
        if let Some(p) = f.pricing
            && let (Some(input), Some(output)) = (p.input, p.output)
        {
            m.pricing = Some(eonyx_core::cost::Pricing {
                input,
                cached_input: p.cached_input.unwrap_or(input),
                output,
                cache_write: p.cache_write.unwrap_or(input),
            });
            set("pricing");
        }
        if let Some(v) = f.compaction_native {
            m.compaction_native = Some(v);
            set("compaction_native");
        }
    }
    (m, sources.into_iter().collect())
}
