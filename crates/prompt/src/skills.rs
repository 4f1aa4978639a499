//! Skills in the open Agent Skills format (SPEC §14): discovery, front
//! matter validation, the `# Skills` listing for the stable prefix and the
//! `# Skills in use` section re-attached after a compaction.
//!
//! A skill is a directory `<name>/` holding a `SKILL.md` whose YAML front
//! matter has `name` (= the directory name) and `description`, followed by
//! a Markdown body; `scripts/`, `references/` and `assets/` are optional.
//! Only the name and description go into the prompt; the body is read when
//! the model asks for it (the agent's `skill` tool).
//!
//! Invariants:
//! - The directories are read in [`skill_dirs`] order and the first skill
//!   of a name wins: nearer project directories before outer ones, project
//!   before global.
//! - Discovery never fails: a malformed skill, an unreadable file or
//!   directory and a symlink loop are skipped with a warning naming the
//!   file and the problem; a directory without `SKILL.md` is not a skill.
//! - Same files give byte-identical sections (sorted, no clock).
//! - Nothing is cut silently: the listing cap and the re-attach cap are
//!   stated in the prompt (`[eonyx: …]`) and returned as warnings.

use std::collections::BTreeSet;
use std::io;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::SkillsConfig;
use eonyx_core::paths::{Env, Project};
use serde::Deserialize;

use crate::reader::{ContextReader, FsReader};

/// The file that makes a directory a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Heading of the listing in the stable prefix.
pub const SKILLS_HEADING: &str = "# Skills";
/// Heading of the re-attached bodies after the summary.
pub const SKILLS_IN_USE_HEADING: &str = "# Skills in use";
/// Longest `description` allowed (characters).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `name` allowed (characters, as in the Agent Skills spec).
pub const MAX_NAME_CHARS: usize = 64;
/// Most bytes of a `SKILL.md` (or of a file inside a skill) that are read.
/// The `skill` tool's results are not cut by `tools.output_cap_bytes` nor
/// collapsed (a procedure being followed stays whole), so this bounds them.
pub const MAX_SKILL_FILE_BYTES: u64 = 128 * 1024;
/// Bytes of a `SKILL.md` read at discovery; the front matter must end
/// within them.
const FRONT_MATTER_READ_BYTES: u64 = 64 * 1024;

const LISTING_INTRO: &str = "Skills are instructions for particular tasks. When a task matches a skill below, first call the `skill` tool with its name to read them; read a file the skill mentions with `skill` and `path`, and run its scripts with `shell`.";

const IN_USE_INTRO: &str = "These skills were loaded with the `skill` tool before the conversation was compacted; keep following them where they still apply.";

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkillScope {
    /// `.agents/skills` or `.claude/skills` between the working directory
    /// and the project root.
    Project,
    /// `<config dir>/skills`, `~/.agents/skills` or `~/.claude/skills`.
    Global,
}

impl SkillScope {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillScope::Project => "project",
            SkillScope::Global => "global",
        }
    }
}

/// One valid skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// The description with runs of whitespace folded to one space.
    pub description: String,
    pub scope: SkillScope,
    /// The skill's directory.
    pub dir: Utf8PathBuf,
    /// Its `SKILL.md`.
    pub path: Utf8PathBuf,
}

/// A directory that may hold skills, one subdirectory per skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    pub path: Utf8PathBuf,
    pub scope: SkillScope,
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    /// Valid skills in listing order: project ones first, then global,
    /// each by name.
    pub skills: Vec<Skill>,
    /// Skipped skills and unreadable directories, and the listing cap.
    pub warnings: Vec<String>,
    /// The `# Skills` section; empty when there is no skill.
    pub section: String,
    /// How many skills the section lists (the rest were cut by the cap).
    pub listed: usize,
}

impl Skills {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The names, in listing order.
    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }
}

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

/// The `# Skills` section: one `- name: description` line per skill while
/// the lines fit in `cap` bytes, then a note naming how many were left out.
fn listing(skills: &[Skill], cap: u64, warnings: &mut Vec<String>) -> (String, usize) {
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

#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Split a `SKILL.md` into its YAML front matter and body. `None` when it
/// does not start with a `---` line. The front matter ends at the next
/// `---` (or `...`) line; `Some((yaml, None))` when it never does.
pub fn split_front_matter(text: &str) -> Option<(&str, Option<&str>)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    if first.trim_end() != "---" {
        return None;
    }
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return Some((&rest[..at], Some(&rest[at + line.len()..])));
        }
        at += line.len();
    }
    Some((rest, None))
}

