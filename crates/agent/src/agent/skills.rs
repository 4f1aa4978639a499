//! Skills in use: the skill bodies re-attached after the summary, and which
//! skills a compacted span loaded.

use eonyx_core::{Role, ToolName};

use super::Agent;
use crate::tools;

impl Agent {
    /// Render the bodies of `names` for the suffix; returns warnings.
    pub(super) fn reattach_skills(&mut self, names: Vec<String>) -> Vec<String> {
        let rendered = crate::prompt::skills_in_use(&self.config, &self.skills, &names);
        self.skills_in_use = names;
        self.skills_in_use_section = rendered.section;
        rendered.warnings
    }

    /// The skills in use after compacting `compacted`: those already in use,
    /// then each skill loaded whole in the span (a reload moves it last, as
    /// the most recent).
    pub(super) fn skills_after(&self, compacted: &[eonyx_core::MessageRecord]) -> Vec<String> {
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
}
