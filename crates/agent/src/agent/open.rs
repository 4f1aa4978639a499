//! Opening a session: load config, build the providers and the window,
//! open (new, latest, continue, by id) or switch the session, and answer tool
//! calls a killed process left without a result.

use std::sync::Arc;

use camino::Utf8Path;
use eonyx_compact::{AutoGuard, ContextView};
use eonyx_config::{Config, LoadOptions};
use eonyx_core::{Provider, Role, SessionId};
use eonyx_prompt::MemorySection;
use eonyx_store::Store;
use eonyx_tools::ToolContext;

use super::jobs;
use super::mcp::{McpState, wait_required};
use super::parts::{Inherit, Models, Parts, PromptState, ToolsState, approver};
use super::session::{Memory, Opened, load, open_session};
use super::skills::SkillList;
use super::switch::restore_switch;
use super::{Agent, AgentOptions, SessionChoice};
use crate::error::{AgentError, UsageError};
use crate::events::Events;
use crate::limits as window;
use crate::prompt::{PromptSources, memory_store, task_section, tool_definitions};
use crate::secrets::Redactor;

impl Agent {
    /// Load config, open the store and the session, detect the model's
    /// window when it is not configured.
    pub async fn open(opts: AgentOptions, choice: SessionChoice) -> Result<Self, AgentError> {
        let data_dir = eonyx_config::paths::data_dir(&opts.env)
            .map_err(|e| AgentError::Config(eonyx_config::ConfigError::Path(e)))?;
        let store = Store::open(&data_dir)?;
        // A task's child session opened directly (`-s ID`) runs as the
        // task it is: its profile, its `# Task` section, its depth.
        let child = match &choice {
            SessionChoice::Id(id) => store
                .list()?
                .into_iter()
                .find(|s| &s.id == id && s.parent.is_some()),
            _ => None,
        };
        let load = LoadOptions {
            cwd: opts.cwd.clone(),
            env: opts.env.clone(),
            model: opts.model.clone(),
            profile: opts
                .profile
                .clone()
                .or_else(|| child.as_ref().and_then(|c| c.profile.clone())),
        };
        let mut config = eonyx_config::load(&load)?;
        // A session continued goes on with the model `/model` chose.
        let mut startup_notices = Vec::new();
        let switched = match &child {
            Some(_) => None,
            None => restore_switch(&store, &choice, &load, &mut config, &mut startup_notices)?,
        };
        for server in &opts.mcp_servers {
            config
                .mcp
                .servers
                .insert(server.name.clone(), server.clone());
        }
        let depth = match &child {
            Some(c) => store.depth(&c.id)?,
            None => 0,
        };
        let task_section = match config.active_profile() {
            Some(p) if child.is_some() => task_section(p),
            _ => String::new(),
        };
        let project = eonyx_config::paths::find_project(&opts.cwd);
        // MCP servers start now, in parallel with the window probes below
        // (docs/mcp.md#startup); the key variables never reach them.
        let key_vars = eonyx_config::secrets::key_env_vars(&config);
        let connector = opts.mcp.clone().unwrap_or_else(|| {
            Arc::new(eonyx_mcp::RmcpConnector::new(
                opts.env.clone(),
                key_vars.clone(),
                project.root.clone(),
            ))
        });
        let mut mcp = McpState::start(&config, connector);

        let models = connect(
            &mut config,
            opts.provider.as_ref(),
            &opts.env,
            store.data_dir(),
            &mut startup_notices,
        )
        .await?;

        let PromptSources {
            loader,
            loaded,
            skills,
        } = PromptSources::read(&opts.cwd, &project, &config, &opts.env);
        startup_notices.extend(loaded.warnings.iter().cloned());
        startup_notices.extend(config.warnings.iter().cloned());
        startup_notices.extend(skills.warnings.iter().cloned());

        let redactor = Redactor::new(&key_vars, &opts.env);
        let mut tool_ctx = ToolContext::new(
            project.root.clone(),
            std::time::Duration::from_secs(config.tools.shell_timeout_secs),
        );
        tool_ctx.max_edit_bytes = config.tools.max_edit_bytes;
        tool_ctx.output_cap_bytes = config.tools.output_cap_bytes;
        tool_ctx.web = Arc::new(eonyx_web::Fetcher::new(
            eonyx_web::FetchOptions::from_config(&config.tools.web),
        ));
        tool_ctx.hidden_env = key_vars;
        tool_ctx.skills = Arc::new(SkillList(skills.clone()));
        tool_ctx.sandbox = Arc::new(eonyx_sandbox::Sandbox::new(
            config.tools.sandbox.clone(),
            &project.root,
            &opts.env,
            opts.sandbox_helper.clone(),
        ));
        let hook = super::hooks::build(&config, &project.root, &tool_ctx.hidden_env)?;
        let inherit = Inherit {
            env: opts.env.clone(),
            model_flag: opts.model.clone().or(switched),
            permissions: opts.permissions,
            // The user is asked with the Notification hooks running.
            ask: opts
                .approver
                .clone()
                .map(|a| super::hooks::notifying(&hook, a)),
            provider: opts.provider.clone(),
            spend: Default::default(),
        };
        let mut hook = hook;
        hook.approved = super::parts::approved_by_hook(&config, &inherit);

        let opened = open_session(&store, &config, &opts.cwd, &project, &choice)?;
        let memory = memory_store(&config, &data_dir, &project.root);
        let secrets = eonyx_config::secrets::configured_key_values(&config, &opts.env);
        // A required server that cannot start stops the run here.
        startup_notices.extend(wait_required(&mut mcp).await?);
        Ok(Self::assemble(Parts {
            tools: ToolsState {
                ctx: tool_ctx,
                defs: tool_definitions(&config, &skills, depth),
                approver: approver(&config, &inherit),
            },
            store,
            opened,
            models,
            home: opts.env.get("HOME").map(str::to_owned),
            cwd: opts.cwd,
            project,
            prompt: PromptState::new(
                loader,
                loaded,
                MemorySection::default(),
                skills,
                task_section,
            ),
            memory_read: Memory::Reread,
            inherit,
            mcp,
            memory,
            secrets,
            redactor,
            depth,
            notices: startup_notices,
            hook,
            config,
            events: Events::new(),
        }))
    }

