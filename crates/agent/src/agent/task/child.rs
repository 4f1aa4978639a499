//! Building a task's child agent from its parent: which session (new, or
//! a child of this session to continue), which profile, the child's
//! config, providers, tools, approvals and prompt.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use eonyx_config::{Config, LoadOptions, Profile};
use eonyx_core::{SessionId, ToolCall};
use eonyx_store::ChildSpec;
use eonyx_tools::task::{DEFAULT_PROFILE, TaskCall};
use eonyx_tools::{Approver, TaskLabel};

use super::super::open::connect;
use super::super::parts::{Inherit, Models, Parts, PromptState, ToolsState};
use super::super::session::{Memory, Opened, open_session};
use super::super::{Agent, SessionChoice};
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::prompt::{context_loader, task_section, tool_definitions};

/// The part of a parent's title kept in a child's (`<title>.<k>`), so the
/// child's title stays under the store's 200-byte limit.
const MAX_PARENT_TITLE_CHARS: usize = 60;

/// Why a `task` call started nothing; its text is the tool result the
/// model gets, saying what to do instead.
#[derive(Debug, thiserror::Error)]
pub(super) enum TaskError {
    #[error("unknown profile `{name}`; profiles: {known}")]
    UnknownProfile { name: String, known: String },
    #[error("cannot load the configuration of profile {profile}: {source}")]
    Config {
        profile: String,
        source: eonyx_config::ConfigError,
    },
    #[error("cannot set up the task's model: {0}")]
    Model(AgentError),
    #[error("cannot open the task's session: {0}")]
    Session(AgentError),
    #[error("cannot list sessions: {0}")]
    List(eonyx_store::StoreError),
    #[error(
        "no session {id}; `session` continues a task this conversation started (its id is on the first line of that task's result)"
    )]
    NoSession { id: SessionId },
    #[error(
        "session {id} is not a task of this session, so it cannot be continued here; start a new task instead"
    )]
    NotATask { id: SessionId },
    #[error(
        "session {id} runs with profile {profile}; leave `profile` out (or give {profile}) to continue it"
    )]
    OtherProfile { id: SessionId, profile: String },
}

/// A child agent ready to run its task.
pub(super) struct Child {
    pub agent: Agent,
    pub call_id: String,
    pub profile: String,
    pub description: String,
    /// The highest step the child started (its `StepStarted` events): how
    /// far a turn that failed got.
    pub steps: Arc<AtomicU32>,
    pub prompt: String,
}

impl Agent {
    /// Build the child for `call`. `next_number` is the `k` of the next new
    /// child's title (`<parent title>.<k>`), taken from the store once per
    /// step and advanced here. An `Err` is the tool result to give the
    /// model (nothing was started).
    pub(super) async fn prepare_child(
        &self,
        call: &ToolCall,
        task: TaskCall,
        next_number: &mut Option<u64>,
    ) -> Result<Child, TaskError> {
        let continued = match &task.session {
            Some(id) => Some(self.continuable(id, task.profile.as_deref())?),
            None => None,
        };
        let name = continued
            .clone()
            .or(task.profile.clone())
            .unwrap_or_else(|| DEFAULT_PROFILE.to_owned());
        let Some(profile) = self.config.profiles.get(&name).cloned() else {
            return Err(TaskError::UnknownProfile {
                name,
                known: names(&self.config.profiles),
            });
        };
        let mut config = eonyx_config::load(&LoadOptions {
            cwd: self.cwd.clone(),
            env: self.inherit.env.clone(),
            model: profile.model.clone().or(self.inherit.model_flag.clone()),
            profile: Some(name.clone()),
        })
        .map_err(|source| TaskError::Config {
            profile: name.clone(),
            source,
        })?;
        let mut notices = Vec::new();
        let models = self.child_models(&mut config, &mut notices).await?;
        // The parent's MCP tools the profile allows, after the built-ins.
        let window = eonyx_compact::trigger(&config.compaction, &models.limits).window;
        let mcp = self.mcp.for_child(&config, window).await;
        let mut tool_defs = self.child_tools(&config);
        tool_defs.extend(mcp.definitions());
        let inherit = self.child_inherit(&task.description);
        // The parent's approvals: its approver as it stands (config, flags,
        // the user, and what a frontend set with `set_approver`, such as an
        // ACP session's mode), each question labelled with the task.
        let approver: Arc<dyn Approver> = Arc::new(TaskLabel {
            task: task.description.clone(),
            inner: self.tools.approver.clone(),
        });
        // What a hook allowed: the parent's policy with a user who says yes
        // (or what a frontend set, such as an ACP session's mode).
        let hook = self.hook.for_child(Arc::new(TaskLabel {
            task: task.description.clone(),
            inner: self.hook.approved.clone(),
        }));

        let opened = match &task.session {
            Some(id) => open_session(
                &self.store,
                &config,
                &self.cwd,
                &self.project,
                &SessionChoice::Id(id.clone()),
            ),
            None => self.create_child_session(&config, call, &name, next_number),
        }
        .map_err(TaskError::Session)?;

        // The child's edits keep their earlier contents in its own file
        // history (its undos are in its own file, set by `assemble`); a
        // rewind of the parent's turn undoes them too
        // (docs/cli.md#rewind-and-fork).
        let mut tool_ctx = self.tools.ctx.clone();
        tool_ctx.seen = Default::default();
        tool_ctx.recall = None;
        let loader = context_loader(&self.cwd, &self.project, &config);
        // A child never writes a summary ahead: it runs inside its parent's
        // turn and is never idle, so it compacts at the trigger
        // (docs/compaction.md#ahead-of-time-summaries). A draft already in a
        // continued child's file still applies.
        // The child's events: into this agent's queue, labelled with the
        // call, its steps counted on the way.
        let steps = Arc::new(AtomicU32::new(0));
        let events = {
            let (call_id, steps) = (call.id.clone(), steps.clone());
            self.events.relabelled(move |event| {
                if let AgentEvent::StepStarted { step } = event {
                    steps.fetch_max(step, Ordering::AcqRel);
                }
                AgentEvent::Task {
                    call_id: call_id.clone(),
                    event: Box::new(event),
                }
            })
        };
        let agent = Agent::assemble(Parts {
            store: self.store.clone(),
            opened,
            models,
            project: self.project.clone(),
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            // The parent's files as read this turn, and its memory section:
            // the child's prefix starts byte for byte like the parent's.
            prompt: PromptState::new(
                loader,
                self.prompt.loaded.clone(),
                self.prompt.memory_section.clone(),
                self.prompt.skills.clone(),
                task_section(&profile),
            ),
            memory_read: Memory::Keep,
            tools: ToolsState {
                ctx: tool_ctx,
                defs: tool_defs,
                approver,
            },
            inherit,
            mcp,
            memory: self.memory.clone(),
            secrets: self.secrets.clone(),
            redactor: self.redactor.clone(),
            depth: self.depth + 1,
            notices,
            hook,
            config,
            events,
        });
        Ok(Child {
            agent,
            call_id: call.id.clone(),
            profile: name,
            description: task.description,
            prompt: task.prompt,
            steps,
        })
    }

