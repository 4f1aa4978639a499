//! `skill` (docs/skills.md, section "Skills"): a skill's instructions and the files beside them.
//!
//! `{"name"}` returns the body of the skill's `SKILL.md` and the list of
//! files in its directory; `{"name", "path"}` returns one of those files.
//! Reading needs no approval, so it is confined to the skill's directory:
//! `..`, absolute paths and symlinks that lead outside are refused. Running
//! a skill's scripts goes through `shell`, with its usual approval.

use std::io::Read as _;
use std::path::Component;

use std::sync::Arc;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::tool::{MAX_SKILL_FILE_BYTES, SKILL_FILE};
use eonyx_core::{ToolDef, ToolName};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CancellationToken, ToolError, ToolOutput, blocking, looks_binary, parse_args};

/// One skill as the `skill` tool sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    /// The skill's directory (its files are read from here).
    pub dir: Utf8PathBuf,
    /// Its `SKILL.md`.
    pub path: Utf8PathBuf,
}

/// The session's skills (found when it started). The agent implements this
/// over what `eonyx-prompt` discovered, which also knows how to strip a
/// `SKILL.md`'s front matter.
pub trait SkillSource: Send + Sync + std::fmt::Debug {
    /// Every skill's name, in listing order.
    fn names(&self) -> Vec<String>;
    /// The skill called `name`.
    fn get(&self, name: &str) -> Option<Skill>;
    /// The skill's instructions: its `SKILL.md` without the front matter.
    fn read_body(&self, skill: &Skill) -> std::io::Result<String>;
}

/// A session without skills.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSkills;

impl SkillSource for NoSkills {
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
    fn get(&self, _name: &str) -> Option<Skill> {
        None
    }
    fn read_body(&self, skill: &Skill) -> std::io::Result<String> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no skill `{}` in this session", skill.name),
        ))
    }
}

/// At most this many files are listed for a skill.
const MAX_LISTED_FILES: usize = 200;
/// How deep the file list descends into a skill's directory.
const MAX_DEPTH: usize = 6;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
    path: Option<String>,
}

/// The tool definition; offered only when the session has skills.
pub fn definition() -> ToolDef {
    ToolDef {
        name: ToolName::Skill.as_str().into(),
        description: "Load a skill listed under # Skills: its instructions and the list of its \
                      files. With path, read one of those files."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "The skill's name." },
                "path": { "type": "string", "description": "A file inside the skill, e.g. references/guide.md." }
            },
            "required": ["name"],
            "additionalProperties": false
        }),
    }
}

/// The skill a `skill` call loaded whole (no `path`), if its arguments name
/// one; used to find the skills in use in a compacted span.
pub fn loaded_by(arguments: &Value) -> Option<&str> {
    let path = arguments.get("path").and_then(Value::as_str).unwrap_or("");
    if !path.trim().is_empty() {
        return None;
    }
    arguments.get("name").and_then(Value::as_str)
}

pub(super) async fn run(
    args: &Value,
    skills: &Arc<dyn SkillSource>,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::Skill, args)?;
    let Some(skill) = skills.get(args.name.trim()) else {
        let names = skills.names();
        return Err(ToolError::Usage(if names.is_empty() {
            format!("no skill named `{}`: there are no skills", args.name)
        } else {
            format!(
                "no skill named `{}`; the skills are: {}",
                args.name,
                names.join(", ")
            )
        }));
    };
    let path = args.path.filter(|p| !p.trim().is_empty());
    let skills = Arc::clone(skills);
    blocking(cancel, move || match path {
        None => instructions(skills.as_ref(), &skill),
        Some(p) => file(&skill, p.trim()),
    })
    .await
}

/// The body of `SKILL.md`, then the skill's directory and files.
fn instructions(skills: &dyn SkillSource, skill: &Skill) -> Result<ToolOutput, ToolError> {
    let body = skills
        .read_body(skill)
        .map_err(|e| ToolError::io("cannot read skill file", skill.path.as_str(), e))?;
    let files = list_files(&skill.dir);
    let mut out = body;
    out.push_str(&format!(
        "\n\n[skill `{}` is in {}]\n",
        skill.name, skill.dir
    ));
    if files.is_empty() {
        out.push_str("No other files.");
    } else {
        out.push_str(
            "Files (read one with skill and path; run scripts with shell, by full path):\n",
        );
        for f in &files {
            out.push_str("- ");
            out.push_str(f);
            out.push('\n');
        }
    }
    Ok(ToolOutput::ok(out.trim_end()))
}

