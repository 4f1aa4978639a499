//! `[permissions]` (docs/tools.md#permission-rules): the `allow`, `ask`
//! and `deny` lists of `config.toml`, `eonyx.json` and the project's saved
//! rule file (`<data dir>/permissions/<project>-<hash>.toml`, written by
//! eonyx when the user answers `p` in the REPL). A rule that does not parse
//! is an error naming the file and the rule, never a rule silently
//! dropped; an untrusted project's `allow` rules are kept for `eonyx
//! permissions` to list and marked as not applying.
//!
//! Rule syntax: `shell` (every command), `shell(PREFIX:*)` (a command whose
//! words start with PREFIX's), `shell(EXACT)`, `write(GLOB)`, `read(GLOB)`
//! (globs relative to the project root, `~/` for the home directory),
//! `web_fetch(HOST)` (`*.example.com` for its subdomains), `mcp(SERVER.TOOL)`
//! and `mcp(SERVER.*)`.

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use eonyx_core::permissions::{PermissionRule, Rule, RuleList, RuleOrigin, ShellRule};

use crate::{ConfigError, DirPrivacy, write_config_file};

/// `[permissions]` as written in `config.toml` or `eonyx.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsFile {
    pub allow: Option<Vec<String>>,
    pub ask: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
}

impl PermissionsFile {
    /// Each list with its rules, in `allow`, `ask`, `deny` order.
    pub fn lists(&self) -> [(RuleList, &[String]); 3] {
        [
            (RuleList::Allow, self.allow.as_deref().unwrap_or_default()),
            (RuleList::Ask, self.ask.as_deref().unwrap_or_default()),
            (RuleList::Deny, self.deny.as_deref().unwrap_or_default()),
        ]
    }
}

/// What the tools a rule may name are, for error messages.
const RULE_FORMS: &str = "shell, shell(PREFIX:*), shell(COMMAND), write(GLOB), read(GLOB), \
                          web_fetch(HOST), mcp(SERVER.TOOL) or mcp(SERVER.*)";

/// Parses one rule as written (`shell(cargo test:*)`).
pub fn parse_rule(text: &str) -> Result<Rule, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("a rule is empty; write one of {RULE_FORMS}"));
    }
    let (name, arg) = match t.find('(') {
        None => (t, None),
        Some(open) => {
            let Some(inner) = t[open + 1..].strip_suffix(')') else {
                return Err(format!(
                    "unbalanced parentheses in `{t}`: a rule ends with `)`; write one of {RULE_FORMS}"
                ));
            };
            if !balanced(inner) {
                return Err(format!("unbalanced parentheses in `{t}`"));
            }
            (t[..open].trim_end(), Some(inner))
        }
    };
    if t.contains(')') && arg.is_none() {
        return Err(format!("unbalanced parentheses in `{t}`"));
    }
    match (name, arg) {
        ("shell", None) => Ok(Rule::Shell {
            shell: ShellRule::Any,
        }),
        ("shell", Some(arg)) => parse_shell(t, arg),
        ("write" | "read" | "web_fetch" | "mcp", None) => Err(format!(
            "`{name}` needs what it covers in parentheses, e.g. {}",
            example(name)
        )),
        ("write", Some(glob)) => Ok(Rule::Write {
            glob: parse_glob(t, glob)?,
        }),
        ("read", Some(glob)) => Ok(Rule::Read {
            glob: parse_glob(t, glob)?,
        }),
        ("web_fetch", Some(host)) => parse_host(t, host),
        ("mcp", Some(arg)) => parse_mcp(t, arg),
        (other, _) => Err(format!(
            "unknown tool `{other}` in `{t}`; a rule is one of {RULE_FORMS}"
        )),
    }
}

fn example(name: &str) -> &'static str {
    match name {
        "write" => "write(src/**)",
        "read" => "read(~/notes/**)",
        "web_fetch" => "web_fetch(docs.rs)",
        _ => "mcp(server.tool)",
    }
}

fn balanced(s: &str) -> bool {
    let mut depth = 0i64;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

fn parse_shell(t: &str, arg: &str) -> Result<Rule, String> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Err(format!(
            "`{t}` names no command; write `shell` for every command"
        ));
    }
    // `shell(PREFIX *)`, Claude Code's form, means `shell(PREFIX:*)`.
    let shell = match arg.strip_suffix(":*").or_else(|| arg.strip_suffix(" *")) {
        Some(prefix) => {
            let prefix = prefix.trim();
            if prefix.is_empty() {
                return Err(format!(
                    "`{t}` has an empty prefix; write `shell` for every command or `shell(PREFIX:*)`"
                ));
            }
            ShellRule::Prefix(prefix.split_whitespace().collect::<Vec<_>>().join(" "))
        }
        None if arg == "*" => {
            return Err(format!(
                "`{t}`: write `shell` for every command, `shell(PREFIX:*)` for a prefix"
            ));
        }
        None => ShellRule::Exact(arg.to_owned()),
    };
    Ok(Rule::Shell { shell })
}

