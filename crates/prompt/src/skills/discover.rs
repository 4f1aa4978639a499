//! Finding skills: the directories read, in order, and the valid skills
//! in them; reading a skill's body.

use std::collections::BTreeSet;
use std::io;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::SkillsConfig;
use eonyx_core::paths::{Env, Project};

use super::front_matter::validate;
use super::sections::listing;
use super::{FRONT_MATTER_READ_BYTES, SKILL_FILE, Skill, SkillDir, SkillScope, Skills};
use crate::reader::{ContextReader, FsReader};

/// The home directory from the environment (`HOME`, else `USERPROFILE`).
pub fn home_dir(env: &Env) -> Option<Utf8PathBuf> {
    ["HOME", "USERPROFILE"]
        .iter()
        .filter_map(|v| env.get(v))
        .find(|h| !h.is_empty())
        .map(Utf8PathBuf::from)
}

/// The directories read, first wins on a name clash: for each directory
/// from the working directory up to the project root, `.agents/skills` then
/// `.claude/skills`; then `<config dir>/skills`, `~/.agents/skills`,
/// `~/.claude/skills`. A directory reached twice is read once, in its first
/// place.
pub fn skill_dirs(
    project: &Project,
    config_dir: &Utf8Path,
    home: Option<&Utf8Path>,
) -> Vec<SkillDir> {
    let mut out: Vec<SkillDir> = Vec::new();
    let mut push = |path: Utf8PathBuf, scope| {
        if !out.iter().any(|d| d.path == path) {
            out.push(SkillDir { path, scope });
        }
    };
    for dir in project.dirs.iter().rev() {
        push(dir.join(".agents").join("skills"), SkillScope::Project);
        push(dir.join(".claude").join("skills"), SkillScope::Project);
    }
    push(config_dir.join("skills"), SkillScope::Global);
    if let Some(home) = home {
        push(home.join(".agents").join("skills"), SkillScope::Global);
        push(home.join(".claude").join("skills"), SkillScope::Global);
    }
    out
}

/// Find and validate the skills of `project` (see [`skill_dirs`]) and
/// render the listing under `caps.max_listed_bytes`.
pub fn discover(
    project: &Project,
    config_dir: &Utf8Path,
    home: Option<&Utf8Path>,
    caps: &SkillsConfig,
) -> Skills {
    discover_in(&skill_dirs(project, config_dir, home), caps, &FsReader)
}

/// [`discover`] over given directories, through `reader`.
pub fn discover_in(dirs: &[SkillDir], caps: &SkillsConfig, reader: &dyn ContextReader) -> Skills {
    let mut warnings = Vec::new();
    let mut seen = BTreeSet::new();
    let mut skills = Vec::new();
    for d in dirs {
        let mut names = match reader.list_dir(&d.path) {
            Ok(names) => names,
            Err(e) if is_absent(&e) => continue,
            Err(e) => {
                warnings.push(format!(
                    "cannot read skills directory {}: {e}; its skills are skipped",
                    d.path
                ));
                continue;
            }
        };
        names.sort();
        for name in names {
            if name.starts_with('.') || seen.contains(&name) {
                continue;
            }
            let dir = d.path.join(&name);
            let path = dir.join(SKILL_FILE);
            let content = match reader.read_file(&path, FRONT_MATTER_READ_BYTES) {
                Ok(c) => c,
                // Not a directory, or a directory without SKILL.md: not a skill.
                Err(e) if is_absent(&e) => continue,
                Err(e) => {
                    warnings.push(format!("skipped skill {path}: cannot read it: {e}"));
                    continue;
                }
            };
            let text = String::from_utf8_lossy(&content.bytes);
            match validate(&text, &name) {
                Ok(description) => {
                    seen.insert(name.clone());
                    skills.push(Skill {
                        name,
                        description,
                        scope: d.scope,
                        dir,
                        path,
                    });
                }
                Err(problem) => warnings.push(format!("skipped skill {path}: {problem}")),
            }
        }
    }
    skills.sort_by(|a, b| (a.scope, &a.name).cmp(&(b.scope, &b.name)));
    let (section, listed) = listing(&skills, caps.max_listed_bytes, &mut warnings);
    Skills {
        skills,
        warnings,
        section,
        listed,
    }
}

fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}
