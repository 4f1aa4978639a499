//! Skills in use: the skill bodies re-attached after the summary, and which
//! skills a compacted span loaded; and the session's skills as the `skill`
//! tool reads them ([`SkillList`]).

use std::sync::Arc;

use eonyx_core::{Role, ToolName};
use eonyx_prompt::Skills;
use eonyx_tools as tools;

use super::Agent;

/// The skills `eonyx-prompt` found, as the `skill` tool reads them
/// (bodies without their front matter).
#[derive(Debug)]
pub(super) struct SkillList(pub Arc<Skills>);

impl tools::SkillSource for SkillList {
    fn names(&self) -> Vec<String> {
        self.0.names().into_iter().map(str::to_owned).collect()
    }

    fn get(&self, name: &str) -> Option<tools::Skill> {
        self.0.get(name).map(|s| tools::Skill {
            name: s.name.clone(),
            dir: s.dir.clone(),
            path: s.path.clone(),
        })
    }

    fn read_body(&self, skill: &tools::Skill) -> std::io::Result<String> {
        match self.0.get(&skill.name) {
            Some(s) => eonyx_prompt::skills::read_body(s, &eonyx_prompt::FsReader),
            None => tools::NoSkills.read_body(skill),
        }
    }
}

impl Agent {
    /// Render the bodies of `names` for the suffix; returns warnings.
    pub(super) fn reattach_skills(&mut self, names: Vec<String>) -> Vec<String> {
        let rendered = crate::prompt::skills_in_use(&self.config, &self.prompt.skills, &names);
        self.prompt.skills_in_use = names;
        self.prompt.skills_in_use_section = rendered.section;
        rendered.warnings
    }

    /// The skills in use after compacting `compacted`: those already in use,
    /// then each skill loaded whole in the span (a reload moves it last, as
    /// the most recent).
    pub(super) fn skills_after(&self, compacted: &[eonyx_core::MessageRecord]) -> Vec<String> {
        let mut names = self.prompt.skills_in_use.clone();
        for call in compacted
            .iter()
            .filter(|r| r.message.role == Role::Assistant)
            .flat_map(|r| &r.message.tool_calls)
            .filter(|c| ToolName::parse(&c.name) == Some(ToolName::Skill))
        {
            if let Some(name) = tools::skill::loaded_by(&call.arguments)
                && self.prompt.skills.get(name).is_some()
            {
                names.retain(|n| n != name);
                names.push(name.to_owned());
            }
        }
        names
    }
}