fn parse_glob(t: &str, glob: &str) -> Result<String, String> {
    let glob = glob.trim();
    if glob.is_empty() {
        return Err(format!("`{t}` names no path"));
    }
    if glob.starts_with('~') && !(glob == "~" || glob.starts_with("~/")) {
        return Err(format!(
            "`{t}`: only `~/` (your home directory) is understood, not `~user`"
        ));
    }
    globset::Glob::new(glob).map_err(|e| format!("`{t}` is not a valid glob: {e}"))?;
    Ok(glob.to_owned())
}

fn parse_host(t: &str, host: &str) -> Result<Rule, String> {
    let host = host.trim().to_ascii_lowercase();
    let bare = host.strip_prefix("*.").unwrap_or(&host);
    let ok = !bare.is_empty()
        && bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if !ok {
        return Err(format!(
            "`{t}`: a host such as `docs.rs` or `*.example.com` (no scheme, no path)"
        ));
    }
    Ok(Rule::WebFetch { host })
}

fn parse_mcp(t: &str, arg: &str) -> Result<Rule, String> {
    let arg = arg.trim();
    let Some((server, tool)) = arg.split_once('.') else {
        return Err(format!(
            "`{t}`: write mcp(SERVER.TOOL), or mcp(SERVER.*) for every tool of a server"
        ));
    };
    if server.is_empty() || tool.is_empty() {
        return Err(format!(
            "`{t}`: write mcp(SERVER.TOOL), or mcp(SERVER.*) for every tool of a server"
        ));
    }
    Ok(Rule::Mcp {
        server: server.to_owned(),
        tool: (tool != "*").then(|| tool.to_owned()),
    })
}

/// Checks every rule of a file's `[permissions]`; the error names the
/// file and the rule.
pub fn validate(file: &PermissionsFile, path: &Utf8Path) -> Result<(), ConfigError> {
    for (list, rules) in file.lists() {
        for text in rules {
            parse_rule(text).map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                key: format!("permissions.{list}"),
                message: format!("rule {text:?}: {message}"),
            })?;
        }
    }
    Ok(())
}

/// The rules of one file; `allow_active: false` marks its `allow` rules
/// as listed but not applying (an untrusted project). Rules that do not
/// parse were refused by [`validate`] when the file was read.
pub fn rules_of(
    file: &PermissionsFile,
    path: &Utf8Path,
    origin: RuleOrigin,
    allow_active: bool,
) -> Vec<PermissionRule> {
    let mut out = Vec::new();
    for (list, rules) in file.lists() {
        for text in rules {
            if let Ok(rule) = parse_rule(text) {
                out.push(PermissionRule {
                    list,
                    rule,
                    text: text.trim().to_owned(),
                    file: path.to_path_buf(),
                    origin,
                    active: list != RuleList::Allow || allow_active,
                });
            }
        }
    }
    out
}

/// The saved rule file of one project (written by eonyx).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedFile {
    /// The project root the rules are for (for the reader; the file name
    /// already says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl SavedFile {
    fn as_file(&self) -> PermissionsFile {
        PermissionsFile {
            allow: Some(self.allow.clone()),
            ask: Some(self.ask.clone()),
            deny: Some(self.deny.clone()),
        }
    }

    fn list_mut(&mut self, list: RuleList) -> &mut Vec<String> {
        match list {
            RuleList::Allow => &mut self.allow,
            RuleList::Ask => &mut self.ask,
            RuleList::Deny => &mut self.deny,
        }
    }
}

/// Where the rules saved for the project at `root` live:
/// `<data dir>/permissions/<dir name>-<hash of the root>.toml`.
pub fn saved_path(data_dir: &Utf8Path, root: &Utf8Path) -> Utf8PathBuf {
    // FNV-1a of the root path: stable across runs and platforms.
    let hash = root
        .as_str()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    let name: String = root
        .file_name()
        .unwrap_or("root")
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    data_dir
        .join("permissions")
        .join(format!("{name}-{hash:016x}.toml"))
}

/// Reads a saved rule file; a file that does not exist has no rules.
pub fn read_saved(path: &Utf8Path) -> Result<SavedFile, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(SavedFile::default()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let saved: SavedFile = toml::from_str(&text).map_err(|e| {
        ConfigError::parse_at(path, &text, e.span().map_or(0, |s| s.start), e.message())
    })?;
    validate(&saved.as_file(), path)?;
    Ok(saved)
}

/// The rules of a saved rule file (all apply: the user wrote them).
pub fn saved_rules(path: &Utf8Path) -> Result<Vec<PermissionRule>, ConfigError> {
    let saved = read_saved(path)?;
    Ok(rules_of(&saved.as_file(), path, RuleOrigin::Saved, true))
}