    /// Seed the estimator from the last usage the session recorded after its
    /// last compaction, so a resumed session's first estimate (and trigger
    /// check) follows the server's count instead of the configured guess.
    pub(super) fn calibrate_from_history(&mut self, compaction_seq: u64) {
        self.compaction.estimator.reset_anchor();
        let records = self.view.records();
        let Some((i, tokens)) = records.iter().enumerate().rev().find_map(|(i, r)| {
            let u = r.message.usage?;
            (r.message.role == Role::Assistant && r.seq > compaction_seq && u.prompt_tokens > 0)
                .then_some((i, u.prompt_tokens))
        }) else {
            return;
        };
        // The request that produced record i: the same system prompt and
        // tools, and the view of everything before it.
        let before = ContextView::from_effective(
            &self.config.compaction,
            self.config.tools.output_cap_bytes,
            None,
            records[..i].to_vec(),
        );
        let size = eonyx_compact::request_size(
            &self.system_prompt(),
            &before.messages(),
            &self.tools.defs,
        );
        self.compaction.estimator.observe(&size, tokens);
    }

    /// Switch to a fresh session (the current one stays on disk if it got a
    /// message).
    pub fn new_session(&mut self) -> Result<(), AgentError> {
        let opened = open_session(
            &self.store,
            &self.config,
            &self.cwd,
            &self.project,
            &SessionChoice::New,
        )?;
        self.replace_session(opened, Memory::Reread);
        Ok(())
    }

    /// Switch to another session of the user's (a task's child session
    /// runs with its own profile: `eonyx -s ID` opens it, or the model
    /// continues the task).
    pub fn resume(&mut self, id: &SessionId) -> Result<(), AgentError> {
        if let Some(s) = self
            .store
            .list()?
            .into_iter()
            .find(|s| &s.id == id && s.parent.is_some())
        {
            return Err(UsageError::ResumeTask {
                id: id.clone(),
                parent: s.parent.map(|p| p.to_string()).unwrap_or_default(),
                profile: s.profile.unwrap_or_default(),
            }
            .into());
        }
        let opened = open_session(
            &self.store,
            &self.config,
            &self.cwd,
            &self.project,
            &SessionChoice::Id(id.clone()),
        )?;
        self.replace_session(opened, Memory::Reread);
        Ok(())
    }

