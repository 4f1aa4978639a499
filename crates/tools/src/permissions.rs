//! Matching the permission rules (docs/tools.md#permission-rules): the
//! rules `eonyx-config` parsed, compiled once per session into a
//! [`RuleMatcher`], asked for a [`Verdict`] on each shell command, path,
//! host and MCP tool. The approval (`PolicyApprover`) is the one caller
//! that turns a verdict into a decision: deny > ask > allow > the tool's
//! setting.
//!
//! Invariants:
//! - A shell line is allowed by rules only when every command of it is
//!   ([`crate::shell_split`]); a prefix rule never covers an opaque
//!   command or a line that does not parse. Prefixes match whole words.
//! - `deny` and `ask` rules look further than `allow` rules: at the
//!   commands inside substitutions, `eval` and `sh -c`, behind wrappers
//!   (`sudo`, `env`, `timeout`…), and at every word sequence of a line
//!   that does not parse.
//! - Globs are absolute once compiled (relative to the project root, `~/`
//!   the home directory) and are matched against the resolved path (`..`
//!   and symlinks resolved by the tools before they ask).

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::permissions::{PermissionRules, Rule, RuleList, ShellRule};
use globset::{GlobBuilder, GlobMatcher};

use crate::shell_split::{Command, Split, is_assignment, split};

/// A rule as a verdict names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    pub list: RuleList,
    /// As written (`shell(rm:*)`).
    pub text: String,
    pub file: Utf8PathBuf,
}

