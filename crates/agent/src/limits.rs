//! Which context window applies, decided in one place (docs/providers.md#context-window): runs and
//! `eonyx config` both call [`resolve`]. The store only keeps the cache file
//! (`eonyx_store::limits`); this module decides what it means, asks the
//! servers when a session starts and records their answers.
//!
//! The window is the smallest of the configured value, the one the server
//! reports (re-asked at every start: a new answer replaces the cached one,
//! up or down) and one learned from an overflow or a silent truncation
//! (which holds until the server answers differently), else the fallback.

use camino::Utf8Path;
use eonyx_compact::Limits;
use eonyx_config::{Config, FALLBACK_CONTEXT_WINDOW};
use eonyx_core::provider::ServerLimits;
use eonyx_core::{ModelConfig, Provider};
use eonyx_store::limits::{LearnedLimit, LimitsCache, LimitsError};

/// How a window learned from a silent truncation is described.
pub const TRUNCATION_HOW: &str = "learned from a silent truncation";

/// Where the effective context window comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowOrigin {
    /// `context_window` in the config.
    Configured,
    /// Reported by the server (the cache's `how`, e.g. `detected from /props`).
    Detected { how: String, learned_at: String },
    /// Learned from an overflow or a silent truncation (`how` says which).
    Learned { how: String, learned_at: String },
    /// Nothing known: [`FALLBACK_CONTEXT_WINDOW`].
    Fallback,
}

/// The effective window of one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub tokens: u64,
    pub origin: WindowOrigin,
    /// The configured value, when something smaller overrode it.
    pub overridden: Option<u64>,
}

impl Window {
    /// Short origin tag (`configured`, `detected`, `overflow`, `truncation`,
    /// `fallback`) for JSON output.
    pub fn tag(&self) -> &'static str {
        match &self.origin {
            WindowOrigin::Configured => "configured",
            WindowOrigin::Detected { .. } => "detected",
            WindowOrigin::Learned { how, .. } if how == TRUNCATION_HOW => "truncation",
            WindowOrigin::Learned { .. } => "overflow",
            WindowOrigin::Fallback => "fallback",
        }
    }

    /// Where the window came from, for `eonyx config`; `configured_src`
    /// names the file that set `context_window`.
    pub fn describe(&self, configured_src: &str) -> String {
        let s = match &self.origin {
            WindowOrigin::Configured => format!("configured in {configured_src}"),
            WindowOrigin::Detected { how, learned_at }
            | WindowOrigin::Learned { how, learned_at } => format!("{how} at {learned_at}"),
            WindowOrigin::Fallback => "fallback: not configured and not detected yet".to_owned(),
        };
        match self.overridden {
            Some(c) => format!("{s}; configured {c}"),
            None => s,
        }
    }

    /// The one warning when a smaller server window overrides the
    /// configured one.
    pub fn override_warning(&self, configured_src: &str) -> Option<String> {
        let c = self.overridden?;
        let w = self.tokens;
        Some(format!(
            "configured context_window {c} ({configured_src}) is larger than the server's {w}; using {w}"
        ))
    }

    /// As compaction limits for `model` (the fallback stays "unknown").
    pub fn limits(&self, model: &ModelConfig) -> Limits {
        Limits {
            context_window: (self.origin != WindowOrigin::Fallback).then_some(self.tokens),
            max_input_tokens: model.max_input_tokens,
            max_output_tokens: model.max_output_tokens,
        }
    }
}

/// The window to compact against: the smallest of the configured, detected
/// and learned values, else the fallback.
pub fn resolve(configured: Option<u64>, learned: Option<&LearnedLimit>) -> Window {
    let mut best: Option<(u64, WindowOrigin)> = configured.map(|c| (c, WindowOrigin::Configured));
    let mut consider = |w: u64, origin: WindowOrigin| {
        if best.as_ref().is_none_or(|(b, _)| w < *b) {
            best = Some((w, origin));
        }
    };
    if let Some(l) = learned {
        if let Some(d) = &l.detected {
            consider(
                d.context_window,
                WindowOrigin::Detected {
                    how: d.how.clone(),
                    learned_at: d.learned_at.clone(),
                },
            );
        }
        if let Some(o) = &l.overflow {
            consider(
                o.context_window,
                WindowOrigin::Learned {
                    how: o.how.clone(),
                    learned_at: o.learned_at.clone(),
                },
            );
        }
    }
    match best {
        Some((tokens, origin)) => Window {
            tokens,
            origin,
            overridden: configured.filter(|c| *c != tokens),
        },
        None => Window {
            tokens: FALLBACK_CONTEXT_WINDOW,
            origin: WindowOrigin::Fallback,
            overridden: None,
        },
    }
}