    /// The profile of `id` when it is a child of this session that may be
    /// continued (`asked`: the profile the call named, if any).
    fn continuable(&self, id: &SessionId, asked: Option<&str>) -> Result<String, TaskError> {
        let listed = self.store.list().map_err(TaskError::List)?;
        let Some(s) = listed.into_iter().find(|s| &s.id == id) else {
            return Err(TaskError::NoSession { id: id.clone() });
        };
        if s.parent.as_ref() != Some(self.session_id()) {
            return Err(TaskError::NotATask { id: id.clone() });
        }
        let profile = s.profile.unwrap_or_else(|| DEFAULT_PROFILE.to_owned());
        match asked {
            Some(p) if p != profile => Err(TaskError::OtherProfile {
                id: id.clone(),
                profile,
            }),
            _ => Ok(profile),
        }
    }

    /// The child's providers and window: the parent's when the child
    /// keeps the parent's model and summarizer, else built and asked anew.
    async fn child_models(
        &self,
        config: &mut Config,
        notices: &mut Vec<String>,
    ) -> Result<Models, TaskError> {
        let same_model = config.model_key == self.config.model_key;
        if same_model && config.compaction.model == self.config.compaction.model {
            // The parent's model as it runs (a name the server supplied
            // included).
            config.model = self.config.model.clone();
            return Ok(Models {
                provider: self.models.provider.clone(),
                summarizer: self.models.summarizer.clone(),
                summarizer_model: self.models.summarizer_model.clone(),
                summarizer_config: self.models.summarizer_config.clone(),
                summarizer_window: self.models.summarizer_window,
                saved_quirks: (
                    self.models.provider.quirks(),
                    self.models.summarizer.quirks(),
                ),
                reprobe_after_step: false,
                limits: self.models.limits,
                total_slots: self.models.total_slots,
            });
        }
        if same_model {
            config.model = self.config.model.clone();
        }
        connect(
            config,
            self.inherit.provider.as_ref(),
            &self.inherit.env,
            self.store.data_dir(),
            notices,
        )
        .await
        .map_err(TaskError::Model)
    }

    /// The child's tools: what its profile allows of the parent's own
    /// (`task` only while the tree may grow deeper).
    fn child_tools(&self, config: &Config) -> Vec<eonyx_core::ToolDef> {
        let parent: Vec<&str> = self.tools.defs.iter().map(|d| d.name.as_str()).collect();
        tool_definitions(config, &self.prompt.skills, self.depth + 1)
            .into_iter()
            .filter(|d| parent.contains(&d.name.as_str()))
            .collect()
    }

    /// What the child passes on: the same flags and environment, and the
    /// same user, whose questions now name the task.
    fn child_inherit(&self, description: &str) -> Inherit {
        let ask = self.inherit.ask.clone().map(|inner| {
            Arc::new(TaskLabel {
                task: description.to_owned(),
                inner,
            }) as Arc<dyn Approver>
        });
        Inherit {
            ask,
            ..self.inherit.clone()
        }
    }

    /// A new child session titled `<parent title>.<k>`.
    fn create_child_session(
        &self,
        config: &Config,
        call: &ToolCall,
        profile: &str,
        next_number: &mut Option<u64>,
    ) -> Result<Opened, AgentError> {
        let k = match *next_number {
            Some(k) => k,
            None => self.store.next_child_number(self.session_id())?,
        };
        *next_number = Some(k + 1);
        let title = format!(
            "{}.{k}",
            eonyx_core::text::ellipsize(self.title(), MAX_PARENT_TITLE_CHARS)
        );
        let writer = self.store.create_child(ChildSpec {
            cwd: &self.cwd,
            project: &self.project.root,
            model: Some(&config.model.key),
            parent: self.session_id(),
            parent_call: &call.id,
            profile,
            title,
        })?;
        Ok(Opened::fresh(writer, config))
    }
}

/// The profiles a `task` call may name, for its error messages.
fn names(profiles: &std::collections::BTreeMap<String, Profile>) -> String {
    profiles.keys().cloned().collect::<Vec<_>>().join(", ")
}
