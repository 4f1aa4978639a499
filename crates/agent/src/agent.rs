//! The turn loop.

use std::sync::Arc;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_compact::{AutoGuard, ContextView, Estimator, Limits, Plan, PlanError, Trigger};
use eonyx_config::paths::{Env, Project};
use eonyx_config::{Config, LoadOptions};
use eonyx_core::provider::CancellationToken;
use eonyx_core::provider::RequestQuirks;
use eonyx_core::{
    ChatRequest, CompactionRecord, CompactionTrigger, FinishReason, Message, ModelConfig, Provider,
    ProviderError, Role, SessionId, StreamEvent, SystemPrompt, ToolCall, ToolDef, ToolName, Usage,
};
use eonyx_prompt::{ContextLoader, Loaded, MemorySection, Skills};
use eonyx_store::{SessionWriter, Store};

use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::limits::{self as window, TRUNCATION_HOW};
use crate::secrets::Redactor;
use crate::tools::{self, Approver, ToolContext};
use crate::truncation::TruncationCheck;

mod window_steps;

mod memory;

pub(crate) use memory::read_memory_section;

/// Which session to work in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// A fresh session.
    New,
    /// The most recent session of this project, or a fresh one if none.
    Latest,
    /// The most recent session of this project; an error if none.
    Continue,
    /// A given session.
    Id(SessionId),
}

/// Everything needed to start an agent.
#[derive(Clone)]
pub struct AgentOptions {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    /// `--model KEY`.
    pub model: Option<String>,
    /// `--profile NAME`.
    pub profile: Option<String>,
    /// `--allow-shell`: shell commands (and reads outside the root) run
    /// without asking.
    pub allow_shell: bool,
    /// `--allow-write`: `write_file` / `edit_file` inside the root without
    /// asking.
    pub allow_write: bool,
    /// The user, when there is one to ask (the REPL); `None` for batch runs
    /// and `eonyx run`, where what config and flags do not allow is denied.
    /// The agent applies `tools.shell` / `tools.write` and the flags first
    /// (see [`tools::PolicyApprover`]).
    pub approver: Option<Arc<dyn Approver>>,
    /// Used instead of building an HTTP client from config (tests).
    pub provider: Option<Arc<dyn Provider>>,
}

/// The result of a completed turn.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// The final assistant text.
    pub text: String,
    /// Usage summed over the turn's provider steps.
    pub usage: Usage,
    pub steps: u32,
    /// The turn ended because `max_steps` was reached.
    pub max_steps_reached: bool,
    /// Why the model stopped in the turn's last step (`length`: cut by the
    /// output cap).
    pub finish_reason: Option<FinishReason>,
}

/// The `{ctx N%}` figures.
#[derive(Debug, Clone, Copy)]
pub struct ContextStatus {
    pub estimate: u64,
    pub window: u64,
    pub percent: f64,
    /// At or above the compaction threshold.
    pub over_threshold: bool,
}

/// One eonyx agent bound to one session at a time.
pub struct Agent {
    config: Config,
    store: Store,
    writer: SessionWriter,
    message_count: u64,
    resumed: bool,
    view: ContextView,
    estimator: Estimator,
    loader: ContextLoader,
    loaded: Loaded,
    provider: Arc<dyn Provider>,
    summarizer: Arc<dyn Provider>,
    summarizer_model: String,
    /// The summarizer model's config (its window and learned quirks).
    summarizer_config: ModelConfig,
    /// The summarizer's window when it is another model than the session's.
    summarizer_window: Option<u64>,
    /// Quirks last saved for (session model, summarizer model).
    saved_quirks: (RequestQuirks, RequestQuirks),
    /// The window came from Ollama's default: ask again after the first step.
    reprobe_after_step: bool,
    truncation: TruncationCheck,
    limits: Limits,
    trigger: Trigger,
    guard: AutoGuard,
    tool_ctx: ToolContext,
    tool_defs: Vec<ToolDef>,
    approver: Arc<dyn Approver>,
    project: Project,
    cwd: Utf8PathBuf,
    startup_notices: Vec<String>,
    /// `None` when `memory.enabled = false`.
    memory: Option<eonyx_store::memory::MemoryStore>,
    /// Read when a session starts and after each compaction only, so the
    /// stable prefix stays byte-identical in between (README, section "Memory").
    memory_section: eonyx_prompt::MemorySection,
    /// Values of the configured API keys: memory refuses them.
    secrets: Vec<String>,
    /// Scrubs provider keys from tool results.
    redactor: Redactor,
    /// Skills found when the agent started (README, section "Skills"); shared with the
    /// `skill` tool through the tool context.
    skills: Arc<Skills>,
    /// Skills whose bodies are re-attached after the summary: those the
    /// last compaction record lists, and that section as rendered then.
    skills_in_use: Vec<String>,
    skills_in_use_section: String,
}