/// The window `eonyx config` shows for `model`: from the cache only, never
/// asking the server.
pub fn resolve_cached(model: &ModelConfig, cache: Option<&LimitsCache>) -> Window {
    let learned = cache.and_then(|c| c.get(&model.base_url, &model.name));
    resolve(model.context_window, learned.as_ref())
}

/// The window a session under `config` would size its requests by, from
/// the configuration and the cache alone (no server is asked): for
/// `eonyx mcp` and `eonyx context`. Problems opening the cache are added
/// to `warnings`.
pub fn cached_window(
    config: &Config,
    env: &eonyx_config::paths::Env,
    warnings: &mut Vec<String>,
) -> u64 {
    let cache = match eonyx_config::paths::data_dir(env) {
        Ok(dir) => Some(open_cache(&dir, warnings)),
        Err(_) => None,
    };
    resolve_cached(&config.model, cache.as_ref()).tokens
}

/// Open the cache; a corrupt file is replaced by an empty cache (saved at
/// once) with a warning. Any other failure: an empty in-memory cache and a
/// warning.
pub fn open_cache(data_dir: &Utf8Path, warnings: &mut Vec<String>) -> LimitsCache {
    match LimitsCache::open(data_dir) {
        Ok(c) => c,
        Err(LimitsError::Corrupt { path, source }) => {
            let cache = LimitsCache::empty(data_dir);
            match cache.save() {
                Ok(()) => warnings.push(format!(
                    "the context-window cache {path} was not valid ({source}); replaced it with an empty one (windows are asked again)"
                )),
                Err(e) => warnings.push(format!(
                    "the context-window cache {path} is not valid ({source}) and could not be replaced: {e}"
                )),
            }
            cache
        }
        Err(e) => {
            warnings.push(e.to_string());
            LimitsCache::empty(data_dir)
        }
    }
}

/// Whether the window came from Ollama's default rather than an answer
/// (ask `/api/ps` again once the first request has loaded the model).
pub fn is_ollama_default(window: &Window) -> bool {
    matches!(&window.origin, WindowOrigin::Detected { how, .. }
        if how.ends_with(eonyx_provider::limits::OLLAMA_DEFAULT_SOURCE))
}

/// The source of `context_window` in `config` (for messages).
pub fn configured_source(config: &Config, model_key: &str) -> String {
    config
        .source(&format!("models.{model_key}.context_window"))
        .to_string()
}

/// A model without a name: when the server lists exactly one model
/// (`/v1/models`, as llama-server and vLLM do), use it and say so; else a
/// config error naming `EONYX_MODEL` and `models.<key>.name`, before any
/// request is sent.
pub async fn ensure_model_name(
    config: &mut Config,
    provider: &dyn Provider,
    notices: &mut Vec<String>,
) -> Result<(), eonyx_config::ConfigError> {
    if !config.model.name.trim().is_empty() {
        return Ok(());
    }
    let listed = provider.list_models().await;
    if let [only] = listed.as_slice() {
        notices.push(format!(
            "no model name is configured; using `{only}`, the only model {} lists (set $EONYX_MODEL or models.{}.name to choose)",
            config.model.base_url, config.model_key
        ));
        config.model.name = only.clone();
        if let Some(m) = config.models.get_mut(&config.model_key) {
            m.name = only.clone();
        }
        return Ok(());
    }
    Err(eonyx_config::ConfigError::MissingModelName {
        key: config.model_key.clone(),
        base_url: config.model.base_url.clone(),
        config_file: eonyx_config::load::global_config_path(&config.config_dir),
        listed: match listed.len() {
            0 => String::new(),
            n if n <= 8 => format!("; the server lists: {}", listed.join(", ")),
            n => format!(
                "; the server lists {n} models, e.g. {}",
                listed[..8].join(", ")
            ),
        },
    })
}

/// What a run knows about its windows once the servers were asked.
pub struct Started {
    pub window: Window,
    /// The summarizer model's window (the session's when it is the same model).
    pub summarizer_window: u64,
    /// How many requests the session's server computes at once, when it
    /// said (llama.cpp `/props` `total_slots`); asked at every start, never
    /// cached.
    pub total_slots: Option<u64>,
}

