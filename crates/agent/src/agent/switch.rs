//! The switch of model or effort applied to a config: `/model`'s
//! (`model.rs`) and the one a continued session recorded, restored when
//! it is opened (`open.rs`); docs/session-format.md#model-records. Kept apart
//! from both so neither imports the other.

use eonyx_config::{Config, LoadOptions};
use eonyx_core::config::ReasoningEffort;
use eonyx_core::record::ModelRecord;

use crate::error::AgentError;

/// Take the model, its key, the models table and the compaction settings
/// from `from` into `config` (an effort an earlier switch set on another
/// model does not linger), with `effort` (when given) in place of the configured one: an
/// effort chosen with `/model` also replaces `thinking_budget_tokens`, so
/// the effort's budget applies.
pub(super) fn adopt_model(config: &mut Config, from: &Config, effort: Option<ReasoningEffort>) {
    config.model_key = from.model_key.clone();
    config.model = from.model.clone();
    config.models = from.models.clone();
    config.compaction = from.compaction.clone();
    apply_effort(config, effort);
}

/// `effort`, when given, as the model's reasoning effort.
pub(super) fn apply_effort(config: &mut Config, effort: Option<ReasoningEffort>) {
    if let Some(e) = effort {
        config.model.reasoning_effort = Some(e);
        config.model.thinking_budget_tokens = None;
        if let Some(m) = config.models.get_mut(&config.model_key) {
            m.reasoning_effort = Some(e);
            m.thinking_budget_tokens = None;
        }
    }
}

/// The switch a session recorded, as the config to open it with: `None`
/// when it recorded none or `--model` was given (the flag wins). A key no
/// longer configured is a notice and changes nothing.
pub(super) fn recorded_model(
    record: Option<ModelRecord>,
    config: &Config,
    notices: &mut Vec<String>,
) -> Option<ModelRecord> {
    let r = record?;
    if config.models.contains_key(&r.key) {
        return Some(r);
    }
    notices.push(format!(
        "this session switched to model {:?}, which is no longer configured; using {}",
        r.key, config.model_key
    ));
    None
}

/// Apply the switch the chosen session recorded (`eonyx run -c` after a
/// `/model`) to `config`, unless `--model` was given. Returns the key in
/// force when a switch applied.
pub(super) fn restore_switch(
    store: &eonyx_store::Store,
    choice: &super::SessionChoice,
    opts: &LoadOptions,
    config: &mut Config,
    notices: &mut Vec<String>,
) -> Result<Option<String>, AgentError> {
    use super::SessionChoice;
    if opts.model.is_some() {
        return Ok(None);
    }
    let id = match choice {
        SessionChoice::New => return Ok(None),
        SessionChoice::Id(id) => Some(id.clone()),
        SessionChoice::Latest | SessionChoice::Continue => {
            let project = eonyx_config::paths::find_project(&opts.cwd);
            store.latest_for_project(&project.root)?.map(|s| s.id)
        }
    };
    // A session that cannot be read is reported when it is opened.
    let record = id.and_then(|id| store.model_switch(&id).ok().flatten());
    let Some(r) = recorded_model(record, config, notices) else {
        return Ok(None);
    };
    if r.key == config.model_key {
        apply_effort(config, r.reasoning_effort);
    } else {
        let from = eonyx_config::load(&LoadOptions {
            model: Some(r.key.clone()),
            ..opts.clone()
        })?;
        adopt_model(config, &from, r.reasoning_effort);
    }
    Ok(Some(r.key))
}
