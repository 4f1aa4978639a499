//! The one way a system prompt is put together (docs/prompt.md#the-request):
//! what it is read from (context files, skills, memory), the order of its
//! parts, and the report of its parts with their sizes that `eonyx context`
//! and the REPL's `/context` print. [`crate::Agent`] (a session's and a
//! task child's), [`crate::effective_request`] and [`context_report`] all
//! build it here.

use std::sync::Arc;

use camino::Utf8Path;
use eonyx_compact::{Estimator, RequestSize};
use eonyx_config::Config;
use eonyx_config::paths::{Env, Project};
use eonyx_core::{SessionId, SystemPrompt, ToolDef, ToolName};
use eonyx_prompt::{ContextFileInfo, ContextLoader, Loaded, MemorySection, Skills, SkillsInUse};
use eonyx_store::memory::MemoryStore;
use eonyx_tools as tools;

use crate::error::AgentError;
use crate::mcp::McpReport;

/// The context-file loader of a session in `cwd`.
pub(crate) fn context_loader(cwd: &Utf8Path, project: &Project, config: &Config) -> ContextLoader {
    ContextLoader::new(cwd, project, &config.config_dir, config.context.clone())
}

/// What a session's prompt is read from when it opens: the context files
/// (and the loader that re-reads them every turn) and the skills.
pub(crate) struct PromptSources {
    pub loader: ContextLoader,
    pub loaded: Loaded,
    pub skills: Arc<Skills>,
}

impl PromptSources {
    pub fn read(cwd: &Utf8Path, project: &Project, config: &Config, env: &Env) -> Self {
        let mut loader = context_loader(cwd, project, config);
        let loaded = loader.load();
        let skills = Arc::new(eonyx_prompt::skills::discover(
            project,
            &config.config_dir,
            eonyx_prompt::skills::home_dir(env).as_deref(),
            &config.skills,
        ));
        Self {
            loader,
            loaded,
            skills,
        }
    }

    /// The context files' warnings, then the skills'.
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.loaded.warnings.iter().chain(&self.skills.warnings)
    }
}

/// The `# Skills in use` section for the skills `names` (those the last
/// compaction record lists).
pub(crate) fn skills_in_use(config: &Config, skills: &Skills, names: &[String]) -> SkillsInUse {
    eonyx_prompt::skills::skills_in_use(
        skills,
        names,
        config.skills.max_reloaded_bytes,
        &eonyx_prompt::FsReader,
    )
}

/// The memory store of `project_root` under `data_dir`; `None` when
/// `memory.enabled = false`.
pub(crate) fn memory_store(
    config: &Config,
    data_dir: &Utf8Path,
    project_root: &Utf8Path,
) -> Option<MemoryStore> {
    config
        .memory
        .enabled
        .then(|| MemoryStore::new(data_dir, project_root))
}

/// The `# Memory` section from `store` (`None`: memory is off), and a
/// warning when entries were left out or the files could not be read.
pub(crate) fn read_memory_section(
    store: Option<&MemoryStore>,
    max_bytes: u64,
) -> (MemorySection, Option<String>) {
    let Some(store) = store else {
        return (MemorySection::disabled(), None);
    };
    match store.list() {
        Ok(entries) => {
            let section = eonyx_prompt::memory_section(&entries, max_bytes);
            let warning = (section.omitted > 0).then(|| {
                format!(
                    "memory: {} older entr{} left out of the prompt (memory.max_bytes = {max_bytes}); `eonyx memory` lists all",
                    section.omitted,
                    if section.omitted == 1 { "y" } else { "ies" },
                )
            });
            (section, warning)
        }
        Err(e) => {
            let reason = e.to_string();
            (
                MemorySection::unreadable(&reason),
                Some(format!("memory: {reason}")),
            )
        }
    }
}

/// The parts of the system prompt besides context, memory and summary: the
/// `# Skills` listing, the `# MCP tools` listing and for a task's child its
/// `# Task` section (end of the stable prefix, in that order) and, after a
/// compaction, `# Skills in use` (after the summary, in the part that
/// changes at compaction anyway).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sections<'a> {
    pub skills: &'a str,
    pub skills_in_use: &'a str,
    /// Empty unless MCP schemas are deferred (docs/mcp.md#deferred-schemas).
    pub mcp: &'a str,
    /// Empty but for a task's child.
    pub task: &'a str,
}

/// The running summary as the system prompt shows it: what the compaction
/// record pins (the goal and the plan, rendered; docs/compaction.md#what-is-pinned)
/// first, then the summary text the record holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary<'a> {
    pub pinned: &'a str,
    pub text: &'a str,
    /// `## What the user said` (docs/compaction.md#what-the-user-said).
    pub said: &'a str,
}

