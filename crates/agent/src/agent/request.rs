//! The next request: the system prompt (assembled by [`crate::prompt`]),
//! the tools offered, and the estimate of its size. [`next_request`] is
//! shared with [`crate::effective_request`].

use eonyx_compact::ContextView;
use eonyx_config::Config;
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, Message, SystemPrompt, ToolDef};

use super::{Agent, ContextStatus};
use crate::prompt::{PromptReport, Sections, Summary, system_prompt, tokens, tool_sizes};

impl Agent {
    /// The system prompt as it would be sent now.
    pub fn system_prompt(&self) -> SystemPrompt {
        system_prompt(
            &self.config,
            &self.prompt.loaded,
            // After a native compaction the provider's items carry the
            // compacted part and the pinned section is a message of its
            // own (docs/compaction.md#native-compaction).
            self.view
                .summary()
                .filter(|_| self.view.native().is_none())
                .map(|text| Summary {
                    pinned: self.view.pinned(),
                    text,
                    said: self.view.said(),
                }),
            &self.prompt.memory_section,
            self.sections(),
            &eonyx_core::time::today_utc(),
        )
    }

    /// The stable prefix without the summary: what compaction budgets as
    /// overhead.
    pub(super) fn bare_system_prompt(&self) -> SystemPrompt {
        system_prompt(
            &self.config,
            &self.prompt.loaded,
            None,
            &self.prompt.memory_section,
            self.sections(),
            &eonyx_core::time::today_utc(),
        )
    }

    /// The system prompt as it would be sent now and its parts, sized by
    /// this session's (calibrated) estimator: for `/context`.
    pub fn prompt_report(&self) -> PromptReport {
        let prompt = self.system_prompt();
        let mcp_names: Vec<String> = self
            .mcp
            .catalog()
            .definitions()
            .into_iter()
            .map(|d| d.name)
            .collect();
        let builtin: Vec<ToolDef> = self
            .tools
            .defs
            .iter()
            .filter(|d| !mcp_names.contains(&d.name))
            .cloned()
            .collect();
        let ready = self
            .mcp
            .status()
            .iter()
            .filter(|s| s.state == crate::mcp::ServerState::Ready)
            .count();
        let tools = tool_sizes(
            &self.compaction.estimator,
            &builtin,
            (!self.mcp.catalog().is_empty()).then_some((self.mcp.catalog(), ready)),
        );
        PromptReport {
            prompt_tokens: tokens(&self.compaction.estimator, prompt.chars()),
            prompt,
            files: self.prompt.loaded.files.clone(),
            memory_tokens: tokens(
                &self.compaction.estimator,
                self.prompt.memory_section.text.chars().count(),
            ),
            memory: self.prompt.memory_section.clone(),
            skills: self.prompt.skills.clone(),
            tools,
            mcp: None,
            memory_warning: None,
            warnings: Vec::new(),
            user_words: self.view.user_words().cloned(),
            user_words_tokens: tokens(&self.compaction.estimator, self.view.said().chars().count()),
            pins: self.pins().to_vec(),
        }
    }

    pub(super) fn sections(&self) -> Sections<'_> {
        Sections {
            skills: &self.prompt.skills.section,
            skills_in_use: &self.prompt.skills_in_use_section,
            mcp: self.mcp.listing(),
            task: &self.prompt.task_section,
        }
    }

    /// What the next request would carry: system prompt and messages.
    pub fn effective_request(&self) -> (SystemPrompt, Vec<Message>) {
        (self.system_prompt(), self.view.messages())
    }

    /// Estimated size of the next request against the effective window.
    pub fn context_status(&self) -> ContextStatus {
        let estimate = self.estimate_next();
        let window = self.compaction.trigger.window.max(1);
        let percent = estimate as f64 * 100.0 / window as f64;
        let threshold_pct = self.config.compaction.threshold_percent;
        ContextStatus {
            estimate,
            window,
            percent,
            over_threshold: percent >= threshold_pct
                || self
                    .compaction
                    .trigger
                    .tokens
                    .is_some_and(|t| estimate >= t),
            summary_ready: self.draft_ready(),
        }
    }

    pub(super) fn estimate_next(&self) -> u64 {
        let system = self.system_prompt();
        let mut size = eonyx_compact::request_size(&system, &[], &self.tools.defs);
        let msgs = self.view.size();
        size.chars += msgs.chars;
        size.images += msgs.images;
        self.compaction.estimator.estimate(&size)
    }

    pub(super) fn build_request(&self, cancel: &CancellationToken) -> ChatRequest {
        let mut req = next_request(
            &self.config,
            self.system_prompt(),
            &self.view,
            &self.tools.defs,
        );
        req.cancel = cancel.clone();
        // A fork shares its original's key (docs/session-format.md#forks).
        req.cache_key = Some(self.writer.header().cache_key().to_string());
        crate::native::attach(
            &mut req,
            self.view.native(),
            &self.config.model,
            self.models.provider.quirks().responses_api,
            self.inherit.model_flag.is_none(),
        );
        req
    }
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