/// Adds `rule` to `list` of the saved rule file at `path` for the project
/// at `root`; `false` when it was already there. The rule must parse.
pub fn save_rule(
    path: &Utf8Path,
    root: &Utf8Path,
    list: RuleList,
    rule: &str,
) -> Result<bool, ConfigError> {
    parse_rule(rule).map_err(|message| ConfigError::Invalid {
        path: path.to_path_buf(),
        key: format!("permissions.{list}"),
        message: format!("rule {rule:?}: {message}"),
    })?;
    let mut saved = read_saved(path)?;
    saved.project = Some(root.to_string());
    let rules = saved.list_mut(list);
    if rules.iter().any(|r| r.trim() == rule.trim()) {
        return Ok(false);
    }
    rules.push(rule.trim().to_owned());
    write_saved(path, &saved)?;
    Ok(true)
}

/// Removes `rule` from `list` of the saved rule file at `path`; `false`
/// when it was not there.
pub fn forget_rule(path: &Utf8Path, list: RuleList, rule: &str) -> Result<bool, ConfigError> {
    let mut saved = read_saved(path)?;
    let rules = saved.list_mut(list);
    let before = rules.len();
    rules.retain(|r| r.trim() != rule.trim());
    if rules.len() == before {
        return Ok(false);
    }
    write_saved(path, &saved)?;
    Ok(true)
}

fn write_saved(path: &Utf8Path, saved: &SavedFile) -> Result<(), ConfigError> {
    let err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let body = toml::to_string(saved)
        .map_err(|e| err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    let text = format!(
        "# Permission rules eonyx saved for this project (`p` in the REPL).\n\
         # `eonyx permissions` lists them; `eonyx permissions forget N` removes one.\n{body}"
    );
    write_config_file(path, &text, DirPrivacy::Private)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(text: &str) -> ShellRule {
        match parse_rule(text) {
            Ok(Rule::Shell { shell }) => shell,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn rules_parse_into_their_forms() {
        assert_eq!(shell("shell"), ShellRule::Any);
        assert_eq!(
            shell("shell(cargo   test:*)"),
            ShellRule::Prefix("cargo test".into())
        );
        assert_eq!(
            shell("shell(git status)"),
            ShellRule::Exact("git status".into())
        );
        assert_eq!(
            shell("shell(npm test *)"),
            ShellRule::Prefix("npm test".into())
        );
        assert_eq!(
            parse_rule("write(src/**)"),
            Ok(Rule::Write {
                glob: "src/**".into()
            })
        );
        assert_eq!(
            parse_rule("mcp(files.*)"),
            Ok(Rule::Mcp {
                server: "files".into(),
                tool: None
            })
        );
        assert_eq!(
            parse_rule("mcp(files.read)"),
            Ok(Rule::Mcp {
                server: "files".into(),
                tool: Some("read".into())
            })
        );
        assert_eq!(
            parse_rule("web_fetch(Docs.RS)"),
            Ok(Rule::WebFetch {
                host: "docs.rs".into()
            })
        );
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        let err = |t: &str| parse_rule(t).unwrap_err();
        assert!(err("bash(ls)").contains("unknown tool `bash`"));
        assert!(err("shell(ls").contains("unbalanced"));
        assert!(err("shell(ls))").contains("unbalanced"));
        assert!(err("shell)").contains("unbalanced"));
        assert!(err("shell(:*)").contains("empty prefix"));
        assert!(err("shell()").contains("names no command"));
        assert!(err("write").contains("needs what it covers"));
        assert!(err("mcp(server)").contains("mcp(SERVER.*)"));
        assert!(err("web_fetch(https://x.org/a)").contains("no scheme"));
        assert!(err("write(src/[)").contains("not a valid glob"));
    }

    #[test]
    fn a_bad_rule_names_the_file_and_the_rule() {
        let file = PermissionsFile {
            deny: Some(vec!["shell(rm:*)".into(), "rm(x)".into()]),
            ..Default::default()
        };
        let e = validate(&file, Utf8Path::new("/c/config.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/c/config.toml: invalid value for `permissions.deny`: rule \"rm(x)\""),
            "{e}"
        );
    }

    #[test]
    fn saved_rules_are_added_once_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let data = Utf8Path::from_path(dir.path()).unwrap();
        let path = saved_path(data, Utf8Path::new("/home/u/my proj"));
        assert!(path.as_str().contains("/permissions/my_proj-"), "{path}");
        let root = Utf8Path::new("/home/u/my proj");
        assert!(save_rule(&path, root, RuleList::Allow, "shell(git status:*)").unwrap());
        assert!(!save_rule(&path, root, RuleList::Allow, "shell(git status:*)").unwrap());
        let rules = saved_rules(&path).unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].origin, RuleOrigin::Saved);
        assert!(forget_rule(&path, RuleList::Allow, "shell(git status:*)").unwrap());
        assert!(saved_rules(&path).unwrap().is_empty());
        assert!(save_rule(&path, root, RuleList::Allow, "nope(").is_err());
    }
}