impl Agent {
    /// Load config, open the store and the session, detect the model's
    /// window when it is not configured.
    pub async fn open(opts: AgentOptions, choice: SessionChoice) -> Result<Self, AgentError> {
        let mut config = eonyx_config::load(&LoadOptions {
            cwd: opts.cwd.clone(),
            env: opts.env.clone(),
            model: opts.model.clone(),
            profile: opts.profile.clone(),
        })?;
        let data_dir = eonyx_config::paths::data_dir(&opts.env)
            .map_err(|e| AgentError::Config(eonyx_config::ConfigError::Path(e)))?;
        let store = Store::open(&data_dir)?;
        let project = eonyx_config::paths::find_project(&opts.cwd);

        let provider: Arc<dyn Provider> = match &opts.provider {
            Some(p) => p.clone(),
            None => Arc::from(eonyx_provider::from_config(&config.model, &opts.env)?),
        };
        let mut startup_notices = Vec::new();
        window::ensure_model_name(&mut config, provider.as_ref(), &mut startup_notices).await?;
        let (summarizer, summarizer_config) = if config.compaction.model.is_empty()
            || config.compaction.model == config.model_key
        {
            (provider.clone(), config.model.clone())
        } else {
            match config.model_by_key(&config.compaction.model) {
                Some(m) if opts.provider.is_none() => (
                    Arc::from(eonyx_provider::from_config(m, &opts.env)?),
                    m.clone(),
                ),
                Some(m) => (provider.clone(), m.clone()),
                None => {
                    return Err(AgentError::Usage(format!(
                        "compaction.model = {:?} names no configured model; add [models.{}] or leave it empty to use the session's model",
                        config.compaction.model, config.compaction.model
                    )));
                }
            }
        };

        let summarizer_model = summarizer_config.name.clone();
        let started = window::start(
            &config,
            &summarizer_config,
            provider.as_ref(),
            summarizer.as_ref(),
            store.data_dir(),
            &mut startup_notices,
        )
        .await;
        let limits = started.window.limits(&config.model);
        let reprobe_after_step = window::is_ollama_default(&started.window);
        let same_summarizer = summarizer_config.base_url == config.model.base_url
            && summarizer_config.name == config.model.name;
        let summarizer_window = (!same_summarizer).then_some(started.summarizer_window);
        let saved_quirks = (provider.quirks(), summarizer.quirks());
        let trigger = eonyx_compact::trigger(&config.compaction, &limits);

        let mut loader = ContextLoader::new(
            &opts.cwd,
            &project,
            &config.config_dir,
            config.context.clone(),
        );
        let loaded = loader.load();
        startup_notices.extend(loaded.warnings.iter().cloned());
        startup_notices.extend(config.warnings.iter().cloned());
        let skills = Arc::new(eonyx_prompt::skills::discover(
            &project,
            &config.config_dir,
            eonyx_prompt::skills::home_dir(&opts.env).as_deref(),
            &config.skills,
        ));
        startup_notices.extend(skills.warnings.iter().cloned());

        let key_vars = eonyx_config::secrets::key_env_vars(&config);
        let redactor = Redactor::new(&key_vars, &opts.env);
        let mut tool_ctx = ToolContext::new(
            project.root.clone(),
            std::time::Duration::from_secs(config.tools.shell_timeout_secs),
        );
        tool_ctx.max_edit_bytes = config.tools.max_edit_bytes;
        tool_ctx.hidden_env = key_vars;
        tool_ctx.skills = skills.clone();
        let approver: Arc<dyn Approver> = Arc::new(tools::PolicyApprover {
            shell: config.tools.shell,
            allow_shell: opts.allow_shell,
            write: config.tools.write,
            allow_write: opts.allow_write,
            ask: opts.approver.clone(),
        });

        let opened = open_session(&store, &config, &opts.cwd, &project, &choice)?;
        let estimator = Estimator::new(
            config.compaction.chars_per_token,
            config.compaction.image_tokens,
        );
        let guard = AutoGuard::new(config.compaction.max_consecutive);

        let memory = config
            .memory
            .enabled
            .then(|| eonyx_store::memory::MemoryStore::new(&data_dir, &project.root));
        let secrets = eonyx_config::secrets::configured_key_values(&config, &opts.env);

        let compaction_seq = opened.compaction_seq;
        let skills_in_use = opened.skills_in_use.clone();
        let mut agent = Self {
            store,
            writer: opened.writer,
            message_count: opened.message_count,
            resumed: opened.resumed,
            view: opened.view,
            estimator,
            loader,
            loaded,
            provider,
            summarizer,
            summarizer_model,
            summarizer_config,
            summarizer_window,
            saved_quirks,
            reprobe_after_step,
            truncation: TruncationCheck::default(),
            limits,
            trigger,
            guard,
            tool_ctx,
            tool_defs: tool_definitions(&config, &skills),
            approver,
            project,
            cwd: opts.cwd,
            startup_notices,
            redactor,
            config,
            memory,
            memory_section: MemorySection::default(),
            secrets,
            skills,
            skills_in_use: Vec::new(),
            skills_in_use_section: String::new(),
        };
        let notes = agent.reattach_skills(skills_in_use);
        agent.startup_notices.extend(notes);
        if let Some(w) = agent.refresh_memory() {
            agent.startup_notices.push(w);
        }
        agent.calibrate_from_history(compaction_seq);
        Ok(agent)
    }