/// Files under `dir` relative to it, sorted, without `SKILL.md` and hidden
/// entries. Symlinks are listed, not followed (no loops); at most
/// [`MAX_LISTED_FILES`], with a note past that.
fn list_files(dir: &Utf8Path) -> Vec<String> {
    fn walk(base: &Utf8Path, dir: &Utf8Path, depth: usize, out: &mut Vec<String>) {
        let Ok(rd) = dir.read_dir_utf8() else {
            return;
        };
        let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
        entries.sort_by(|a, b| a.file_name().cmp(b.file_name()));
        for e in entries {
            if e.file_name().starts_with('.') || out.len() > MAX_LISTED_FILES {
                continue;
            }
            let path = e.path();
            let rel = path.strip_prefix(base).unwrap_or(path).to_string();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                if depth < MAX_DEPTH {
                    walk(base, path, depth + 1, out);
                } else {
                    out.push(format!("{rel}/"));
                }
            } else if depth > 0 || rel != SKILL_FILE {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, 0, &mut out);
    if out.len() > MAX_LISTED_FILES {
        out.truncate(MAX_LISTED_FILES);
        out.push(format!(
            "… (only the first {MAX_LISTED_FILES} files are listed)"
        ));
    }
    out
}

/// One file inside the skill's directory.
fn file(skill: &Skill, raw: &str) -> Result<ToolOutput, ToolError> {
    let refuse = || {
        ToolError::Denied(format!(
            "refused: `{raw}` is outside the directory of skill `{}` ({}); the skill tool reads only files inside it",
            skill.name, skill.dir
        ))
    };
    // Lexically first: an absolute path or one that climbs out is refused
    // whether or not its target exists.
    let rel = Utf8Path::new(raw);
    let mut depth = 0usize;
    for c in rel.as_std_path().components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(refuse());
            }
        }
    }
    // Then with symlinks resolved: the real file must lie inside the real
    // skill directory.
    let root = canonical(&skill.dir)
        .map_err(|e| ToolError::io("cannot open skill directory", skill.dir.as_str(), e))?;
    let target = match canonical(&skill.dir.join(rel)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let files = list_files(&skill.dir);
            return Err(ToolError::Usage(format!(
                "skill `{}` has no file `{raw}`; its files: {}",
                skill.name,
                if files.is_empty() {
                    "none besides SKILL.md".to_owned()
                } else {
                    files.join(", ")
                }
            )));
        }
        Err(e) => return Err(ToolError::io("cannot read", raw, e)),
    };
    if !target.starts_with(&root) {
        return Err(refuse());
    }
    if target.is_dir() {
        let files = list_files(&target);
        return Ok(ToolOutput::ok(if files.is_empty() {
            format!("{raw}/ is empty")
        } else {
            format!("{raw}/ holds:\n- {}", files.join("\n- "))
        }));
    }
    let f = std::fs::File::open(&target).map_err(|e| ToolError::io("cannot read", raw, e))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    f.take(MAX_SKILL_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("cannot read", raw, e))?;
    if looks_binary(&bytes[..bytes.len().min(8 * 1024)]) {
        return Err(ToolError::Usage(format!(
            "{raw} is a binary file ({size} bytes); use it with shell at {target}"
        )));
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if size > bytes.len() as u64 {
        text.push_str(&format!(
            "\n[eonyx: {raw} is {size} bytes; only the first {MAX_SKILL_FILE_BYTES} are shown]"
        ));
    }
    Ok(ToolOutput::ok(text))
}