/// The Markdown body of a `SKILL.md` (everything after the front matter),
/// trimmed; the whole text when it has no front matter.
pub fn body_of(text: &str) -> &str {
    match split_front_matter(text) {
        Some((_, Some(body))) => body.trim(),
        _ => text.trim(),
    }
}

/// Check a `SKILL.md` found in directory `dir_name`; the description with
/// whitespace folded, or what is wrong.
pub fn validate(text: &str, dir_name: &str) -> Result<String, String> {
    let Some((yaml, body)) = split_front_matter(text) else {
        return Err(
            "it does not start with YAML front matter (a `---` line, then `name:` and `description:`, then `---`)"
                .to_owned(),
        );
    };
    if body.is_none() {
        return Err(
            "its YAML front matter has no closing `---` line (within the first 64 KiB)".to_owned(),
        );
    }
    let fm: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        serde_yaml_ng::from_str(yaml).map_err(|e| format!("invalid YAML front matter: {e}"))?
    };
    let Some(name) = fm.name.filter(|n| !n.trim().is_empty()) else {
        return Err(format!(
            "the front matter has no `name` (it must be `name: {dir_name}`)"
        ));
    };
    if !valid_name(&name) {
        return Err(format!(
            "`name: {name}` is not a valid skill name: use 1 to {MAX_NAME_CHARS} lowercase letters, digits and hyphens, not starting or ending with a hyphen and without `--`"
        ));
    }
    if name != dir_name {
        return Err(format!(
            "`name: {name}` does not match its directory `{dir_name}`; they must be the same"
        ));
    }
    let description = fm
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    if description.is_empty() {
        return Err(
            "the front matter has no `description` (it tells the model when to use the skill)"
                .to_owned(),
        );
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "its `description` is {chars} characters; at most {MAX_DESCRIPTION_CHARS} are allowed"
        ));
    }
    Ok(description)
}

