//! Tests of discovery, validation and both sections, each in a temp tree.
#![allow(clippy::unwrap_used)]

use eonyx_core::config::SkillsConfig;
use eonyx_core::paths::Project;

use super::*;
use crate::reader::FsReader;
use crate::test_tree::Tree;

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")
}

impl Tree {
    /// A valid skill `name` in `dir`.
    fn skill(&self, dir: &str, name: &str, description: &str, body: &str) -> Utf8PathBuf {
        self.write(
            &format!("{dir}/{name}/{SKILL_FILE}"),
            skill_md(name, description, body),
        )
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
    t.skill("proj/.agents/skills", "deploy", "ROOT deploy", "");
    t.skill("proj/sub/.agents/skills", "deploy", "SUB deploy", "");
    t.skill("proj/.claude/skills", "review", "claude review", "");
    t.skill("config/skills", "review", "GLOBAL review", "");
    t.skill("config/skills", "lint", "global lint", "");
    t.skill("home/.agents/skills", "lint", "home lint", "");
    t.skill("home/.agents/skills", "notes", "home notes", "");
    t.skill("home/.claude/skills", "plan", "claude plan", "");
    // Not skills: a plain file, a directory without SKILL.md, a hidden one.
    t.write("proj/.agents/skills/README.md", "hi");
    t.write("proj/.agents/skills/empty/notes.txt", "hi");
    t.write(
        "proj/.agents/skills/.hidden/SKILL.md",
        skill_md(".hidden", "x", ""),
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
    t.skill("proj/.agents/skills", "good", "fine", "");
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
        t.skill("proj/.agents/skills", n, &format!("does {n}"), "");
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
    t.skill("proj/.agents/skills", "old", "d", "OLD BODY");
    t.skill("proj/.agents/skills", "new", "d", "NEW BODY");
    t.skill("proj/.agents/skills", "big", "d", &"B".repeat(500));
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