fn canonical(p: &Utf8Path) -> std::io::Result<Utf8PathBuf> {
    let c = std::fs::canonicalize(p)?;
    Utf8PathBuf::from_path_buf(c).map_err(|p| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("path {} is not UTF-8", p.display()),
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The skills of a project's `skills/` directory, each `SKILL.md`'s
    /// body being what follows its front matter.
    #[derive(Debug)]
    struct Dir(Utf8PathBuf);

    impl SkillSource for Dir {
        fn names(&self) -> Vec<String> {
            let mut v: Vec<String> = self
                .0
                .read_dir_utf8()
                .unwrap()
                .map(|e| e.unwrap().file_name().to_owned())
                .collect();
            v.sort();
            v
        }
        fn get(&self, name: &str) -> Option<Skill> {
            let dir = self.0.join(name);
            dir.join(SKILL_FILE).is_file().then(|| Skill {
                name: name.to_owned(),
                path: dir.join(SKILL_FILE),
                dir,
            })
        }
        fn read_body(&self, skill: &Skill) -> std::io::Result<String> {
            let text = std::fs::read_to_string(&skill.path)?;
            Ok(text
                .splitn(3, "---\n")
                .nth(2)
                .unwrap_or(&text)
                .trim()
                .to_owned())
        }
    }

    struct Fx {
        _tmp: tempfile::TempDir,
        root: Utf8PathBuf,
        skills: Arc<dyn SkillSource>,
    }

    fn fx() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(tmp.path().canonicalize().unwrap()).unwrap();
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            "skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: Ship it.\n---\n\n# Deploy\nRun scripts/go.sh.\n",
        );
        w("skills/deploy/scripts/go.sh", "echo go\n");
        w("skills/deploy/references/checklist.md", "- tests pass\n");
        w("secret.txt", "TOP SECRET\n");
        w("skills/deploy/blob.bin", "a\0b");
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("secret.txt"), root.join("skills/deploy/leak.md"))
            .unwrap();
        let skills: Arc<dyn SkillSource> = Arc::new(Dir(root.join("skills")));
        Fx {
            _tmp: tmp,
            root,
            skills,
        }
    }

    async fn call(f: &Fx, args: Value) -> ToolOutput {
        match run(&args, &f.skills, &CancellationToken::new()).await {
            Ok(out) => out,
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }

    #[tokio::test]
    async fn name_returns_the_body_and_the_files() {
        let f = fx();
        let out = call(&f, json!({"name": "deploy"})).await;
        assert!(!out.is_error, "{}", out.text);
        assert!(
            out.text
                .starts_with("# Deploy\nRun scripts/go.sh.\n\n[skill `deploy` is in ")
        );
        assert!(
            !out.text.contains("description: Ship it."),
            "no front matter"
        );
        assert!(out.text.contains(f.root.join("skills/deploy").as_str()));
        assert!(
            out.text.contains("- references/checklist.md\n"),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("- scripts/go.sh"), "{}", out.text);
        assert!(!out.text.contains("- SKILL.md"));
    }

    #[tokio::test]
    async fn path_returns_a_file_inside_the_skill() {
        let f = fx();
        let out = call(
            &f,
            json!({"name": "deploy", "path": "references/checklist.md"}),
        )
        .await;
        assert_eq!(out, ToolOutput::ok("- tests pass\n"));
        let out = call(
            &f,
            json!({"name": "deploy", "path": "./scripts/../SKILL.md"}),
        )
        .await;
        assert!(out.text.starts_with("---\nname: deploy"), "{}", out.text);
        let out = call(&f, json!({"name": "deploy", "path": "scripts"})).await;
        assert_eq!(out.text, "scripts/ holds:\n- go.sh");
        let out = call(&f, json!({"name": "deploy", "path": "blob.bin"})).await;
        assert!(out.is_error && out.text.contains("binary"), "{}", out.text);
        let out = call(&f, json!({"name": "deploy", "path": "nope.md"})).await;
        assert!(out.is_error);
        assert!(
            out.text
                .starts_with("skill `deploy` has no file `nope.md`; its files: ")
        );
    }

    #[tokio::test]
    async fn paths_escaping_the_skill_are_refused() {
        let f = fx();
        let mut escapes = vec![
            "../../secret.txt".to_owned(),
            "scripts/../../../secret.txt".to_owned(),
            "../missing".to_owned(),
            f.root.join("secret.txt").to_string(),
        ];
        if cfg!(unix) {
            escapes.push("leak.md".into());
        }
        for p in escapes {
            let out = call(&f, json!({"name": "deploy", "path": p})).await;
            assert!(out.is_error, "{p}: {}", out.text);
            assert!(
                out.text.starts_with(&format!("refused: `{p}` is outside")),
                "{}",
                out.text
            );
            assert!(!out.text.contains("TOP SECRET"));
        }
    }

    #[tokio::test]
    async fn unknown_skills_and_bad_arguments_are_errors_the_model_can_act_on() {
        let f = fx();
        let out = call(&f, json!({"name": "nope"})).await;
        assert_eq!(
            out,
            ToolOutput::error("no skill named `nope`; the skills are: deploy")
        );
        let out = call(&f, json!({"path": "x"})).await;
        assert!(out.is_error && out.text.contains("missing field `name`"));
    }

    #[test]
    fn only_whole_loads_count_as_loaded() {
        assert_eq!(loaded_by(&json!({"name": "a"})), Some("a"));
        assert_eq!(loaded_by(&json!({"name": "a", "path": ""})), Some("a"));
        assert_eq!(loaded_by(&json!({"name": "a", "path": "x.md"})), None);
        assert_eq!(loaded_by(&json!("junk")), None);
    }
}
