//! The turn loop: append the user message, step until the model stops
//! calling tools (or `max_steps`), run the tools, and append every message
//! before the turn continues.

use std::sync::Arc;

use eonyx_core::provider::{BoxFuture, CancellationToken};
use eonyx_core::{Content, FinishReason, Message, Role, ToolCall, ToolName};

use eonyx_core::hooks::HookEvent;

use super::hooks::{HookSaid, PreTool};
use super::{Agent, TurnOutcome, UserInput};
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::tools;

impl Agent {
    /// Run one user turn of plain text to completion.
    pub async fn turn(
        &mut self,
        input: &str,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.turn_input(&UserInput::text(input), cancel).await
    }

    /// Run one user turn (text with its attachments, see
    /// [`Agent::prepare_input`]) to completion.
    pub async fn turn_input(
        &mut self,
        input: &UserInput,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.refresh_context();
        self.mcp_before_turn(cancel).await?;
        if input.content.image_count() > 0 && self.models.provider.quirks().no_images {
            self.events.send(AgentEvent::Warning(format!(
                "{} does not accept images (it refused them before): the session keeps them, the model gets a note instead; `eonyx config --reset-limits` tries again",
                self.config.model.name
            )));
        }
        let message = match &input.content {
            Content::Text(t) => Message::user(t.as_str()),
            parts => Message::new(Role::User, parts.clone()),
        };
        let mut outcome = TurnOutcome::default();
        let message = match self.hook.prompt(message, cancel).await {
            Ok(m) => m,
            Err(reason) => {
                if cancel.is_cancelled() {
                    return Err(AgentError::Interrupted);
                }
                outcome.blocked = Some(reason);
                return Ok(outcome);
            }
        };
        if cancel.is_cancelled() {
            return Err(AgentError::Interrupted);
        }
        // Jobs that ended while the prompt waited: their notices go first.
        if let Some(notices) = self.jobs().notices()? {
            self.append(&Message::user(notices))?;
        }
        self.append(&message)?;

        if self.depth == 0 {
            self.reset_spend();
        }
        let max_steps = self.config.max_steps.max(1);
        loop {
            if outcome.steps >= max_steps {
                outcome.max_steps_reached = true;
                self.events.send(AgentEvent::Notice(format!(
                    "stopped after {max_steps} model steps (max_steps); send another message to continue"
                )));
                outcome.cost_usd = self.turn_cost();
                return Ok(outcome);
            }
            if cancel.is_cancelled() {
                return Err(AgentError::Interrupted);
            }
            outcome.steps += 1;

            if outcome.steps > 1 {
                // Exits during the turn, after the tool results.
                if let Some(notices) = self.jobs().notices()? {
                    self.append(&Message::user(notices))?;
                }
            }
            self.maybe_auto_compact(cancel).await?;
            let response = self.step_with_recovery(outcome.steps, cancel).await?;

            let mut message = response.message;
            message.role = Role::Assistant;
            if let Some(u) = response.usage {
                message.usage = Some(u);
                outcome.usage.prompt_tokens = u.prompt_tokens;
                outcome.usage.completion_tokens += u.completion_tokens;
                outcome.usage.cached_tokens = u.cached_tokens;
                outcome.usage.reasoning_tokens += u.reasoning_tokens;
                self.events.send(AgentEvent::StepUsage(u));
                self.add_spend(&u);
            }
            let calls = message.tool_calls.clone();
            outcome.text = message.content.text();
            outcome.finish_reason = response.finish_reason.clone();
            // A blocked reply is kept, marked with the provider's reason;
            // the frontends say it (`TurnOutcome::reply_blocked`).
            if let Some(FinishReason::ContentFilter(reason)) = &response.finish_reason {
                message.blocked = Some(reason.clone());
            } else if calls.is_empty()
                && outcome.text.trim().is_empty()
                && response.finish_reason == Some(FinishReason::Stop)
            {
                self.events.send(AgentEvent::Notice(
                    "the model's reply was empty: it stopped without any text".to_owned(),
                ));
            }
            self.append(&message)?;
            self.remember_quirks();
            if self.models.reprobe_after_step {
                self.models.reprobe_after_step = false;
                self.reprobe_window().await;
            }
            let cut_call = if response.finish_reason == Some(FinishReason::Length) {
                self.events
                    .send(AgentEvent::Warning(self.cut_notice(&message)));
                calls.last().map(|c| c.id.clone())
            } else {
                None
            };

            if calls.is_empty() || message.blocked.is_some() {
                // A blocked reply ends the turn: no Stop hook sends the
                // model back to what the provider refused, and any call in
                // it is not run (its results are recorded as not run).
                if message.blocked.is_some() {
                    for c in &calls {
                        self.append(&Message::tool_error(
                            c.id.as_str(),
                            "error: not run: the provider blocked the reply that made this call",
                        ))?;
                    }
                    outcome.cost_usd = self.turn_cost();
                    return Ok(outcome);
                }
                if cut_call.is_none()
                    && let Some(message) = self.hook.stop(cancel).await
                {
                    self.append(&message)?;
                    continue;
                }
                outcome.cost_usd = self.turn_cost();
                return Ok(outcome);
            }
            self.run_tools(&calls, cut_call.as_deref(), cancel).await?;
        }
    }

