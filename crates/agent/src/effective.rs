//! `eonyx sessions show --effective`: the request the agent would send next
//! for a session, built read-only (no lock, nothing appended, no network)
//! with the same [`crate::agent::next_request`] the turn loop uses. A task's
//! child session is shown with its profile: its `# Task` section and its
//! tools (as far as config decides them; a parent started with a narrower
//! `--profile` would have narrowed them further).

use camino::Utf8PathBuf;
use eonyx_compact::ContextView;
use eonyx_config::paths::Env;
use eonyx_config::{Config, LoadOptions};
use eonyx_core::{ChatRequest, Message, MessageRecord, SessionId};
use eonyx_store::Store;

use crate::agent::{RESUME_INTERRUPTED, next_request, unanswered_calls};
use crate::error::AgentError;
use crate::prompt::{
    PromptSources, Sections, memory_store, read_memory_section, skills_in_use, system_prompt,
    task_section, tool_definitions,
};

/// The next request of a session and what it was built from.
#[derive(Debug)]
pub struct EffectiveRequest {
    pub request: ChatRequest,
    /// The exact JSON body the provider client would send.
    pub body: serde_json::Value,
    /// The configuration of the session's project that built it.
    pub config: Config,
    /// Config and context-file warnings, and a note when the session's
    /// directory is gone.
    pub warnings: Vec<String>,
}

/// Build the next request of session `id` as the agent would, resuming it
/// with `--model`/`--profile` (`model`, `profile`) in the directory the
/// session was started in (its header's `cwd`).
pub fn effective_request(
    env: &Env,
    model: Option<String>,
    profile: Option<String>,
    id: &SessionId,
) -> Result<EffectiveRequest, AgentError> {
    let data_dir = eonyx_config::paths::data_dir(env)
        .map_err(|e| AgentError::Config(eonyx_config::ConfigError::Path(e)))?;
    let store = Store::open(&data_dir)?;
    let effective = store.load_effective(id)?;
    let cwd = Utf8PathBuf::from(&effective.header.cwd);
    let mut warnings = Vec::new();
    if !cwd.is_dir() {
        warnings.push(format!(
            "the session's directory {cwd} no longer exists; its context files and project config are missing from this request"
        ));
    }
    let child = effective.header.is_child();
    let profile = profile.or_else(|| effective.header.profile.clone().filter(|_| child));
    let config = eonyx_config::load(&LoadOptions {
        cwd: cwd.clone(),
        env: env.clone(),
        model,
        profile,
    })?;
    let depth = if child { store.depth(id)? } else { 0 };
    let task = match config.active_profile() {
        Some(p) if child => task_section(p),
        _ => String::new(),
    };
    warnings.extend(config.warnings.iter().cloned());
    let mcp: Vec<&str> = config.mcp.enabled().map(|s| s.name.as_str()).collect();
    if !mcp.is_empty() {
        warnings.push(format!(
            "MCP servers are not started to show this, so their tools (or mcp_describe and mcp_call) are missing from it; the session's requests also carry those of {}: see `eonyx mcp`",
            mcp.join(", ")
        ));
    }
    let project = eonyx_config::paths::find_project(&cwd);
    // Context files and skills as the agent reads them when it opens, and
    // the skills in use since the last compaction.
    let sources = PromptSources::read(&cwd, &project, &config, env);
    warnings.extend(sources.warnings().cloned());
    let in_use_names = effective
        .compaction
        .as_ref()
        .map(|c| c.skills.clone())
        .unwrap_or_default();
    let in_use = skills_in_use(&config, &sources.skills, &in_use_names);
    warnings.extend(in_use.warnings.iter().cloned());

    // As on resume: calls left without a result get the interrupted one.
    let dangling = unanswered_calls(&effective.messages);
    let goal_active = depth == 0
        && crate::agent::goal_in_force(effective.compaction.as_ref(), effective.goal.clone())
            .is_some_and(|g| g.status == eonyx_core::goal::GoalStatus::Active);
    let mut view = ContextView::from_effective(
        &config.compaction,
        config.tools.output_cap_bytes,
        effective.compaction.as_ref(),
        effective.messages,
    );
    for (seq, call_id) in (effective.next_seq..).zip(dangling) {
        view.push(MessageRecord {
            seq,
            ts: String::new(),
            message: Message::tool_result(call_id, RESUME_INTERRUPTED),
        });
    }

    // Memory as a session opened now would read it.
    let (memory, memory_warning) = read_memory_section(
        memory_store(&config, &data_dir, &project.root).as_ref(),
        config.memory.max_bytes,
    );
    warnings.extend(memory_warning);

    let system = system_prompt(
        &config,
        &sources.loaded,
        view.summary()
            .filter(|_| view.native().is_none())
            .map(|text| crate::prompt::Summary {
                pinned: view.pinned(),
                text,
                said: view.said(),
            }),
        &memory,
        Sections {
            skills: &sources.skills.section,
            skills_in_use: &in_use.section,
            // MCP servers are not started for this (no model is asked).
            mcp: "",
            task: &task,
        },
        &eonyx_core::time::today_utc(),
    );
    let mut tools = tool_definitions(&config, &sources.skills, depth);
    // `goal_update` while a goal is active, as the agent offers it.
    if goal_active {
        tools.push(crate::tools::goal_update_definition());
    }
    let mut request = next_request(&config, system, &view, &tools);
    // Shaped by the parameters this model refused before, as the client sends it.
    let quirks = crate::limits::open_cache(&data_dir, &mut warnings)
        .quirks(&config.model.base_url, &config.model.name);
    // A native compaction's items, when they are for this model
    // (docs/compaction.md#native-compaction).
    crate::native::attach(
        &mut request,
        view.native(),
        &config.model,
        quirks.responses_api,
    );
    let body = eonyx_provider::request_body_with(&config.model, &request, quirks);
    Ok(EffectiveRequest {
        request,
        body,
        config,
        warnings,
    })
}