/// The system prompt: base instructions and context files, the `# Memory`
/// section (as read when the session started or was last compacted), the
/// [`Sections`] of the stable prefix; then the date line, the running
/// `summary` (as the compaction record holds it) and the skills in use.
/// Every prompt eonyx sends or shows is built by this function.
pub(crate) fn system_prompt(
    config: &Config,
    loaded: &Loaded,
    summary: Option<Summary<'_>>,
    memory: &MemorySection,
    sections: Sections<'_>,
    date: &str,
) -> SystemPrompt {
    let summary = summary
        .map(|s| eonyx_prompt::summary_for_prompt(s.pinned, s.text, s.said, config.tools.recall));
    let mut prompt = eonyx_prompt::system_prompt(loaded, date, summary.as_deref());
    memory.append_to(&mut prompt);
    eonyx_prompt::skills::add_to_prompt(&mut prompt, sections.skills, sections.skills_in_use);
    eonyx_prompt::add_mcp_listing(&mut prompt, sections.mcp);
    if !sections.task.is_empty() {
        prompt.stable.push_str("\n\n");
        prompt.stable.push_str(sections.task);
    }
    prompt
}

/// The `# Task` section at the end of a task child's stable prefix: what
/// it is, then its profile's `instructions`.
pub(crate) fn task_section(profile: &eonyx_config::Profile) -> String {
    let mut s = format!(
        "# Task\n\nYou are a sub-agent of eonyx (profile {}), started by the main agent to do one task, which is the user message below. The main agent sees only your final answer, not your tool calls or their output, so make that answer complete on its own. Nobody can answer questions before you finish: decide for yourself and say what you assumed.",
        profile.name
    );
    if !profile.instructions.trim().is_empty() {
        s.push_str("\n\n");
        s.push_str(profile.instructions.trim());
    }
    s
}

/// The tools offered to the model under `config` in a session `depth`
/// tasks deep: the built-ins in `ToolName` order, `task` last while
/// `tools.task` is on and `depth < tasks.max_depth`, all narrowed by the
/// active profile's `tools` allow-list; `job_output` and `job_stop` with
/// `shell`.
pub(crate) fn tool_definitions(config: &Config, skills: &Skills, depth: u32) -> Vec<ToolDef> {
    let mut defs = tools::enabled_definitions(&config.tools);
    if config.memory.enabled {
        defs.push(tools::memory::definition());
    }
    defs.push(tools::plan_definition());
    if skills.is_empty() {
        defs.retain(|d| d.name != ToolName::Skill.as_str());
    }
    if config.tools.task && depth < config.tasks.max_depth {
        defs.push(tools::task::definition(
            config
                .profiles
                .iter()
                .map(|(name, p)| (name.as_str(), p.description.as_str())),
        ));
    }
    if let Some(profile) = config.active_profile() {
        defs.retain(|d| ToolName::parse(&d.name).is_none_or(|t| profile.allows(t)));
    }
    // The background jobs' tools come with `shell` (before `task`).
    if defs.iter().any(|d| d.name == ToolName::Shell.as_str()) {
        let at = defs
            .iter()
            .position(|d| d.name == ToolName::Task.as_str())
            .unwrap_or(defs.len());
        defs.splice(at..at, tools::jobs::definitions());
    }
    defs
}

/// A system prompt and its parts, with their sizes in tokens as the
/// estimator counts them: what `eonyx context` and `/context` print.
#[derive(Debug, Clone)]
pub struct PromptReport {
    pub prompt: SystemPrompt,
    pub prompt_tokens: u64,
    /// The context files, with their sizes (docs/prompt.md#context-files).
    pub files: Vec<ContextFileInfo>,
    pub memory: MemorySection,
    pub memory_tokens: u64,
    pub skills: Arc<Skills>,
    pub tools: ToolSizes,
    /// The MCP servers started to build it (`eonyx context` only).
    pub mcp: Option<McpReport>,
    /// Why memory could not be read (entries left out are in `memory`).
    pub memory_warning: Option<String>,
    /// Context-file and skill warnings.
    pub warnings: Vec<String>,
    /// `## What the user said` of the compaction in force
    /// (docs/compaction.md#what-the-user-said), and its size.
    pub user_words: Option<eonyx_core::said::UserWords>,
    pub user_words_tokens: u64,
    /// The user's pins in force (docs/compaction.md#pins).
    pub pins: Vec<eonyx_core::pin::Pin>,
}

/// The tool definitions of every request: the built-in ones and the MCP
/// part (its definitions, or with deferral `mcp_describe` and `mcp_call`;
/// the listing is in the system prompt then).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolSizes {
    pub builtin: usize,
    pub builtin_tokens: u64,
    pub mcp: usize,
    pub mcp_servers: usize,
    pub mcp_tokens: u64,
    pub mcp_deferred: bool,
}

impl PromptReport {
    /// The part of every request that does not change between turns:
    /// the system prompt and the tool definitions.
    pub fn fixed_tokens(&self) -> u64 {
        self.prompt_tokens + self.tools.builtin_tokens + self.tools.mcp_tokens
    }
}

