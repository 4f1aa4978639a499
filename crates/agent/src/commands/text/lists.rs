//! The listings commands show and the cli subcommands print alike:
//! skills, hooks, memory entries, sessions.

use eonyx_config::Config;
use eonyx_core::memory::MemoryEntry;
use eonyx_prompt::Skills;
use eonyx_store::SessionSummary;

use crate::Agent;

/// No skill found.
pub const NO_SKILLS: &str =
    "no skills found; add one as .agents/skills/<name>/SKILL.md (see docs/skills.md)";

/// `NAME  SCOPE  PATH  DESCRIPTION` rows under a header, paths under
/// `home` as `~/…`; a skill the listing cap left out of the prompt is
/// marked `(not listed)`.
pub fn skills_table(skills: &Skills, home: Option<&str>) -> Vec<String> {
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
                super::tilde(s.path.as_str(), home),
                d,
            ]
        })
        .collect();
    eonyx_core::text::columns(["NAME", "SCOPE", "PATH", "DESCRIPTION"], &rows)
}

/// `/skills`: the table (or that there is none), then the skills
/// re-attached after the last compaction.
pub fn skills(agent: &Agent, home: Option<&str>) -> Vec<String> {
    let skills = agent.skills();
    let mut out = if skills.is_empty() {
        vec![NO_SKILLS.to_owned()]
    } else {
        skills_table(skills, home)
    };
    let in_use = agent.skills_in_use();
    if !in_use.is_empty() {
        out.push(format!(
            "in use since the last compaction (re-attached after the summary): {}",
            in_use.join(", ")
        ));
    }
    out
}

/// No hook configured.
pub const NO_HOOKS: &str = "no hooks configured; add them under `hooks` in config.toml or a trusted eonyx.json (docs/hooks.md)";

/// One line per hook, columns aligned, under a header: event, matcher,
/// command, timeout, file and whether it runs here.
pub fn hooks_table(config: &Config) -> Vec<String> {
    let rows: Vec<[String; 6]> = config
        .hooks
        .hooks
        .iter()
        .map(|h| {
            [
                h.event.as_str().to_owned(),
                if h.matcher.is_empty() {
                    "*".to_owned()
                } else {
                    h.matcher.clone()
                },
                eonyx_core::text::ellipsize(&h.command, 60),
                format!("{}s", h.timeout_secs),
                h.file.to_string(),
                if h.runs {
                    "yes"
                } else {
                    "no: project not trusted (eonyx trust)"
                }
                .to_owned(),
            ]
        })
        .collect();
    eonyx_core::text::columns(
        ["EVENT", "MATCHER", "COMMAND", "TIMEOUT", "FILE", "RUNS"],
        &rows,
    )
}

/// `/hooks`: the table, or that there is none.
pub fn hooks(config: &Config) -> Vec<String> {
    if config.hooks.hooks.is_empty() {
        vec![NO_HOOKS.to_owned()]
    } else {
        hooks_table(config)
    }
}

/// Oldest first, newest last: by date, then global before project, then
/// file order. Malformed lines (no date) come first.
pub fn newest_last(mut entries: Vec<MemoryEntry>) -> Vec<MemoryEntry> {
    let mut indexed: Vec<(usize, MemoryEntry)> = entries.drain(..).enumerate().collect();
    indexed.sort_by(|(ia, a), (ib, b)| {
        (a.created.as_deref().unwrap_or_default(), a.scope, ia).cmp(&(
            b.created.as_deref().unwrap_or_default(),
            b.scope,
            ib,
        ))
    });
    indexed.into_iter().map(|(_, e)| e).collect()
}

/// `ID  SCOPE  DATE  TEXT` lines; `-` for what a malformed line lacks.
pub fn memory_rows(entries: &[MemoryEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            format!(
                "{:<6}  {:<7}  {:<10}  {}",
                e.id.as_deref().unwrap_or("-"),
                e.scope.as_str(),
                e.created.as_deref().unwrap_or("-"),
                e.text
            )
        })
        .collect()
}

/// `/memory`: the entries oldest first, or how to add one.
pub fn memory(entries: Vec<MemoryEntry>) -> Vec<String> {
    let entries = newest_last(entries);
    let mut out = Vec::new();
    if entries.is_empty() {
        out.push("no memory entries yet; add one with /remember TEXT".to_owned());
    }
    out.extend(memory_rows(&entries));
    out
}

/// `/sessions`: one line each, the current one marked `*`, with its
/// last activity, messages, title and tasks.
pub fn sessions(agent: &Agent, list: &[SessionSummary]) -> Vec<String> {
    list.iter()
        .map(|s| {
            let marker = if &s.id == agent.session_id() {
                "*"
            } else {
                " "
            };
            let tasks = match s.children {
                0 => String::new(),
                n => format!("  ({n} task{})", if n == 1 { "" } else { "s" }),
            };
            format!(
                "{marker} {}  {}  {:>5}  {}{tasks}",
                s.id, s.last_activity, s.message_count, s.title
            )
        })
        .collect()
}