impl std::fmt::Display for RuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` (in the `{}` list of {})",
            self.text, self.list, self.file
        )
    }
}

/// What the rules say about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A `deny` rule names it.
    Deny(RuleRef),
    /// An `ask` rule names it (and no `deny` rule).
    Ask(RuleRef),
    /// `allow` rules cover it (and no `deny` or `ask` rule names it).
    Allow,
    /// No rule says anything: the tool's setting decides.
    Unmatched,
}

enum Matcher {
    ShellAny,
    ShellPrefix(Vec<String>),
    ShellExact(String),
    Path {
        write: bool,
        globs: Vec<GlobMatcher>,
    },
    Host(String),
    Mcp {
        server: String,
        tool: Option<String>,
    },
}

struct Compiled {
    list: RuleList,
    text: String,
    file: Utf8PathBuf,
    matcher: Matcher,
}

impl Compiled {
    fn rule_ref(&self) -> RuleRef {
        RuleRef {
            list: self.list,
            text: self.text.clone(),
            file: self.file.clone(),
        }
    }
}

/// The session's rules, compiled.
#[derive(Default)]
pub struct RuleMatcher {
    rules: Vec<Compiled>,
}

impl std::fmt::Debug for RuleMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleMatcher")
            .field("rules", &self.rules.len())
            .finish()
    }
}

/// Whitespace runs as one space, ends trimmed: how exact rules compare.
fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl RuleMatcher {
    /// Compiles the rules that apply (an untrusted project's `allow`
    /// rules do not). A glob that does not compile (config refused it
    /// already) matches nothing.
    pub fn new(rules: &PermissionRules) -> Self {
        let roots = roots(&rules.project_root);
        let home = rules.home.as_deref();
        let compiled = rules
            .active()
            .map(|r| Compiled {
                list: r.list,
                text: r.text.clone(),
                file: r.file.clone(),
                matcher: match &r.rule {
                    Rule::Shell {
                        shell: ShellRule::Any,
                    } => Matcher::ShellAny,
                    Rule::Shell {
                        shell: ShellRule::Prefix(p),
                    } => Matcher::ShellPrefix(p.split_whitespace().map(str::to_owned).collect()),
                    Rule::Shell {
                        shell: ShellRule::Exact(e),
                    } => Matcher::ShellExact(normalize(e)),
                    Rule::Write { glob } => Matcher::Path {
                        write: true,
                        globs: compile_glob(glob, &roots, home),
                    },
                    Rule::Read { glob } => Matcher::Path {
                        write: false,
                        globs: compile_glob(glob, &roots, home),
                    },
                    Rule::WebFetch { host } => Matcher::Host(host.to_ascii_lowercase()),
                    Rule::Mcp { server, tool } => Matcher::Mcp {
                        server: server.clone(),
                        tool: tool.clone(),
                    },
                },
            })
            .collect();
        Self { rules: compiled }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// The first rule of `list` that `hit` accepts.
    fn first(&self, list: RuleList, mut hit: impl FnMut(&Matcher) -> bool) -> Option<RuleRef> {
        self.rules
            .iter()
            .find(|r| r.list == list && hit(&r.matcher))
            .map(Compiled::rule_ref)
    }

    /// deny > ask > allow, with `names` deciding whether a deny or ask
    /// rule names the request and `allows` whether the allow rules cover it.
    fn verdict(
        &self,
        mut names: impl FnMut(&Matcher) -> bool,
        allows: impl FnOnce() -> bool,
    ) -> Verdict {
        if let Some(r) = self.first(RuleList::Deny, &mut names) {
            return Verdict::Deny(r);
        }
        if let Some(r) = self.first(RuleList::Ask, &mut names) {
            return Verdict::Ask(r);
        }
        if allows() {
            Verdict::Allow
        } else {
            Verdict::Unmatched
        }
    }

    /// The verdict on running the shell command line `line`.
    pub fn shell(&self, line: &str) -> Verdict {
        if self.is_empty() {
            return Verdict::Unmatched;
        }
        let parsed = split(line);
        let whole = normalize(line);
        // Each command's text as exact rules compare it, once.
        let texts: Vec<String> = parsed
            .commands
            .iter()
            .chain(&parsed.nested)
            .map(|c| normalize(&c.text))
            .collect();
        self.verdict(
            |m| names_command(m, line, &whole, &texts, &parsed),
            || self.allows_line(&whole, &texts, &parsed),
        )
    }

    fn allows_line(&self, whole: &str, texts: &[String], parsed: &Split) -> bool {
        let allow = || self.rules.iter().filter(|r| r.list == RuleList::Allow);
        if allow().any(|r| match &r.matcher {
            Matcher::ShellAny => true,
            Matcher::ShellExact(e) => e == whole,
            _ => false,
        }) {
            return true;
        }
        parsed.parsed
            && !parsed.commands.is_empty()
            && parsed.commands.iter().zip(texts).all(|(c, text)| {
                allow().any(|r| match &r.matcher {
                    Matcher::ShellExact(e) => e == text,
                    Matcher::ShellPrefix(p) => !c.opaque && starts_with(&c.words, p),
                    _ => false,
                })
            })
    }

    /// The verdict on `write_file` / `edit_file` changing `path`
    /// (absolute, resolved).
    pub fn write(&self, path: &Utf8Path) -> Verdict {
        self.path(path, true)
    }

    /// The verdict on reading `path` (absolute, resolved).
    pub fn read(&self, path: &Utf8Path) -> Verdict {
        self.path(path, false)
    }

    fn path(&self, path: &Utf8Path, writing: bool) -> Verdict {
        let hit = |m: &Matcher| match m {
            Matcher::Path { write, globs } => {
                *write == writing && globs.iter().any(|g| g.is_match(path.as_std_path()))
            }
            _ => false,
        };
        self.verdict(hit, || self.first(RuleList::Allow, hit).is_some())
    }

    /// The verdict on fetching from `host` (`web_fetch`; a port after
    /// `:` may be given).
    pub fn web_fetch(&self, host: &str) -> Verdict {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let bare = match host.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h.to_owned(),
            _ => host.clone(),
        };
        let hit = |m: &Matcher| match m {
            Matcher::Host(rule) => match rule.strip_prefix("*.") {
                Some(domain) => bare
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
                None => *rule == host || *rule == bare,
            },
            _ => false,
        };
        self.verdict(hit, || self.first(RuleList::Allow, hit).is_some())
    }

    /// The verdict on calling `tool` (its own name, not `mcp__…`) of the
    /// MCP server `server`.
    pub fn mcp(&self, server: &str, tool: &str) -> Verdict {
        let hit = |m: &Matcher| match m {
            Matcher::Mcp { server: s, tool: t } => {
                s == server && t.as_deref().is_none_or(|t| t == tool)
            }
            _ => false,
        };
        self.verdict(hit, || self.first(RuleList::Allow, hit).is_some())
    }
}

/// The project root as given and canonical (a symlinked root).
fn roots(root: &Utf8Path) -> Vec<Utf8PathBuf> {
    let mut out = vec![root.to_path_buf()];
    if let Ok(c) = std::fs::canonicalize(root)
        && let Ok(c) = Utf8PathBuf::from_path_buf(c)
        && c != root
    {
        out.push(c);
    }
    out
}

fn compile_glob(glob: &str, roots: &[Utf8PathBuf], home: Option<&Utf8Path>) -> Vec<GlobMatcher> {
    let glob = glob.trim_end_matches('/');
    let absolute: Vec<String> = if glob == "~" || glob.starts_with("~/") {
        home.map(|h| join(h, glob.trim_start_matches('~').trim_start_matches('/')))
            .into_iter()
            .collect()
    } else if glob.starts_with('/') {
        vec![glob.to_owned()]
    } else {
        roots.iter().map(|r| join(r, glob)).collect()
    };
    absolute
        .iter()
        .filter_map(|g| {
            GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .ok()
                .map(|g| g.compile_matcher())
        })
        .collect()
}

fn join(dir: &Utf8Path, rest: &str) -> String {
    let dir = globset::escape(dir.as_str().trim_end_matches('/'));
    let rest = rest.strip_prefix("./").unwrap_or(rest);
    if rest.is_empty() {
        dir
    } else {
        format!("{dir}/{rest}")
    }
}

fn starts_with(words: &[String], prefix: &[String]) -> bool {
    !prefix.is_empty() && words.len() >= prefix.len() && words[..prefix.len()] == *prefix
}

/// Whether a deny or ask shell rule names some command of the line.
fn names_command(m: &Matcher, line: &str, whole: &str, texts: &[String], parsed: &Split) -> bool {
    let all = || parsed.commands.iter().chain(&parsed.nested);
    match m {
        Matcher::ShellAny => true,
        Matcher::ShellExact(e) => e == whole || texts.iter().any(|t| t == e),
        Matcher::ShellPrefix(p) => {
            all().any(|c| views(c).any(|v| names_prefix(v, p)))
                || (!parsed.parsed && loose_words(line).windows(p.len()).any(|w| w == p))
        }
        _ => false,
    }
}

/// `starts_with` for deny and ask rules: the program may also be named by
/// a path (`/bin/rm` is `rm`).
fn names_prefix(words: &[String], prefix: &[String]) -> bool {
    let (Some(first), Some(p)) = (words.first(), prefix.first()) else {
        return false;
    };
    let program = first.rsplit('/').next().unwrap_or(first);
    (first == p || program == p)
        && words.len() >= prefix.len()
        && words[1..prefix.len()] == prefix[1..]
}

/// Programs that run the command after them.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "command", "builtin", "exec", "nohup", "nice", "ionice", "timeout",
    "time", "xargs", "stdbuf", "setsid", "watch", "strace", "unbuffer",
];

/// A command's words, then the same behind each assignment, and every
/// later start behind a wrapper (`FOO=1 sudo -u x rm …` is also seen as
/// `sudo -u x rm …`, `-u x rm …`, `x rm …` and `rm …`).
fn views(c: &Command) -> impl Iterator<Item = &[String]> {
    let w = &c.words;
    let mut starts = vec![0];
    let mut i = 0;
    while i < w.len() {
        let word = w[i].as_str();
        let program = word.rsplit('/').next().unwrap_or(word);
        if is_assignment(word) {
            i += 1;
        } else if WRAPPERS.contains(&program) {
            // What a wrapper runs may start at any later word (`sudo -u
            // root rm`): every one is a view.
            starts.extend(i + 1..w.len());
            break;
        } else {
            break;
        }
        starts.push(i);
    }
    starts
        .into_iter()
        .filter(move |s| *s < w.len())
        .map(move |s| &w[s..])
}

