//! `eonyx skills`: the skills the model can load from here (docs/skills.md, section "Skills"), with
//! name, scope, path and description; `--json` for scripts. Skipped
//! (malformed) skills are warned about on stderr. The table is the one
//! `/skills` shows.

use eonyx_agent::commands::text::lists;
use eonyx_core::paths;
use eonyx_prompt::Skills;
use eonyx_prompt::skills::{discover, home_dir};
use serde_json::json;

use crate::cli::{GlobalArgs, SkillsArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    _args: &SkillsArgs,
) -> anyhow::Result<Status> {
    let super::Setup { cwd, env, config } = super::setup(printer, global)?;
    let project = paths::find_project(&cwd);
    let home = home_dir(&env);
    let skills = discover(
        &project,
        &config.config_dir,
        home.as_deref(),
        &config.skills,
    );
    if printer.json() {
        printer.json_array(skills.skills.iter().enumerate().map(|(i, s)| SkillJson {
            description: &s.description,
            listed: i < skills.listed,
            name: &s.name,
            path: s.path.as_str(),
            scope: s.scope.as_str(),
        }))?;
    } else if skills.is_empty() {
        printer.info(lists::NO_SKILLS);
    } else {
        for line in lists::skills_table(&skills, home.as_ref().map(|h| h.as_str())) {
            printer.outln(&line)?;
        }
    }
    for w in &skills.warnings {
        printer.warn(w);
    }
    Ok(Status::Success)
}

/// A skill as `--json` lists it; its fields in alphabetical order, the
/// order its keys are written in ([`Printer::json_array`]).
#[derive(serde::Serialize)]
struct SkillJson<'a> {
    description: &'a str,
    listed: bool,
    name: &'a str,
    path: &'a str,
    scope: &'a str,
}

/// The `skills` object of `eonyx context --json`.
pub(crate) fn section_json(skills: &Skills) -> serde_json::Value {
    json!({
        "count": skills.skills.len(),
        "listed": skills.listed,
        "bytes": skills.section.len(),
        "tokens": eonyx_core::tokens::estimate_text(&skills.section, eonyx_core::tokens::DEFAULT_CHARS_PER_TOKEN),
    })
}