/// Sizes of `text`-like parts by `estimator`.
pub(crate) fn tokens(estimator: &Estimator, chars: usize) -> u64 {
    estimator.tokens_for(RequestSize::new(chars, 0))
}

/// The sizes of `builtin` and of the MCP part of `catalog` (`servers`:
/// how many are ready).
pub(crate) fn tool_sizes(
    estimator: &Estimator,
    builtin: &[ToolDef],
    catalog: Option<(&eonyx_mcp::Catalog, usize)>,
) -> ToolSizes {
    let size = |defs: &[ToolDef]| tokens(estimator, defs.iter().map(ToolDef::chars).sum());
    let (mcp_defs, mcp, mcp_servers, mcp_deferred) = match catalog {
        Some((c, servers)) => (c.definitions(), c.entries().len(), servers, c.deferred()),
        None => (Vec::new(), 0, 0, false),
    };
    ToolSizes {
        builtin: builtin.len(),
        builtin_tokens: size(builtin),
        mcp,
        mcp_servers,
        mcp_tokens: size(&mcp_defs),
        mcp_deferred,
    }
}

/// The system prompt a new session in `cwd` would start with under
/// `config`, or with `session` what that session's next request carries
/// of its last compaction (summary, skills in use); and its parts. The
/// enabled MCP servers are started and stopped again, because their tools
/// are part of every request (docs/mcp.md#eonyx-context). No model is
/// asked.
pub async fn context_report(
    config: &Config,
    env: &Env,
    cwd: &Utf8Path,
    session: Option<&SessionId>,
) -> Result<PromptReport, AgentError> {
    let data_dir = eonyx_config::paths::data_dir(env);
    let (compaction, pins) = match session {
        Some(id) => {
            let dir = eonyx_config::paths::data_dir(env)
                .map_err(|e| AgentError::Config(eonyx_config::ConfigError::Path(e)))?;
            let effective = eonyx_store::Store::open(&dir)?.load_effective(id)?;
            let pins = crate::pins::Pins::from_file(
                effective
                    .compaction
                    .as_ref()
                    .map(|c| c.pins.as_slice())
                    .unwrap_or_default(),
                &effective.pins,
            );
            (effective.compaction, pins.list().to_vec())
        }
        None => (None, Vec::new()),
    };
    let user_words = compaction
        .as_ref()
        .and_then(|c| c.user_words.as_deref().cloned());
    let (summary, in_use_names) = compaction
        .map(|c| (Some((c.pinned_section(), c.summary)), c.skills))
        .unwrap_or_default();
    let said = user_words.as_ref().map_or("", |u| u.text.as_str());
    let project = eonyx_config::paths::find_project(cwd);
    let sources = PromptSources::read(cwd, &project, config, env);
    let (memory, memory_warning) = match &data_dir {
        Ok(dir) => {
            let (section, warning) = read_memory_section(
                memory_store(config, dir, &project.root).as_ref(),
                config.memory.max_bytes,
            );
            // Entries left out are shown with the memory line, not warned of.
            let warning = warning.filter(|_| section.omitted == 0);
            (section, warning)
        }
        Err(e) => (MemorySection::unreadable(&e.to_string()), None),
    };
    let in_use = skills_in_use(config, &sources.skills, &in_use_names);
    let mut cache_warnings = Vec::new();
    let mcp = if config.mcp.enabled().next().is_some() {
        let window = crate::limits::cached_window(config, env, &mut cache_warnings);
        Some(crate::mcp::inspect(config, env, window).await)
    } else {
        None
    };
    let listing = mcp
        .as_ref()
        .map(|r| r.catalog.listing())
        .unwrap_or_default();
    let prompt = system_prompt(
        config,
        &sources.loaded,
        summary
            .as_ref()
            .map(|(pinned, text)| Summary { pinned, text, said }),
        &memory,
        Sections {
            skills: &sources.skills.section,
            skills_in_use: &in_use.section,
            mcp: &listing,
            task: "",
        },
        &eonyx_core::time::today_utc(),
    );
    let estimator = Estimator::new(
        config.compaction.chars_per_token,
        config.compaction.image_tokens,
    );
    let ready = |r: &McpReport| {
        r.servers
            .iter()
            .filter(|s| s.state == crate::mcp::ServerState::Ready)
            .count()
    };
    let tools = tool_sizes(
        &estimator,
        &tool_definitions(config, &sources.skills, 0),
        mcp.as_ref().map(|r| (&r.catalog, ready(r))),
    );
    let warnings = cache_warnings
        .iter()
        .chain(sources.warnings())
        .chain(&in_use.warnings)
        .cloned()
        .collect();
    Ok(PromptReport {
        prompt_tokens: tokens(&estimator, prompt.chars()),
        prompt,
        files: sources.loaded.files,
        memory_tokens: tokens(&estimator, memory.text.chars().count()),
        memory,
        skills: sources.skills,
        tools,
        mcp,
        memory_warning,
        warnings,
        user_words_tokens: tokens(&estimator, said.chars().count()),
        user_words,
        pins,
    })
}