/// Every word of a line that did not parse, split at anything a shell
/// treats specially (for deny and ask rules only).
fn loose_words(line: &str) -> Vec<String> {
    line.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ';' | '&' | '|' | '(' | ')' | '<' | '>' | '{' | '}' | '`' | '$' | '"' | '\'' | '\\'
            )
    })
    .filter(|w| !w.is_empty())
    .map(str::to_owned)
    .collect()
}

/// The rule `p` in the REPL saves for a shell line: `shell(<first two
/// words>:*)` (one word if that is all) for one simple command; `None` for
/// a compound line, an opaque command or a line that does not parse.
pub fn project_shell_rule(line: &str) -> Option<String> {
    let parsed = split(line);
    match parsed.commands.as_slice() {
        [one] if parsed.parsed && !one.opaque && parsed.nested.is_empty() => {
            let plain = |w: &&String| {
                !w.is_empty() && !w.chars().any(|c| c.is_whitespace() || "()".contains(c))
            };
            let words: Vec<&str> = one
                .words
                .iter()
                .take(2)
                .take_while(plain)
                .map(String::as_str)
                .collect();
            (!words.is_empty()).then(|| format!("shell({}:*)", words.join(" ")))
        }
        _ => None,
    }
}

/// The rule `p` saves for a write to `shown` (the path as the user sees
/// it, relative to the project root): `write(<path>)`, with glob
/// characters escaped.
pub fn project_write_rule(shown: &str) -> Option<String> {
    if shown.is_empty() || shown.contains(['(', ')']) {
        return None;
    }
    Some(format!("write({})", globset::escape(shown)))
}

#[cfg(test)]
#[path = "permissions_tests.rs"]
mod tests;