    pub(super) fn append(&mut self, message: &Message) -> Result<(), AgentError> {
        let rec = self.writer.append_message(message)?;
        self.message_count += 1;
        self.view.push(rec);
        Ok(())
    }

    /// Re-read context files before a user turn; notice on change.
    fn refresh_context(&mut self) {
        let loaded = self.prompt.loader.load();
        if !loaded.changed.is_empty() {
            self.events.send(AgentEvent::Notice(format!(
                "context changed: {} (used from this turn on)",
                loaded.changed.join(", ")
            )));
        }
        for w in &loaded.warnings {
            if !self.prompt.loaded.warnings.contains(w) {
                self.events.send(AgentEvent::Warning(w.clone()));
            }
        }
        self.prompt.loaded = loaded;
    }

    /// Run a step's tool calls in order and append each result. The
    /// `task` calls run together, concurrently, when the first of them is
    /// reached (docs/tools.md#task); their results still go in call order.
    async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        cut_call: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let mut interrupted = false;
        self.tools.ctx.recall = self.recall_source();
        let is_task: Vec<bool> = calls
            .iter()
            .map(|c| {
                ToolName::parse(&c.name) == Some(ToolName::Task)
                    && cut_call != Some(c.id.as_str())
                    && self.offers(&c.name)
            })
            .collect();
        let mut task_outputs: Vec<Option<tools::ToolOutput>> = vec![None; calls.len()];
        for (i, call) in calls.iter().enumerate() {
            if is_task[i] && task_outputs[i].is_none() && !interrupted && !cancel.is_cancelled() {
                let group: Vec<usize> = (i..calls.len()).filter(|&j| is_task[j]).collect();
                for &j in &group {
                    self.events.send(AgentEvent::ToolCall(calls[j].clone()));
                }
                // PreToolUse for each first: a denied one does not start.
                let mut run: Vec<(usize, ToolCall)> = Vec::new();
                for &j in &group {
                    if !self.hook.hooks.has(HookEvent::PreToolUse) {
                        run.push((j, calls[j].clone()));
                        continue;
                    }
                    match self.hook.pre_tool(&calls[j], cancel).await {
                        PreTool::Run { call, .. } => run.push((j, call)),
                        PreTool::Denied(out) => task_outputs[j] = Some(out),
                    }
                }
                let refs: Vec<&ToolCall> = run.iter().map(|(_, c)| c).collect();
                let outputs = self.run_tasks(&refs, cancel).await;
                for ((j, _), out) in run.iter().zip(outputs) {
                    task_outputs[*j] = Some(out);
                }
            } else if task_outputs[i].is_none() {
                self.events.send(AgentEvent::ToolCall(call.clone()));
            }
            let offered = self.offers(&call.name) || self.mcp.is_call(call);
            // PreToolUse for a call that would run (a task's ran with its
            // group, above).
            let mut said = HookSaid::Nothing;
            let mut denied = None;
            let mut updated = None;
            if offered
                && task_outputs[i].is_none()
                && !interrupted
                && !cancel.is_cancelled()
                && cut_call != Some(call.id.as_str())
                && self.hook.hooks.has(HookEvent::PreToolUse)
            {
                match self.hook.pre_tool(call, cancel).await {
                    PreTool::Run { call: c, said: h } => {
                        said = h;
                        updated = Some(c);
                    }
                    PreTool::Denied(out) => denied = Some(out),
                }
            }
            let call = updated.as_ref().unwrap_or(call);
            let output = if let Some(out) = task_outputs[i].take() {
                out
            } else if let Some(out) = denied {
                out
            } else if interrupted || cancel.is_cancelled() {
                interrupted = true;
                tools::ToolOutput::error(
                    "interrupted: the user cancelled this step before the tool ran",
                )
            } else if ToolName::parse(&call.name) == Some(ToolName::GoalUpdate)
                && cut_call != Some(call.id.as_str())
            {
                // Offered or not (no active goal, a task's child), a call
                // gets the answer that says why; a goal record that cannot
                // be saved stops the turn.
                self.goals().run_update_tool(call)?
            } else if !self.offers(&call.name) && !self.mcp.is_call(call) {
                // (An MCP name is looked up in the catalog, which says
                // what is available, deferred tools included.)
                self.not_offered(call)
            } else if cut_call == Some(call.id.as_str()) {
                tools::ToolOutput::error(format!(
                    "error: this {} call was cut by the output cap ({}) before its arguments were complete, so it was not run. Make the call again, with shorter arguments if they were long.",
                    call.name,
                    self.output_cap_text()
                ))
            } else {
                // The one place a tool call runs (the tools' own and, through
                // `OwnTools`, the agent's).
                // A PreToolUse hook's `allow` counts as the user's yes:
                // the same policy with a user who says yes, for this call
                // (the agent's own tools, MCP's, read it from `tools`). Its
                // `ask`: the same policy, whose questions must reach the
                // user (no mode answers them).
                let ctx = self.tools.ctx.clone();
                let approver: Arc<dyn tools::Approver> = match said {
                    HookSaid::Allow => self.hook.approved.clone(),
                    HookSaid::Ask => Arc::new(tools::MustAsk(self.tools.approver.clone())),
                    HookSaid::Nothing => self.tools.approver.clone(),
                };
                let usual = std::mem::replace(&mut self.tools.approver, approver.clone());
                let mut own = OwnTools { agent: self };
                let out = tools::execute(call, &ctx, approver.as_ref(), &mut own, cancel).await;
                self.tools.approver = usual;
                out
            };
            if cancel.is_cancelled() {
                interrupted = true;
            }
            let output = if offered && !interrupted {
                self.hook
                    .post_tool(call, output, &self.redactor, cancel)
                    .await
            } else {
                output
            };
            self.record_tool_result(call, output)?;
            self.jobs().take_events(Some(&call.id))?;
        }
        if interrupted {
            return Err(AgentError::Interrupted);
        }
        Ok(())
    }

    /// Whether the model was offered the tool `name` in this session.
    fn offers(&self, name: &str) -> bool {
        self.tools.defs.iter().any(|d| d.name == name)
    }

    /// The result of a call to a tool this session does not offer (a
    /// profile left it out, or it is turned off): never run.
    fn not_offered(&self, call: &ToolCall) -> tools::ToolOutput {
        let offered: Vec<&str> = self.tools.defs.iter().map(|d| d.name.as_str()).collect();
        let whose = match self.config.active_profile() {
            Some(p) => format!("profile {}", p.name),
            None => "this session".to_owned(),
        };
        tools::ToolOutput::error(format!(
            "unknown tool `{}`: it is not available to {whose}; available tools: {}",
            call.name,
            offered.join(", ")
        ))
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
    ) -> Result<(), AgentError> {
        match output.event {
            Some(tools::ToolEvent::Warning(w)) => self.events.send(AgentEvent::Warning(w)),
            Some(event) => self.events.send(AgentEvent::Tool(event)),
            None => {}
        }
        let text = self.redactor.scrub(output.text);
        let mut result = Message::tool_result(call.id.clone(), text.clone());
        result.is_error = output.is_error;
        result.undo = output.undo.map(Box::new);
        self.append(&result)?;
        if let Some(change) = output.change {
            self.events.send(AgentEvent::FileChanged(change));
        }
        self.events.send(AgentEvent::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            output: text,
            is_error: output.is_error,
        });
        Ok(())
    }
}

