//! `eonyx skills`: the skills the model can load from here (docs/skills.md, section "Skills"), with
//! name, scope, path and description; `--json` for scripts. Skipped
//! (malformed) skills are warned about on stderr. Also the REPL's
//! `/skills`.

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
        printer.info(NONE);
    } else {
        for line in table(&skills, home.as_ref().map(|h| h.as_str())) {
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

const NONE: &str =
    "no skills found; add one as .agents/skills/<name>/SKILL.md (see docs/skills.md)";

/// `NAME  SCOPE  PATH  DESCRIPTION` rows, paths under `home` as `~/…`; a
/// skill the listing cap left out of the prompt is marked `(not listed)`.
fn table(skills: &Skills, home: Option<&str>) -> Vec<String> {
    let tilde = |p: &str| super::tilde(p, home);
    let rows: Vec<[String; 4]> = skills
        .skills
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut d = s.description.clone();
            if i >= skills.listed {
                d.insert_str(0, "(not listed) ");
            }
            [
                s.name.clone(),
                s.scope.as_str().to_owned(),
                tilde(s.path.as_str()),
                d,
            ]
        })
        .collect();
    let header = ["NAME", "SCOPE", "PATH", "DESCRIPTION"].map(str::to_owned);
    let [w0, w1, w2, _] = super::column_widths(&header, &rows);
    std::iter::once(&header)
        .chain(&rows)
        .map(|r| format!("{:<w0$}  {:<w1$}  {:<w2$}  {}", r[0], r[1], r[2], r[3]))
        .collect()
}

/// `/skills`: the table on stderr, then the skills re-attached after the
/// last compaction.
pub(crate) fn print_for_repl(
    printer: &Printer,
    skills: &Skills,
    in_use: &[String],
    home: Option<&str>,
) {
    if skills.is_empty() {
        printer.info(NONE);
    } else {
        for line in table(skills, home) {
            printer.info(&line);
        }
    }
    if !in_use.is_empty() {
        printer.info(&format!(
            "in use since the last compaction (re-attached after the summary): {}",
            in_use.join(", ")
        ));
    }
}

/// One line for `eonyx context` and `/context`: the `# Skills` section's
/// size and how many skills it lists.
pub(crate) fn section_line(skills: &Skills) -> String {
    let total = skills.skills.len();
    let mut s = format!(
        "skills: {} listed in the # Skills section, {} bytes, ~{} tokens",
        skills.listed,
        skills.section.len(),
        eonyx_core::tokens::estimate_text(
            &skills.section,
            eonyx_core::tokens::DEFAULT_CHARS_PER_TOKEN
        )
    );
    if skills.listed < total {
        s.push_str(&format!(
            "; {} more not listed (skills.max_listed_bytes)",
            total - skills.listed
        ));
    }
    s
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
