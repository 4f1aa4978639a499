//! The prompt sections: the `# Skills` listing (stable prefix) and the
//! `# Skills in use` bodies re-attached after a compaction (suffix).

use super::front_matter::read_body;
use super::{IN_USE_INTRO, LISTING_INTRO, SKILLS_HEADING, SKILLS_IN_USE_HEADING, Skill, Skills};
use crate::reader::ContextReader;

/// The `# Skills` section: one `- name: description` line per skill while
/// the lines fit in `cap` bytes, then a note naming how many were left out.
pub(super) fn listing(skills: &[Skill], cap: u64, warnings: &mut Vec<String>) -> (String, usize) {
    if skills.is_empty() {
        return (String::new(), 0);
    }
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut lines = String::new();
    let mut listed = 0;
    for s in skills {
        let line = format!("- {}: {}\n", s.name, s.description);
        if lines.len() + line.len() > cap {
            break;
        }
        lines.push_str(&line);
        listed += 1;
    }
    let mut out = format!("{SKILLS_HEADING}\n\n{LISTING_INTRO}\n\n{lines}");
    let left = skills.len() - listed;
    if left > 0 {
        let names: Vec<&str> = skills[listed..].iter().map(|s| s.name.as_str()).collect();
        out.push_str(&format!(
            "[eonyx: {left} more skill{} not listed (skills.max_listed_bytes = {cap}): {}]\n",
            if left == 1 { "" } else { "s" },
            names.join(", ")
        ));
        warnings.push(format!(
            "the skills listing is capped by skills.max_listed_bytes = {cap}: {left} of {} skills are not listed ({}); raise the cap or remove skills",
            skills.len(),
            names.join(", ")
        ));
    }
    (out.trim_end().to_owned(), listed)
}
/// Put the `# Skills` listing at the end of the stable prefix (after the
/// context files and memory, before the date line) and the `# Skills in
/// use` section at the end of the suffix (after the summary). Empty
/// sections add nothing.
pub fn add_to_prompt(prompt: &mut eonyx_core::SystemPrompt, listing: &str, in_use: &str) {
    if !listing.is_empty() {
        prompt.stable.push_str("\n\n");
        prompt.stable.push_str(listing);
    }
    if !in_use.is_empty() {
        prompt.suffix.push_str("\n\n");
        prompt.suffix.push_str(in_use);
    }
}

/// The `# Skills in use` section and what went into it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillsInUse {
    /// The section; empty when no skill was in use.
    pub section: String,
    /// Skills whose bodies are attached.
    pub attached: Vec<String>,
    /// Skills named only: over the cap, gone or unreadable.
    pub named_only: Vec<String>,
    pub warnings: Vec<String>,
}

/// Render the bodies of `names` (in the order the model loaded them) under
/// `max_bytes`. When they do not all fit, the most recently loaded are kept
/// first; the others are named, with a note telling the model to reload
/// them with the `skill` tool.
pub fn skills_in_use(
    skills: &Skills,
    names: &[String],
    max_bytes: u64,
    reader: &dyn ContextReader,
) -> SkillsInUse {
    let mut out = SkillsInUse::default();
    if names.is_empty() {
        return out;
    }
    let cap = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut parts: Vec<Option<String>> = vec![None; names.len()];
    let mut gone = Vec::new();
    let mut used = 0usize;
    for (i, name) in names.iter().enumerate().rev() {
        let Some(skill) = skills.get(name) else {
            gone.push(name.clone());
            continue;
        };
        match read_body(skill, reader) {
            Ok(body) => {
                let part = format!("## Skill: {name}\n\n{body}");
                if used + part.len() <= cap {
                    used += part.len();
                    parts[i] = Some(part);
                }
            }
            Err(e) => {
                out.warnings.push(format!(
                    "cannot re-attach skill {name} after the compaction: cannot read {}: {e}",
                    skill.path
                ));
                gone.push(name.clone());
            }
        }
    }
    let mut text = format!("{SKILLS_IN_USE_HEADING}\n\n{IN_USE_INTRO}");
    let mut over = Vec::new();
    for (name, part) in names.iter().zip(parts) {
        match part {
            Some(p) => {
                text.push_str("\n\n");
                text.push_str(&p);
                out.attached.push(name.clone());
            }
            None if gone.contains(name) => out.named_only.push(name.clone()),
            None => {
                over.push(name.as_str());
                out.named_only.push(name.clone());
            }
        }
    }
    if !over.is_empty() {
        text.push_str(&format!(
            "\n\n[eonyx: also in use but not re-attached (skills.max_reloaded_bytes = {cap}): {}; call the `skill` tool to reload one before you follow it again]",
            over.join(", ")
        ));
        out.warnings.push(format!(
            "skills in use not re-attached after the compaction (skills.max_reloaded_bytes = {cap}): {}; the model is told to reload them",
            over.join(", ")
        ));
    }
    gone.reverse();
    if !gone.is_empty() {
        text.push_str(&format!(
            "\n\n[eonyx: also loaded earlier but no longer available: {}]",
            gone.join(", ")
        ));
    }
    out.section = text;
    out
}