/// The tools the agent runs itself (`memory`, the MCP tools, `task`), as
/// `eonyx-tools` hands them back during one step.
struct OwnTools<'s> {
    agent: &'s mut Agent,
}

impl tools::AgentTools for OwnTools<'_> {
    fn run<'a>(
        &'a mut self,
        call: &'a ToolCall,
        cancel: &'a CancellationToken,
    ) -> Option<BoxFuture<'a, tools::ToolOutput>> {
        let name = ToolName::parse(&call.name);
        if name == Some(ToolName::Memory) && self.agent.memory.is_some() {
            let out = self.agent.run_memory_tool(call);
            return Some(Box::pin(std::future::ready(out)));
        }
        if name == Some(ToolName::Plan) {
            let out = self.agent.run_plan_tool(call);
            return Some(Box::pin(std::future::ready(out)));
        }
        if self.agent.mcp.is_call(call) {
            let agent = &*self.agent;
            let approver = agent.tools.approver.as_ref();
            return Some(Box::pin(agent.mcp.run(
                call,
                approver,
                &agent.config,
                cancel,
            )));
        }
        if name == Some(ToolName::Task) {
            // (A step's `task` calls usually run together, before this;
            // `run_tools` groups them.)
            return Some(Box::pin(async move {
                let mut outputs = self.agent.run_tasks(&[call], cancel).await;
                outputs
                    .pop()
                    .unwrap_or_else(|| tools::ToolOutput::error("the task did not run"))
            }));
        }
        None
    }
}