    /// Seed the estimator from the last usage the session recorded after its
    /// last compaction, so a resumed session's first estimate (and trigger
    /// check) follows the server's count instead of the configured guess.
    fn calibrate_from_history(&mut self, compaction_seq: u64) {
        self.estimator.reset_anchor();
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
        let size =
            eonyx_compact::request_size(&self.system_prompt(), &before.messages(), &self.tool_defs);
        self.estimator.observe(&size, tokens);
    }

    /// Warnings gathered while opening (context files, config, window).
    pub fn take_startup_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.startup_notices)
    }

    pub fn session_id(&self) -> &SessionId {
        self.writer.id()
    }

    pub fn title(&self) -> &str {
        self.writer.title()
    }

    pub fn message_count(&self) -> u64 {
        self.message_count
    }

    /// Whether the current session was resumed (as opposed to new).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The resolved config this agent runs with (the REPL reads `repl.*`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The context files as last read (before the latest user turn).
    pub fn context_files(&self) -> &Loaded {
        &self.loaded
    }

    /// The running summary, if the session has been compacted.
    pub fn summary(&self) -> Option<&str> {
        self.view.summary()
    }

    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }

    /// The system prompt as it would be sent now.
    pub fn system_prompt(&self) -> SystemPrompt {
        system_prompt(
            &self.config,
            &self.loaded,
            &self.view,
            &self.memory_section,
            self.skill_sections(),
            &eonyx_core::time::today_utc(),
        )
    }

    fn skill_sections(&self) -> SkillSections<'_> {
        SkillSections {
            listing: &self.skills.section,
            in_use: &self.skills_in_use_section,
        }
    }

    /// The skills found when the agent started.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// Skills whose bodies are re-attached after the summary.
    pub fn skills_in_use(&self) -> &[String] {
        &self.skills_in_use
    }

    /// Render the bodies of `names` for the suffix; returns warnings.
    fn reattach_skills(&mut self, names: Vec<String>) -> Vec<String> {
        let rendered = eonyx_prompt::skills::skills_in_use(
            &self.skills,
            &names,
            self.config.skills.max_reloaded_bytes,
            &eonyx_prompt::FsReader,
        );
        self.skills_in_use = names;
        self.skills_in_use_section = rendered.section;
        rendered.warnings
    }

    /// The skills in use after compacting `compacted`: those already in use,
    /// then each skill loaded whole in the span (a reload moves it last, as
    /// the most recent).
    fn skills_after(&self, compacted: &[eonyx_core::MessageRecord]) -> Vec<String> {
        let mut names = self.skills_in_use.clone();
        for call in compacted
            .iter()
            .filter(|r| r.message.role == Role::Assistant)
            .flat_map(|r| &r.message.tool_calls)
            .filter(|c| ToolName::parse(&c.name) == Some(ToolName::Skill))
        {
            if let Some(name) = tools::skill::loaded_by(&call.arguments)
                && self.skills.get(name).is_some()
            {
                names.retain(|n| n != name);
                names.push(name.to_owned());
            }
        }
        names
    }

    /// What the next request would carry: system prompt and messages.
    pub fn effective_request(&self) -> (SystemPrompt, Vec<Message>) {
        (self.system_prompt(), self.view.messages())
    }

    /// Estimated size of the next request against the effective window.
    pub fn context_status(&self) -> ContextStatus {
        let estimate = self.estimate_next();
        let window = self.trigger.window.max(1);
        let percent = estimate as f64 * 100.0 / window as f64;
        let threshold_pct = self.config.compaction.threshold_percent;
        ContextStatus {
            estimate,
            window,
            percent,
            over_threshold: percent >= threshold_pct
                || self.trigger.tokens.is_some_and(|t| estimate >= t),
        }
    }

    fn estimate_next(&self) -> u64 {
        let system = self.system_prompt();
        let mut size = eonyx_compact::request_size(&system, &[], &self.tool_defs);
        let msgs = self.view.size();
        size.chars += msgs.chars;
        size.images += msgs.images;
        self.estimator.estimate(&size)
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
        self.replace_session(opened);
        Ok(())
    }

    /// Switch to another session.
    pub fn resume(&mut self, id: &SessionId) -> Result<(), AgentError> {
        let opened = open_session(
            &self.store,
            &self.config,
            &self.cwd,
            &self.project,
            &SessionChoice::Id(id.clone()),
        )?;
        self.replace_session(opened);
        Ok(())
    }

    fn replace_session(&mut self, opened: Opened) {
        let compaction_seq = opened.compaction_seq;
        let notes = self.reattach_skills(opened.skills_in_use.clone());
        self.startup_notices.extend(notes);
        self.writer = opened.writer;
        self.view = opened.view;
        self.message_count = opened.message_count;
        self.resumed = opened.resumed;
        self.tool_ctx.seen.clear();
        self.guard = AutoGuard::new(self.config.compaction.max_consecutive);
        self.truncation.forget();
        // A session starts: read memory again.
        if let Some(w) = self.refresh_memory() {
            self.startup_notices.push(w);
        }
        self.calibrate_from_history(compaction_seq);
    }

    /// Rename the current session (appends a title record).
    pub fn rename(&mut self, title: &str) -> Result<(), AgentError> {
        self.writer.rename(title)?;
        Ok(())
    }

    fn append(&mut self, message: &Message) -> Result<(), AgentError> {
        let rec = self.writer.append_message(message)?;
        self.message_count += 1;
        self.view.push(rec);
        Ok(())
    }

    /// Re-read context files before a user turn; notice on change.
    fn refresh_context(&mut self, sink: &mut (dyn FnMut(AgentEvent) + Send)) {
        let loaded = self.loader.load();
        if !loaded.changed.is_empty() {
            sink(AgentEvent::Notice(format!(
                "context changed: {} (used from this turn on)",
                loaded.changed.join(", ")
            )));
        }
        for w in &loaded.warnings {
            if !self.loaded.warnings.contains(w) {
                sink(AgentEvent::Warning(w.clone()));
            }
        }
        self.loaded = loaded;
    }

    fn build_request(&self, cancel: &CancellationToken) -> ChatRequest {
        let mut req = next_request(
            &self.config,
            self.system_prompt(),
            &self.view,
            &self.tool_defs,
        );
        req.cancel = cancel.clone();
        req.cache_key = Some(self.session_id().to_string());
        req
    }

    /// Run one user turn to completion.
    pub async fn turn(
        &mut self,
        input: &str,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.refresh_context(sink);
        self.append(&Message::user(input))?;

        let mut outcome = TurnOutcome::default();
        let max_steps = self.config.max_steps.max(1);
        loop {
            if outcome.steps >= max_steps {
                outcome.max_steps_reached = true;
                sink(AgentEvent::Notice(format!(
                    "stopped after {max_steps} model steps (max_steps); send another message to continue"
                )));
                return Ok(outcome);
            }
            if cancel.is_cancelled() {
                return Err(AgentError::Interrupted);
            }
            outcome.steps += 1;

            self.maybe_auto_compact(sink, cancel).await?;
            let response = self.step_with_recovery(outcome.steps, sink, cancel).await?;

            let mut message = response.message;
            message.role = Role::Assistant;
            if let Some(u) = response.usage {
                message.usage = Some(u);
                outcome.usage.prompt_tokens = u.prompt_tokens;
                outcome.usage.completion_tokens += u.completion_tokens;
                outcome.usage.cached_tokens = u.cached_tokens;
                sink(AgentEvent::StepUsage(u));
            }
            let calls = message.tool_calls.clone();
            outcome.text = message.content.text();
            outcome.finish_reason = response.finish_reason.clone();
            self.append(&message)?;
            self.remember_quirks(sink);
            if self.reprobe_after_step {
                self.reprobe_after_step = false;
                self.reprobe_window(sink).await;
            }
            let cut_call = if response.finish_reason == Some(FinishReason::Length) {
                sink(AgentEvent::Warning(self.cut_notice(calls.last())));
                calls.last().map(|c| c.id.clone())
            } else {
                None
            };

            if calls.is_empty() {
                return Ok(outcome);
            }
            self.run_tools(&calls, cut_call.as_deref(), sink, cancel)
                .await?;
        }
    }

    async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        cut_call: Option<&str>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let mut interrupted = false;
        self.tool_ctx.recall = self.recall_source();
        for call in calls {
            sink(AgentEvent::ToolCall(call.clone()));
            let output = if interrupted || cancel.is_cancelled() {
                interrupted = true;
                tools::ToolOutput::error(
                    "interrupted: the user cancelled this step before the tool ran",
                )
            } else if cut_call == Some(call.id.as_str()) {
                tools::ToolOutput::error(format!(
                    "error: this {} call was cut by the output cap ({}) before its arguments were complete, so it was not run. Make the call again, with shorter arguments if they were long.",
                    call.name,
                    self.output_cap_text()
                ))
            } else if call.name == tools::memory::NAME && self.memory.is_some() {
                self.run_memory_tool(call, sink)
            } else {
                tools::execute(call, &self.tool_ctx, self.approver.as_ref(), cancel).await
            };
            if cancel.is_cancelled() {
                interrupted = true;
            }
            self.record_tool_result(call, output, sink)?;
        }
        if interrupted {
            return Err(AgentError::Interrupted);
        }
        Ok(())
    }

    /// Where `recall` searches now, unless `tools.recall = false`.
    fn recall_source(&self) -> Option<tools::RecallSource> {
        self.config.tools.recall.then(|| tools::RecallSource {
            store: self.store.clone(),
            session: self.session_id().clone(),
            project: self.project.root.clone(),
            in_request_from: self.view.records().first().map_or(u64::MAX, |r| r.seq),
        })
    }

    /// The one way a tool result enters the session: scrubbed of provider
    /// keys, appended, then shown.
    fn record_tool_result(
        &mut self,
        call: &ToolCall,
        output: tools::ToolOutput,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), AgentError> {
        if let Some(event) = output.event {
            sink(AgentEvent::Tool(event));
        }
        let text = self.redactor.scrub(output.text);
        let mut result = Message::tool_result(call.id.clone(), text.clone());
        result.is_error = output.is_error;
        self.append(&result)?;
        if let Some(change) = output.change {
            sink(AgentEvent::FileChanged(change));
        }
        sink(AgentEvent::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: text,
            is_error: output.is_error,
        });
        Ok(())
    }

    /// One provider step; on a context overflow of an uncompacted request,
    /// compact against the server's real limit and retry once.
    async fn step_with_recovery(
        &mut self,
        step: u32,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<eonyx_core::ChatResponse, AgentError> {
        let mut retried = false;
        loop {
            let request = self.build_request(cancel);
            let size =
                eonyx_compact::request_size(&request.system, &request.messages, &request.tools);
            sink(AgentEvent::StepStarted { step });
            let result = {
                let mut forward = |ev: StreamEvent| {
                    if let StreamEvent::TextDelta(t) = ev {
                        sink(AgentEvent::TextDelta(t));
                    }
                };
                self.provider.send(&request, &mut forward).await
            };
            match result {
                Ok(resp) => {
                    let Some(u) = resp.usage.filter(|u| u.prompt_tokens > 0) else {
                        return Ok(resp);
                    };
                    let Some(t) = self
                        .truncation
                        .check(&size, u.prompt_tokens, &self.estimator)
                    else {
                        self.estimator.observe(&size, u.prompt_tokens);
                        return Ok(resp);
                    };
                    // A silently truncated prompt: the reply was made without
                    // the oldest messages. Learn the window, compact, resend.
                    if t.first {
                        sink(AgentEvent::Warning(format!(
                            "the server silently truncated the prompt (it counted {} tokens of the ~{} sent): its context window is about {} tokens; compacting and sending the request again",
                            u.prompt_tokens, t.expected, t.window
                        )));
                    }
                    self.learn_window(t.window, TRUNCATION_HOW, sink);
                    if retried || !self.config.compaction.auto {
                        return Ok(resp);
                    }
                    retried = true;
                    let target = eonyx_compact::overflow_target(Some(t.window), &self.trigger);
                    match self
                        .compact_with(CompactionTrigger::Overflow, None, target, sink, cancel)
                        .await
                    {
                        Ok(_) => continue,
                        Err(AgentError::NothingToCompact) => return Ok(resp),
                        Err(e) => return Err(e),
                    }
                }
                Err(ProviderError::Cancelled) => return Err(AgentError::Interrupted),
                Err(ProviderError::ContextOverflow {
                    message,
                    prompt_tokens,
                    limit,
                }) => {
                    if let Some(l) = limit {
                        self.learn_window(l, "learned from an overflow", sink);
                    }
                    if let Some(p) = prompt_tokens {
                        self.estimator.observe(&size, p);
                    }
                    if retried {
                        // Compacted and still too large: never a second retry.
                        return Err(AgentError::TooLarge {
                            what: self.describe_size(),
                        });
                    }
                    if !self.config.compaction.auto {
                        return Err(ProviderError::ContextOverflow {
                            message,
                            prompt_tokens,
                            limit,
                        }
                        .into());
                    }
                    retried = true;
                    let target = eonyx_compact::overflow_target(limit, &self.trigger);
                    match self
                        .compact_with(CompactionTrigger::Overflow, None, target, sink, cancel)
                        .await
                    {
                        Ok(_) => continue,
                        Err(AgentError::NothingToCompact) => {
                            return Err(AgentError::TooLarge {
                                what: self.describe_size(),
                            });
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn describe_size(&self) -> String {
        let system = self.system_prompt();
        let sys_tokens = eonyx_core::tokens::estimate_text(&system.text(), self.estimator.ratio());
        let mut largest: Option<(u64, String)> = None;
        for rec in self.view.records() {
            let t = eonyx_core::tokens::estimate(rec.message.chars(), self.estimator.ratio());
            if largest.as_ref().is_none_or(|(n, _)| t > *n) {
                largest = Some((
                    t,
                    format!("{} message #{}", rec.message.role.as_str(), rec.seq),
                ));
            }
        }
        let mut s = format!(
            "system prompt ~{sys_tokens} tokens, {} retained messages, window {} tokens",
            self.view.records().len(),
            self.trigger.window
        );
        if let Some((t, what)) = largest {
            s.push_str(&format!("; largest is the {what} at ~{t} tokens"));
        }
        s
    }

    fn learn_window(&mut self, limit: u64, how: &str, sink: &mut (dyn FnMut(AgentEvent) + Send)) {
        let current = self.limits.context_window.unwrap_or(u64::MAX);
        if limit < current {
            sink(AgentEvent::Notice(format!(
                "the server's context window is {limit} tokens (not {}); compacting against it from now on",
                self.limits
                    .context_window
                    .map_or("unknown".to_owned(), |w| w.to_string())
            )));
            self.limits.context_window = Some(limit);
            if let Some(mi) = self.limits.max_input_tokens {
                self.limits.max_input_tokens = Some(mi.min(limit));
            }
            self.trigger = eonyx_compact::trigger(&self.config.compaction, &self.limits);
            if let Ok(mut cache) = eonyx_store::limits::LimitsCache::open(self.store.data_dir()) {
                cache.record_learned(
                    &self.config.model.base_url,
                    &self.config.model.name,
                    limit,
                    how,
                );
                if let Err(e) = cache.save() {
                    sink(AgentEvent::Warning(format!(
                        "could not remember the learned context window: {e}"
                    )));
                }
            }
        }
    }

    async fn maybe_auto_compact(
        &mut self,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let Some(trigger_tokens) = self.trigger.tokens else {
            return Ok(());
        };
        if !self.guard.allowed() {
            return Ok(());
        }
        let estimate = self.estimate_next();
        if estimate < trigger_tokens {
            return Ok(());
        }
        let target = eonyx_compact::request_target(&self.trigger);
        match self
            .compact_with(CompactionTrigger::Auto, None, target, sink, cancel)
            .await
        {
            Ok(_) => Ok(()),
            Err(AgentError::Interrupted) => Err(AgentError::Interrupted),
            Err(AgentError::NothingToCompact) => {
                // Everything that may go is already summarized; the guard
                // keeps this from repeating every step.
                if let Some(msg) = self.guard.after_compaction(estimate, trigger_tokens) {
                    sink(AgentEvent::Notice(msg));
                }
                Ok(())
            }
            Err(AgentError::Compaction(reason)) => {
                // A failed compaction deletes nothing; go on uncompacted if the
                // request still fits the window, else fail with the reason.
                let window = self.trigger.window;
                if self.estimate_next() < window {
                    sink(AgentEvent::Warning(format!(
                        "compaction failed, continuing uncompacted: {reason}"
                    )));
                    Ok(())
                } else {
                    Err(AgentError::Compaction(reason))
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Compact now (`/compact`, `eonyx compact`).
    pub async fn compact_now(
        &mut self,
        focus: Option<&str>,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<CompactionRecord, AgentError> {
        let target = eonyx_compact::request_target(&self.trigger);
        let record = self
            .compact_with(CompactionTrigger::Manual, focus, target, sink, cancel)
            .await?
            .ok_or(AgentError::NothingToCompact)?;
        self.guard.reset();
        Ok(record)
    }

    /// Where to cut: keep the last `keep_turns` turns verbatim whenever
    /// they fit under the trigger; the lower aim (`budget`) only decides how
    /// far to cut when they do not. An overflow aims at the learned window.
    fn plan_compaction(
        &self,
        trigger: CompactionTrigger,
        overhead: u64,
        budget: u64,
    ) -> Result<Plan, AgentError> {
        let planned = |budget| {
            eonyx_compact::plan(&self.view, &self.config.compaction, &self.estimator, budget)
        };
        let keep_plan = match trigger {
            CompactionTrigger::Overflow => None,
            _ => {
                let ceiling = eonyx_compact::tail_budget(
                    self.trigger.ceiling(),
                    overhead,
                    &self.config.compaction,
                    self.trigger.window,
                );
                let want = (self.config.compaction.keep_turns as usize).max(1);
                planned(ceiling.max(budget)).ok().filter(|p| {
                    let records = self.view.records();
                    let kept = records[p.compacted_len.min(records.len())..]
                        .iter()
                        .filter(|r| r.message.role == Role::User)
                        .count();
                    !p.mid_turn && kept >= want
                })
            }
        };
        match keep_plan.map_or_else(|| planned(budget), Ok) {
            Ok(p) => Ok(p),
            Err(PlanError::NothingToCompact) => Err(AgentError::NothingToCompact),
        }
    }

    /// The request a shared-prefix summary extends (the one the
    /// conversation would send now), or `None` with a debug note when only
    /// the transcript summarizer can work: an overflow (that request is
    /// already too big) or a different `compaction.model` (another model
    /// has nothing of this conversation cached).
    fn shared_prefix_base(
        &self,
        trigger: CompactionTrigger,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Option<ChatRequest> {
        let own_model = self.config.compaction.model.is_empty()
            || self.config.compaction.model == self.config.model_key;
        let why = if trigger == CompactionTrigger::Overflow {
            "the request overflowed the window"
        } else if !own_model {
            "compaction.model is a different model"
        } else {
            return Some(self.build_request(cancel));
        };
        sink(AgentEvent::Debug(format!(
            "compaction: {why}; using the transcript summarizer"
        )));
        None
    }

    /// Compact so that the whole next request aims at `target` tokens.
    /// `Ok(None)`: collapsing older tool results made enough room, no
    /// summary was needed.
    async fn compact_with(
        &mut self,
        trigger: CompactionTrigger,
        focus: Option<&str>,
        target: u64,
        sink: &mut (dyn FnMut(AgentEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Option<CompactionRecord>, AgentError> {
        // The planner budgets the retained messages: take away what is not a
        // message (system prompt without the old summary, tool definitions)
        // and room for the new summary.
        let mut bare_system =
            eonyx_prompt::system_prompt(&self.loaded, &eonyx_core::time::today_utc(), None);
        self.memory_section.append_to(&mut bare_system);
        let skills = self.skill_sections();
        eonyx_prompt::skills::add_to_prompt(&mut bare_system, skills.listing, skills.in_use);
        let overhead = self.estimator.tokens_for(eonyx_compact::request_size(
            &bare_system,
            &[],
            &self.tool_defs,
        ));
        let budget = eonyx_compact::tail_budget(
            target,
            overhead,
            &self.config.compaction,
            self.trigger.window,
        );
        // Old tool output is the usual reason a conversation fills up:
        // collapse older results first (the newest `keep_recent_results`
        // stay whole, the session file keeps them all) and summarize only if
        // that is not enough. `/compact` asks for a summary, so it skips this.
        if trigger != CompactionTrigger::Manual {
            let excess = self.estimate_next().saturating_sub(target);
            let chars = (excess as f64 * self.estimator.ratio()).ceil() as usize;
            let n = self.view.collapse_for_room(chars);
            if n > 0 {
                sink(AgentEvent::Notice(format!(
                    "collapsed {n} older tool result(s) to make room; the session file keeps them whole"
                )));
                if self.estimate_next() <= target {
                    return Ok(None);
                }
            }
        }
        let plan = self.plan_compaction(trigger, overhead, budget)?;
        let skills_in_use = self.skills_after(plan.compacted(&self.view));
        sink(AgentEvent::CompactionStarted { trigger });
        let system_chars =
            eonyx_compact::request_size(&self.system_prompt(), &[], &self.tool_defs).chars;
        let next = self.shared_prefix_base(trigger, sink, cancel);
        let mut debug = |m: String| sink(AgentEvent::Debug(m));
        let record = eonyx_compact::compact(
            self.summarizer.as_ref(),
            &self.summarizer_model,
            &self.view,
            plan,
            &self.config.compaction,
            focus,
            trigger,
            &self.estimator,
            self.summarizer_window.unwrap_or(self.trigger.window),
            system_chars,
            next.as_ref(),
            &mut debug,
            cancel.clone(),
        )
        .await
        .map_err(|e| {
            if cancel.is_cancelled() {
                AgentError::Interrupted
            } else {
                AgentError::Compaction(e.to_string())
            }
        })?;
        self.remember_quirks(sink);
        if record.summary.contains(eonyx_compact::CUT_SUMMARY_NOTE) {
            sink(AgentEvent::Warning(format!(
                "the summary was cut at compaction.summary_max_tokens = {} even when asked for a shorter one; it was kept as is and may be incomplete",
                self.config.compaction.summary_max_tokens
            )));
        }
        let mut record = record;
        record.skills = skills_in_use;
        let saved = self.writer.append_compaction(record)?;
        self.view.apply(&saved);
        // The prefix changes here anyway: pick up memory saved since.
        if let Some(w) = self.refresh_memory() {
            sink(AgentEvent::Warning(w));
        }
        for w in self.reattach_skills(saved.skills.clone()) {
            sink(AgentEvent::Warning(w));
        }
        let after = self.estimate_next();
        if let Some(t) = self.trigger.tokens
            && let Some(msg) = self.guard.after_compaction(after, t)
        {
            sink(AgentEvent::Notice(msg));
        }
        sink(AgentEvent::Compacted(saved.clone()));
        Ok(Some(saved))
    }
}

/// The tools offered to the model under `config` (the agent and
/// [`crate::effective_request`] both take them from here).
pub(crate) fn tool_definitions(config: &Config, skills: &Skills) -> Vec<ToolDef> {
    let mut defs = tools::enabled_definitions(&config.tools);
    if config.memory.enabled {
        defs.push(tools::memory::definition());
    }
    if skills.is_empty() {
        defs.retain(|d| d.name != ToolName::Skill.as_str());
    }
    defs
}

/// The skill parts of the system prompt: the `# Skills` listing (end of the
/// stable prefix) and, after a compaction, `# Skills in use` (after the
/// summary, in the part that changes at compaction anyway).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SkillSections<'a> {
    pub listing: &'a str,
    pub in_use: &'a str,
}

/// The system prompt of the next request (the agent's estimates, its
/// requests and [`crate::effective_request`] all use it). `memory` is the
/// `# Memory` section as read when the session started or was last
/// compacted; it goes after the context files, before the skills listing.
pub(crate) fn system_prompt(
    config: &Config,
    loaded: &Loaded,
    view: &ContextView,
    memory: &MemorySection,
    skills: SkillSections<'_>,
    date: &str,
) -> SystemPrompt {
    let summary = view
        .summary()
        .map(|s| eonyx_prompt::summary_for_prompt(s, config.tools.recall));
    let mut prompt = eonyx_prompt::system_prompt(loaded, date, summary.as_deref());
    memory.append_to(&mut prompt);
    eonyx_prompt::skills::add_to_prompt(&mut prompt, skills.listing, skills.in_use);
    prompt
}

/// The next request: system prompt (context files, date line, summary),
/// the model-facing view (collapses applied) and the tools. The one
/// function behind every step the agent sends and behind
/// `eonyx sessions show --effective`.
pub(crate) fn next_request(
    config: &Config,
    system: SystemPrompt,
    view: &ContextView,
    tool_defs: &[ToolDef],
) -> ChatRequest {
    let mut req = ChatRequest::new(config.model.name.clone(), system, view.messages());
    req.tools = tool_defs.to_vec();
    req.max_tokens = config
        .model
        .max_output_tokens
        .map(|n| n.min(u32::MAX as u64) as u32);
    req.temperature = config.model.temperature;
    req
}

/// The result given, on resume, to a tool call that never got one.
pub(crate) const RESUME_INTERRUPTED: &str =
    "interrupted: eonyx stopped before this tool call finished";

/// A session ready for turns.
struct Opened {
    writer: SessionWriter,
    view: ContextView,
    message_count: u64,
    resumed: bool,
    /// Seq of the last compaction record (0 when none).
    compaction_seq: u64,
    /// The skills the last compaction record lists.
    skills_in_use: Vec<String>,
}

/// Open or create the chosen session and build its model-facing view.
fn open_session(
    store: &Store,
    config: &Config,
    cwd: &Utf8Path,
    project: &Project,
    choice: &SessionChoice,
) -> Result<Opened, AgentError> {
    let id = match choice {
        SessionChoice::New => None,
        SessionChoice::Id(id) => Some(id.clone()),
        SessionChoice::Latest | SessionChoice::Continue => {
            match store.latest_for_project(&project.root)? {
                Some(s) => Some(s.id),
                None if *choice == SessionChoice::Continue => {
                    return Err(AgentError::Usage(format!(
                        "no session to continue for project {}; start one with `eonyx run PROMPT`",
                        project.root
                    )));
                }
                None => None,
            }
        }
    };
    let cap = config.tools.output_cap_bytes;
    match id {
        None => {
            let writer = store.create(cwd, &project.root, Some(&config.model.key))?;
            let view = ContextView::new(&config.compaction, cap);
            Ok(Opened {
                writer,
                view,
                message_count: 0,
                resumed: false,
                compaction_seq: 0,
                skills_in_use: Vec::new(),
            })
        }
        Some(id) => {
            let effective = store.load_effective(&id)?;
            let mut writer = store.open_writer(&id)?;
            let dangling = unanswered_calls(&effective.messages);
            let compaction_seq = effective.compaction.as_ref().map_or(0, |c| c.seq);
            let skills_in_use = effective
                .compaction
                .as_ref()
                .map(|c| c.skills.clone())
                .unwrap_or_default();
            let mut view = ContextView::from_effective(
                &config.compaction,
                cap,
                effective.compaction.as_ref(),
                effective.messages,
            );
            let mut count = effective.message_count;
            // A process killed while tools ran leaves calls without results;
            // answer them so the history is consistent for every provider.
            for call_id in dangling {
                let rec =
                    writer.append_message(&Message::tool_result(call_id, RESUME_INTERRUPTED))?;
                count += 1;
                view.push(rec);
            }
            Ok(Opened {
                writer,
                view,
                message_count: count,
                resumed: true,
                compaction_seq,
                skills_in_use,
            })
        }
    }
}

/// Tool calls of the last assistant message that have no result after it.
pub(crate) fn unanswered_calls(records: &[eonyx_core::MessageRecord]) -> Vec<String> {
    let Some(pos) = records
        .iter()
        .rposition(|r| r.message.role == Role::Assistant)
    else {
        return Vec::new();
    };
    let answered: std::collections::HashSet<&str> = records[pos + 1..]
        .iter()
        .filter_map(|r| r.message.tool_call_id.as_deref())
        .collect();
    records[pos]
        .message
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect()
}
