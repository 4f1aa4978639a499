//! The next request: the system prompt (context files, date, summary,
//! memory, skills), the tools offered, and the estimate of its size. The
//! free functions here are shared with [`crate::effective_request`].

use eonyx_compact::ContextView;
use eonyx_config::Config;
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, Message, SystemPrompt, ToolDef, ToolName};
use eonyx_prompt::{Loaded, MemorySection, Skills};

use super::{Agent, ContextStatus};
use crate::tools;

impl Agent {
    /// The system prompt as it would be sent now.
    pub fn system_prompt(&self) -> SystemPrompt {
        system_prompt(
            &self.config,
            &self.prompt.loaded,
            &self.view,
            &self.prompt.memory_section,
            self.sections(),
            &eonyx_core::time::today_utc(),
        )
    }

    /// The stable prefix without the summary: what compaction budgets as
    /// overhead.
    pub(super) fn bare_system_prompt(&self) -> SystemPrompt {
        let mut bare =
            eonyx_prompt::system_prompt(&self.prompt.loaded, &eonyx_core::time::today_utc(), None);
        self.prompt.memory_section.append_to(&mut bare);
        add_sections(&mut bare, self.sections());
        bare
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
        req
    }
}

/// The tools offered to the model under `config` in a session `depth`
/// tasks deep (the agent and [`crate::effective_request`] both take them
/// from here): the built-ins in `ToolName` order, `task` last while
/// `tools.task` is on and `depth < tasks.max_depth`, all narrowed by the
/// active profile's `tools` allow-list.
pub(crate) fn tool_definitions(config: &Config, skills: &Skills, depth: u32) -> Vec<ToolDef> {
    let mut defs = tools::enabled_definitions(&config.tools);
    if config.memory.enabled {
        defs.push(tools::memory::definition());
    }
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
    defs
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

/// The sections after memory: the `# Skills` listing, the `# MCP tools`
/// listing and a task child's `# Task` section (end of the stable prefix,
/// in that order, so a child's prefix is its parent's plus `# Task`) and,
/// after a compaction, `# Skills in use` (after the summary).
fn add_sections(prompt: &mut SystemPrompt, sections: Sections<'_>) {
    eonyx_prompt::skills::add_to_prompt(prompt, sections.skills, sections.skills_in_use);
    eonyx_prompt::add_mcp_listing(prompt, sections.mcp);
    if !sections.task.is_empty() {
        prompt.stable.push_str("\n\n");
        prompt.stable.push_str(sections.task);
    }
}

/// The parts of the system prompt besides context, memory and summary: the
/// `# Skills` listing, the `# MCP tools` listing and for a task's child its
/// `# Task` section (end of the stable prefix, in that order) and, after a
/// compaction, `# Skills in use` (after the summary, in the part that
/// changes at compaction anyway).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sections<'a> {
    pub skills: &'a str,
    pub skills_in_use: &'a str,
    /// Empty unless MCP schemas are deferred (docs/mcp.md#deferred-schemas).
    pub mcp: &'a str,
    /// Empty but for a task's child.
    pub task: &'a str,
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
    sections: Sections<'_>,
    date: &str,
) -> SystemPrompt {
    let summary = view
        .summary()
        .map(|s| eonyx_prompt::summary_for_prompt(s, config.tools.recall));
    let mut prompt = eonyx_prompt::system_prompt(loaded, date, summary.as_deref());
    memory.append_to(&mut prompt);
    add_sections(&mut prompt, sections);
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