/// At session start: load the request shapes learned for both models,
/// re-ask both servers concurrently (each probe has a short timeout),
/// record the answers and resolve the windows.
pub async fn start(
    config: &Config,
    summarizer_model: &ModelConfig,
    provider: &dyn Provider,
    summarizer: &dyn Provider,
    data_dir: &Utf8Path,
    notices: &mut Vec<String>,
) -> Started {
    let model = &config.model;
    let same = summarizer_model.base_url == model.base_url && summarizer_model.name == model.name;
    let mut cache = open_cache(data_dir, notices);
    provider.set_quirks(cache.quirks(&model.base_url, &model.name));
    if !same {
        summarizer.set_quirks(cache.quirks(&summarizer_model.base_url, &summarizer_model.name));
    }
    let (main, other) = tokio::join!(probe(provider, model), async {
        if same {
            None
        } else {
            detect(summarizer, summarizer_model).await
        }
    });
    let total_slots = main.and_then(|l| l.total_slots);
    let main = main.and_then(found);
    let mut changed = false;
    if let Some((w, from)) = main {
        changed |= cache.record_detected(&model.base_url, &model.name, w, from);
    }
    if let Some((w, from)) = other {
        changed |=
            cache.record_detected(&summarizer_model.base_url, &summarizer_model.name, w, from);
    }
    if changed && let Err(e) = cache.save() {
        notices.push(format!(
            "could not remember the detected context window: {e}"
        ));
    }
    let window = resolve_cached(model, Some(&cache));
    if let Some(w) = window.override_warning(&configured_source(config, &config.model_key)) {
        notices.push(w);
    }
    let summarizer_window = if same {
        window.tokens
    } else {
        resolve_cached(summarizer_model, Some(&cache)).tokens
    };
    Started {
        window,
        summarizer_window,
        total_slots,
    }
}

/// The server's answer for `model`: window and where it came from.
pub async fn detect(provider: &dyn Provider, model: &ModelConfig) -> Option<(u64, &'static str)> {
    probe(provider, model).await.and_then(found)
}

/// Everything the server says about `model` (`None`: the model has no name).
async fn probe(provider: &dyn Provider, model: &ModelConfig) -> Option<ServerLimits> {
    if model.name.is_empty() {
        return None;
    }
    Some(provider.detect_limits(&model.name).await)
}

/// The window of a server's answer and where it came from.
fn found(limits: ServerLimits) -> Option<(u64, &'static str)> {
    Some((
        limits.context_window?,
        limits.source.unwrap_or("the server"),
    ))
}

/// Remember request-shape changes a provider learned from refused
/// parameters, so later runs send the right shape the first time.
pub fn remember_quirks(
    data_dir: &Utf8Path,
    model: &ModelConfig,
    quirks: eonyx_core::provider::RequestQuirks,
) -> Result<(), LimitsError> {
    let mut cache = open_cache(data_dir, &mut Vec::new());
    cache.record_quirks(&model.base_url, &model.name, quirks);
    cache.save()
}

#[cfg(test)]
mod tests {
    use super::*;
    use camino::Utf8PathBuf;

    /// The one test sandbox's data dir (kept alive by the returned env).
    fn dir() -> (eonyx_tests::TestEnv, Utf8PathBuf) {
        let env = eonyx_tests::TestEnv::new().unwrap();
        let data = env.data_dir.clone();
        (env, data)
    }

    #[test]
    fn the_smallest_known_value_wins() {
        let (_t, data) = dir();
        let w = resolve(None, None);
        assert_eq!((w.tokens, w.tag()), (120_000, "fallback"));
        let w = resolve(Some(8192), None);
        assert_eq!(
            (w.tokens, w.tag(), w.overridden),
            (8192, "configured", None)
        );
        let mut c = LimitsCache::empty(&data);
        c.record_detected("http://h", "m", 4096, "/props");
        let l = c.get("http://h", "m").unwrap();
        let w = resolve(Some(8192), Some(&l));
        assert_eq!((w.tokens, w.overridden), (4096, Some(8192)));
        assert!(w.describe("x").starts_with("detected from /props at "));
        assert!(w.describe("x").ends_with("; configured 8192"));
        assert_eq!(
            w.override_warning("cfg.toml").unwrap(),
            "configured context_window 8192 (cfg.toml) is larger than the server's 4096; using 4096"
        );
        let w = resolve(Some(2048), Some(&l));
        assert_eq!((w.tokens, w.tag()), (2048, "configured"));
        c.record_overflow("http://h", "m", 3000);
        let w = resolve(None, c.get("http://h", "m").as_ref());
        assert_eq!((w.tokens, w.tag()), (3000, "overflow"));
        c.record_learned("http://h", "m", 2500, TRUNCATION_HOW);
        let w = resolve(None, c.get("http://h", "m").as_ref());
        assert_eq!((w.tokens, w.tag()), (2500, "truncation"));
        assert_eq!(
            w.limits(&ModelConfig::with_defaults("m", Default::default()))
                .context_window,
            Some(2500)
        );
        assert_eq!(
            resolve(None, None)
                .limits(&ModelConfig::with_defaults("m", Default::default()))
                .context_window,
            None
        );
    }

    #[test]
    fn a_corrupt_cache_is_replaced_with_a_warning() {
        let (_t, data) = dir();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("limits.json"), "{not json").unwrap();
        let mut warnings = Vec::new();
        let _ = open_cache(&data, &mut warnings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("replaced it"), "{warnings:?}");
        let mut again = Vec::new();
        let _ = open_cache(&data, &mut again);
        assert!(again.is_empty(), "{again:?}");
    }
}