    pub(super) fn replace_session(&mut self, mut opened: Opened, memory: Memory) {
        let compaction_seq = opened.compaction_seq;
        self.startup_notices.append(&mut opened.notices);
        let notes = self.reattach_skills(opened.skills_in_use.clone());
        self.startup_notices.extend(notes);
        self.writer = opened.writer;
        self.view = opened.view;
        self.compaction.base_seq = (compaction_seq > 0).then_some(compaction_seq);
        self.compaction.draft = opened.draft;
        self.goal = if self.depth > 0 { None } else { opened.goal };
        self.pins = opened.pins;
        self.goals().sync_tool();
        self.message_count = opened.message_count;
        self.resumed = opened.resumed;
        self.tools.ctx.undo = Some(self.undo_store());
        // The jobs of the session left are stopped (dropping the room).
        self.tools.ctx.jobs = Some(jobs::new_room(
            &self.config,
            &self.store,
            self.writer.id(),
            &self.tools.ctx.sandbox,
        ));
        // And its network namespace (docs/tools.md#one-network-per-session).
        self.tools.ctx.net = Default::default();
        if let Some(n) = self.jobs().ended_earlier(&opened.jobs_ended) {
            self.startup_notices.push(n);
        }
        self.forget_step_state();
        if memory == Memory::Reread
            && let Some(w) = self.refresh_memory()
        {
            self.startup_notices.push(w);
        }
        // A session starts: a changed MCP tool list applies from its first
        // request.
        self.mcp.session_changed();
        self.hook_session_changed();
        self.compaction.calibration_seq = compaction_seq;
        self.calibrate_from_history(compaction_seq);
    }

    /// What the agent remembers of the requests sent so far: files the
    /// model saw, the loop breaker, the truncation check.
    pub(super) fn forget_step_state(&mut self) {
        self.tools.ctx.seen.clear();
        self.compaction.guard = AutoGuard::new(self.config.compaction.max_consecutive);
        self.compaction.truncation.forget();
    }

    /// Rebuild the view of the current session from its file, as a resume
    /// would (after a rewind): the same bytes a resumed session sends.
    pub(super) fn reload_view(&mut self) -> Result<(), AgentError> {
        let loaded = load(&self.store, self.session_id(), &self.config)?;
        self.view = loaded.view;
        // The compaction in force and the draft after it as of the rewind
        // target: a draft for a boundary the rewind left out no longer
        // fits the view (docs/compaction.md#ahead-of-time-summaries).
        let compaction_seq = loaded.compaction_seq;
        self.compaction.base_seq = (compaction_seq > 0).then_some(compaction_seq);
        self.compaction.draft = loaded.draft;
        // The goal and the pins as of the rewind target.
        if self.depth == 0 {
            self.goal = loaded.goal;
        }
        self.pins = loaded.pins;
        self.goals().sync_tool();
        let notes = self.reattach_skills(loaded.skills_in_use);
        self.startup_notices.extend(notes);
        self.forget_step_state();
        self.calibrate_from_history(compaction_seq);
        Ok(())
    }
}

/// Build the providers for `config`'s model and summarizer (or use
/// `given`, a test's provider, for both), fill in a model name the server
/// must supply, and ask the servers for their windows.
pub(super) async fn connect(
    config: &mut Config,
    given: Option<&Arc<dyn Provider>>,
    env: &eonyx_config::paths::Env,
    data_dir: &Utf8Path,
    notices: &mut Vec<String>,
) -> Result<Models, AgentError> {
    let provider: Arc<dyn Provider> = match given {
        Some(p) => p.clone(),
        None => Arc::from(eonyx_provider::from_config(&config.model, env)?),
    };
    window::ensure_model_name(config, provider.as_ref(), notices).await?;
    let (summarizer, summarizer_config) =
        if config.compaction.model.is_empty() || config.compaction.model == config.model_key {
            (provider.clone(), config.model.clone())
        } else {
            match config.model_by_key(&config.compaction.model) {
                Some(m) if given.is_none() => {
                    (Arc::from(eonyx_provider::from_config(m, env)?), m.clone())
                }
                Some(m) => (provider.clone(), m.clone()),
                None => {
                    return Err(UsageError::UnknownCompactionModel {
                        name: config.compaction.model.clone(),
                    }
                    .into());
                }
            }
        };
    let started = window::start(
        config,
        &summarizer_config,
        provider.as_ref(),
        summarizer.as_ref(),
        data_dir,
        notices,
    )
    .await;
    let same_summarizer = summarizer_config.base_url == config.model.base_url
        && summarizer_config.name == config.model.name;
    Ok(Models {
        limits: started.window.limits(&config.model),
        reprobe_after_step: window::is_ollama_default(&started.window),
        summarizer_window: (!same_summarizer).then_some(started.summarizer_window),
        saved_quirks: (provider.quirks(), summarizer.quirks()),
        summarizer_model: summarizer_config.name.clone(),
        total_slots: started.total_slots,
        provider,
        summarizer,
        summarizer_config,
    })
}
