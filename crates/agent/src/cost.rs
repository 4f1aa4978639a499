//! What sessions cost and what an export's chart draws (docs/sessions.md, section
//! "Cost"; docs/session-format.md#readable-exports). Costs come from the
//! usage the servers reported, priced with `models.<key>.pricing` of the
//! model each session recorded; a session whose model has no pricing
//! makes the total unknown, never a guess.

use camino::Utf8Path;
use eonyx_config::Config;
use eonyx_core::cost::{Pricing, Spend};
use eonyx_core::{Record, Role, SessionId, Usage};
use eonyx_store::{Store, StoreError};

use crate::limits as window;

/// The pricing of the model a session recorded (`None` without one, or
/// when that model is no longer configured).
pub fn pricing_for<'a>(config: &'a Config, model_key: Option<&str>) -> Option<&'a Pricing> {
    let key = model_key?;
    if key == config.model_key {
        return config.model.pricing.as_ref();
    }
    config.models.get(key)?.pricing.as_ref()
}

/// The usage of every reply of a session file, summed (rewound ones
/// too: they were paid for), and the model key its header recorded.
pub fn session_usage(
    store: &Store,
    id: &SessionId,
) -> Result<(Option<String>, u64, Usage), StoreError> {
    let log = store.read_all(id)?;
    let mut sum = Usage::default();
    let mut requests = 0;
    for r in &log.records {
        // A native compaction's call is paid for like a reply
        // (docs/compaction.md#native-compaction).
        let usage = match r {
            Record::Message(m) if m.message.role == Role::Assistant => m.message.usage.as_ref(),
            Record::Compaction(c) => c.usage.as_ref(),
            _ => None,
        };
        if let Some(u) = usage {
            requests += 1;
            sum.prompt_tokens += u.prompt_tokens;
            sum.completion_tokens += u.completion_tokens;
            sum.cached_tokens += u.cached_tokens;
            sum.cache_write_tokens += u.cache_write_tokens;
        }
    }
    Ok((log.header.and_then(|h| h.model), requests, sum))
}

/// What session `id` and all its task sessions cost, in USD; `None` when
/// a session among them that reported usage has no pricing.
pub fn session_cost(
    store: &Store,
    config: &Config,
    id: &SessionId,
) -> Result<Option<f64>, StoreError> {
    let mut spend = Spend::default();
    let mut ids = vec![id.clone()];
    ids.extend(store.descendants(id)?.into_iter().map(|s| s.id));
    for (k, id) in ids.iter().enumerate() {
        let (model, requests, usage) = match session_usage(store, id) {
            Ok(u) => u,
            // A child deleted meanwhile adds nothing.
            Err(e) if e.is_not_found() && k > 0 => continue,
            Err(e) => return Err(e),
        };
        // The session's own model decides whether it has a cost at all; a
        // task that sent nothing does not.
        if requests > 0 || k == 0 {
            spend.add(pricing_for(config, model.as_deref()), &usage);
        }
    }
    Ok(spend.usd())
}

/// The window and the automatic-compaction trigger the chart of an
/// export draws for a session of `model_key` (the active model when the
/// session recorded none or one no longer configured): the window from
/// the config and the limits cache, never asking a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartLimits {
    pub window: u64,
    pub threshold: Option<u64>,
}

pub fn chart_limits(
    config: &Config,
    data_dir: &Utf8Path,
    model_key: Option<&str>,
) -> (ChartLimits, Vec<String>) {
    let model = model_key
        .and_then(|k| config.models.get(k))
        .unwrap_or(&config.model);
    let mut warnings = Vec::new();
    let cache = window::open_cache(data_dir, &mut warnings);
    let w = window::resolve_cached(model, Some(&cache));
    let trigger = eonyx_compact::trigger(
        &config.compaction,
        &eonyx_compact::Limits {
            context_window: Some(w.tokens),
            max_input_tokens: model.max_input_tokens,
            max_output_tokens: model.max_output_tokens,
        },
    );
    (
        ChartLimits {
            window: w.tokens,
            threshold: trigger.tokens,
        },
        warnings,
    )
}

/// An export's chart window and trigger for the session's model, and what
/// the session cost (only read when some model has pricing).
pub fn export_options(
    store: &Store,
    config: &Config,
    h: &eonyx_core::SessionHeader,
) -> eonyx_export::Options {
    let (limits, _) = chart_limits(config, store.data_dir(), h.model.as_deref());
    let priced =
        config.model.pricing.is_some() || config.models.values().any(|m| m.pricing.is_some());
    let cost_usd = if priced {
        session_cost(store, config, &h.id).ok().flatten()
    } else {
        None
    };
    eonyx_export::Options {
        window: Some(limits.window),
        threshold: limits.threshold,
        cost_usd,
        chars_per_token: config.compaction.chars_per_token,
    }
}