/// Lowercase ASCII letters, digits and single inner hyphens, 1 to 64.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Read a skill's `SKILL.md` (at most [`MAX_SKILL_FILE_BYTES`]; invalid
/// UTF-8 replaced) and return its body.
pub fn read_body(skill: &Skill, reader: &dyn ContextReader) -> io::Result<String> {
    let content = reader.read_file(&skill.path, MAX_SKILL_FILE_BYTES)?;
    let text = String::from_utf8_lossy(&content.bytes);
    let mut body = body_of(&text).to_owned();
    if content.size > content.bytes.len() as u64 {
        body.push_str(&format!(
            "\n\n[eonyx: {} is {} bytes; only the first {MAX_SKILL_FILE_BYTES} were read]",
            skill.path, content.size
        ));
    }
    Ok(body)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn skill_md(name: &str, description: &str, body: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    }

    struct Tree {
        _tmp: tempfile::TempDir,
        root: Utf8PathBuf,
    }

    impl Tree {
        fn new() -> Self {
            let tmp = tempfile::tempdir().unwrap();
            let root = Utf8PathBuf::from_path_buf(tmp.path().canonicalize().unwrap()).unwrap();
            Self { _tmp: tmp, root }
        }

        fn write(&self, rel: &str, text: &str) -> Utf8PathBuf {
            let p = self.root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        }

        /// A project at `proj` (with `.git`) and cwd `proj/sub`.
        fn project(&self) -> Project {
            std::fs::create_dir_all(self.root.join("proj/.git")).unwrap();
            std::fs::create_dir_all(self.root.join("proj/sub")).unwrap();
            eonyx_core::paths::find_project(&self.root.join("proj/sub"))
        }

        fn discover(&self, caps: &SkillsConfig) -> Skills {
            let project = self.project();
            let home = self.root.join("home");
            discover(&project, &self.root.join("config"), Some(&home), caps)
        }
    }

    #[test]
    fn front_matter_is_validated_with_messages_that_say_what_is_wrong() {
        let ok = |t: &str| validate(t, "deploy");
        assert_eq!(
            ok(&skill_md("deploy", "Ship it.", "body")),
            Ok("Ship it.".into())
        );
        // Folded YAML descriptions become one line; extra keys are fine.
        assert_eq!(
            ok(
                "---\nname: deploy\nlicense: MIT\ndescription: >\n  Ship\n  it.\nmetadata:\n  a: b\n---\n"
            ),
            Ok("Ship it.".into())
        );
        let err = |t: &str| ok(t).unwrap_err();
        assert!(err("# Deploy\n").contains("does not start with YAML front matter"));
        assert!(err("---\nname: deploy\n").contains("no closing `---` line"));
        assert!(err("---\nname: [deploy\n---\n").starts_with("invalid YAML front matter: "));
        assert!(err("---\ndescription: d\n---\n").contains("no `name`"));
        assert!(err("---\n---\n").contains("no `name`"));
        assert!(err(&skill_md("Deploy", "d", "")).contains("not a valid skill name"));
        assert!(err(&skill_md("de--ploy", "d", "")).contains("not a valid skill name"));
        assert_eq!(
            err(&skill_md("ship", "d", "")),
            "`name: ship` does not match its directory `deploy`; they must be the same"
        );
        assert!(err("---\nname: deploy\n---\n").contains("no `description`"));
        assert!(err("---\nname: deploy\ndescription: ''\n---\n").contains("no `description`"));
        assert_eq!(
            err(&skill_md("deploy", &"x".repeat(1025), "")),
            "its `description` is 1025 characters; at most 1024 are allowed"
        );
        assert!(ok(&skill_md("deploy", &"é".repeat(1024), "")).is_ok());
        assert!(valid_name("a1-b2") && !valid_name("-a") && !valid_name("a-") && !valid_name(""));
        assert!(!valid_name(&"a".repeat(65)) && valid_name(&"a".repeat(64)));
    }

    #[test]
    fn body_is_what_follows_the_front_matter() {
        let t = "\u{feff}---\r\nname: x\r\ndescription: y\r\n---\r\n\n# Steps\n1. go\n";
        assert_eq!(body_of(t), "# Steps\n1. go");
        assert_eq!(body_of("no front matter"), "no front matter");
    }

    #[test]
    fn nearer_directories_win_and_project_overrides_global() {
        let t = Tree::new();
        t.write(
            "proj/.agents/skills/deploy/SKILL.md",
            &skill_md("deploy", "ROOT deploy", ""),
        );
        t.write(
            "proj/sub/.agents/skills/deploy/SKILL.md",
            &skill_md("deploy", "SUB deploy", ""),
        );
        t.write(
            "proj/.claude/skills/review/SKILL.md",
            &skill_md("review", "claude review", ""),
        );
        t.write(
            "config/skills/review/SKILL.md",
            &skill_md("review", "GLOBAL review", ""),
        );
        t.write(
            "config/skills/lint/SKILL.md",
            &skill_md("lint", "global lint", ""),
        );
        t.write(
            "home/.agents/skills/lint/SKILL.md",
            &skill_md("lint", "home lint", ""),
        );
        t.write(
            "home/.agents/skills/notes/SKILL.md",
            &skill_md("notes", "home notes", ""),
        );
        t.write(
            "home/.claude/skills/plan/SKILL.md",
            &skill_md("plan", "claude plan", ""),
        );
        // Not skills: a plain file, a directory without SKILL.md, a hidden one.
        t.write("proj/.agents/skills/README.md", "hi");
        t.write("proj/.agents/skills/empty/notes.txt", "hi");
        t.write(
            "proj/.agents/skills/.hidden/SKILL.md",
            &skill_md(".hidden", "x", ""),
        );
        let s = t.discover(&SkillsConfig::default());
        assert_eq!(s.warnings, Vec::<String>::new());
        let got: Vec<(&str, &str, SkillScope)> = s
            .skills
            .iter()
            .map(|k| (k.name.as_str(), k.description.as_str(), k.scope))
            .collect();
        assert_eq!(
            got,
            [
                ("deploy", "SUB deploy", SkillScope::Project),
                ("review", "claude review", SkillScope::Project),
                ("lint", "global lint", SkillScope::Global),
                ("notes", "home notes", SkillScope::Global),
                ("plan", "claude plan", SkillScope::Global),
            ]
        );
        assert_eq!(
            s.get("deploy").unwrap().dir,
            t.root.join("proj/sub/.agents/skills/deploy")
        );
        assert_eq!(s.listed, 5);
        assert!(s.section.starts_with("# Skills\n\n"));
        assert!(s.section.ends_with("- plan: claude plan"), "{}", s.section);
        assert!(
            s.section
                .contains("\n- deploy: SUB deploy\n- review: claude review\n")
        );
    }

    #[test]
    fn malformed_and_unreadable_skills_are_skipped_with_a_warning_naming_the_file() {
        let t = Tree::new();
        t.write(
            "proj/.agents/skills/good/SKILL.md",
            &skill_md("good", "fine", ""),
        );
        let bad = t.write("proj/.agents/skills/bad/SKILL.md", "---\nname: bad\n---\n");
        // A malformed near skill does not hide a valid farther one.
        t.write("proj/sub/.agents/skills/good/SKILL.md", "no front matter");
        #[cfg(unix)]
        {
            let l = t.root.join("proj/.agents/skills/loop");
            std::os::unix::fs::symlink(&l, &l).unwrap();
        }
        let s = t.discover(&SkillsConfig::default());
        assert_eq!(s.names(), ["good"]);
        assert_eq!(s.get("good").unwrap().description, "fine");
        assert!(
            s.warnings.contains(&format!(
                "skipped skill {bad}: the front matter has no `description` (it tells the model when to use the skill)"
            )),
            "{:?}",
            s.warnings
        );
        assert!(s.warnings.iter().any(|w| w.starts_with(&format!(
            "skipped skill {}: it does not start with YAML front matter",
            t.root.join("proj/sub/.agents/skills/good/SKILL.md")
        ))));
        #[cfg(unix)]
        assert!(
            s.warnings.iter().any(|w| w.starts_with(&format!(
                "skipped skill {}: cannot read it:",
                t.root.join("proj/.agents/skills/loop/SKILL.md")
            ))),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn no_skills_means_no_section() {
        let t = Tree::new();
        let s = t.discover(&SkillsConfig::default());
        assert!(s.is_empty());
        assert_eq!(s.section, "");
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn the_listing_is_capped_visibly() {
        let t = Tree::new();
        for n in ["aa", "bb", "cc", "dd"] {
            t.write(
                &format!("proj/.agents/skills/{n}/SKILL.md"),
                &skill_md(n, &format!("does {n}"), ""),
            );
        }
        let caps = SkillsConfig {
            max_listed_bytes: 30,
            ..SkillsConfig::default()
        };
        let s = t.discover(&caps);
        assert_eq!(s.skills.len(), 4);
        assert_eq!(s.listed, 2, "`- aa: does aa\\n` is 14 bytes");
        assert!(s.section.contains("- bb: does bb\n[eonyx: 2 more skills not listed (skills.max_listed_bytes = 30): cc, dd]"), "{}", s.section);
        assert!(!s.section.contains("- cc:"));
        assert_eq!(s.warnings.len(), 1);
        assert!(s.warnings[0].contains("2 of 4 skills are not listed (cc, dd)"));
    }

    #[test]
    fn skills_in_use_keep_the_newest_bodies_under_the_cap_and_name_the_rest() {
        let t = Tree::new();
        t.write(
            "proj/.agents/skills/old/SKILL.md",
            &skill_md("old", "d", "OLD BODY"),
        );
        t.write(
            "proj/.agents/skills/new/SKILL.md",
            &skill_md("new", "d", "NEW BODY"),
        );
        t.write(
            "proj/.agents/skills/big/SKILL.md",
            &skill_md("big", "d", &"B".repeat(500)),
        );
        let s = t.discover(&SkillsConfig::default());
        let names: Vec<String> = ["old", "big", "gone", "new"].map(String::from).to_vec();
        let u = skills_in_use(&s, &names, 60, &FsReader);
        assert_eq!(u.attached, ["old", "new"]);
        assert_eq!(u.named_only, ["big", "gone"]);
        assert_eq!(
            u.section,
            format!(
                "# Skills in use\n\n{IN_USE_INTRO}\n\n## Skill: old\n\nOLD BODY\n\n## Skill: new\n\nNEW BODY\n\n\
                 [eonyx: also in use but not re-attached (skills.max_reloaded_bytes = 60): big; call the `skill` tool to reload one before you follow it again]\n\n\
                 [eonyx: also loaded earlier but no longer available: gone]"
            )
        );
        assert_eq!(u.warnings.len(), 1);
        // Under a tight cap the newest loaded skill wins.
        let u = skills_in_use(&s, &names, 30, &FsReader);
        assert_eq!(u.attached, ["new"]);
        assert_eq!(
            skills_in_use(&s, &[], 30, &FsReader),
            SkillsInUse::default()
        );
    }
}
