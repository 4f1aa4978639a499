//! Matching the permission rules (docs/tools.md#permission-rules): the
//! rules `eonyx-config` parsed, compiled once per session into a
//! [`RuleMatcher`], asked for a [`Verdict`] on each shell command, path,
//! host and MCP tool. The approval (`PolicyApprover`) is the one caller
//! that turns a verdict into a decision: deny > ask > allow > the tool's
//! setting.
//!
//! Invariants:
//! - A shell line is allowed by rules only when every command of it is
//!   ([`crate::cmdline`]); no rule but bare `shell` covers a line that is
//!   not fully understood, and no prefix rule an opaque command or one
//!   with an option that runs code or writes a file
//!   ([`cmdline::dangerous_option`]). Prefixes match whole words, as
//!   written: an option before the rule's words is not covered. A wrapper
//!   (`timeout 5 cargo test`) is covered when what it runs is. Exact rules
//!   compare the parsed words.
//! - `deny` and `ask` rules look further than `allow` rules: at the
//!   commands inside substitutions, `eval` and `sh -c`, behind wrappers
//!   (`sudo`, `env`, `timeout`…), past a program's global options (`git
//!   -C . push` is `git push`), and at every word of what could not be
//!   looked into ([`Split::loose`]).
//! - Globs are absolute once compiled (relative to the project root, `~/`
//!   the home directory) and are matched against the resolved path (`..`
//!   and symlinks resolved by the tools before they ask).

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::permissions::{PermissionRules, Rule, RuleList, ShellRule};
use globset::{GlobBuilder, GlobMatcher};

use crate::cmdline::{self, Command, Split, split};

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
    /// The rule's commands, each its words then its redirections; `None`
    /// when the rule's text is not understood (it then matches a line of
    /// the same text for deny and ask only).
    ShellExact(Option<Vec<Vec<String>>>, String),
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

/// A command as exact rules compare it: its words, then its redirections.
fn canon(c: &Command) -> Vec<String> {
    c.words.iter().chain(&c.redirects).cloned().collect()
}

/// An exact rule's commands (`None`: not understood).
fn exact_commands(text: &str) -> Option<Vec<Vec<String>>> {
    let parsed = split(text);
    (parsed.parsed && !parsed.commands.is_empty()).then(|| {
        parsed
            .commands
            .iter()
            .chain(&parsed.nested)
            .map(canon)
            .collect()
    })
}

/// A prefix rule's words, quotes removed as the shell would.
fn prefix_words(text: &str) -> Vec<String> {
    let parsed = split(text);
    match parsed.commands.as_slice() {
        [one] if parsed.parsed && one.literal.iter().all(|l| *l) && !one.words.is_empty() => {
            one.words.clone()
        }
        _ => text.split_whitespace().map(str::to_owned).collect(),
    }
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
                    } => Matcher::ShellPrefix(prefix_words(p)),
                    Rule::Shell {
                        shell: ShellRule::Exact(e),
                    } => Matcher::ShellExact(exact_commands(e), e.trim().to_owned()),
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
        self.shell_split(line, &split(line))
    }

    /// [`RuleMatcher::shell`] on a line already split (`eonyx permissions
    /// check` shows the split too).
    pub fn shell_split(&self, line: &str, parsed: &Split) -> Verdict {
        self.verdict(
            |m| names_command(m, line, parsed),
            || self.allows_line(parsed),
        )
    }

    fn allows_line(&self, parsed: &Split) -> bool {
        !self.allowing_rules(parsed).is_empty()
    }

    /// The allow rules that cover the line (one per command, or the one
    /// bare or exact rule that covers it whole); empty when they do not.
    pub fn allowing_rules(&self, parsed: &Split) -> Vec<RuleRef> {
        let allow = || self.rules.iter().filter(|r| r.list == RuleList::Allow);
        // What is not understood is covered by no allow rule, bare `shell`
        // included (SPEC 30, settled): it is asked or denied.
        if !parsed.parsed {
            return Vec::new();
        }
        if let Some(r) = allow().find(|r| matches!(r.matcher, Matcher::ShellAny)) {
            return vec![r.rule_ref()];
        }
        if parsed.commands.is_empty() {
            return Vec::new();
        }
        let whole: Vec<Vec<String>> = parsed
            .commands
            .iter()
            .chain(&parsed.nested)
            .map(canon)
            .collect();
        if let Some(r) =
            allow().find(|r| matches!(&r.matcher, Matcher::ShellExact(Some(e), _) if *e == whole))
        {
            return vec![r.rule_ref()];
        }
        let mut out: Vec<RuleRef> = Vec::new();
        for c in &parsed.commands {
            let Some(r) = self.covering(c) else {
                return Vec::new();
            };
            let r = r.rule_ref();
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    /// The allow rule that covers one simple command.
    fn covering(&self, c: &Command) -> Option<&Compiled> {
        let allow = || self.rules.iter().filter(|r| r.list == RuleList::Allow);
        let one = canon(c);
        if let Some(r) = allow().find(|r| {
            matches!(&r.matcher, Matcher::ShellExact(Some(e), _) if e.len() == 1 && e[0] == one)
        }) {
            return Some(r);
        }
        if c.opaque || c.words.is_empty() || cmdline::dangerous_option(&c.words).is_some() {
            return None;
        }
        match cmdline::wrapped(&c.words) {
            Some(None) => None,
            Some(Some(at)) => self.covering(&Command {
                words: c.words[at..].to_vec(),
                literal: c.literal[at.min(c.literal.len())..].to_vec(),
                redirects: c.redirects.clone(),
                text: c.text.clone(),
                opaque: c.opaque,
            }),
            None => allow().find(|r| match &r.matcher {
                Matcher::ShellPrefix(p) => starts_with(c, p),
                _ => false,
            }),
        }
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

/// The command's first words are the prefix's, each written without
/// anything that expands.
fn starts_with(c: &Command, prefix: &[String]) -> bool {
    !prefix.is_empty()
        && c.words.len() >= prefix.len()
        && c.words[..prefix.len()] == *prefix
        && c.literal.iter().take(prefix.len()).all(|l| *l)
}

/// Whether a deny or ask shell rule names some command of the line.
fn names_command(m: &Matcher, line: &str, parsed: &Split) -> bool {
    let all = || parsed.commands.iter().chain(&parsed.nested);
    let loose = || parsed.loose.iter().map(|t| loose_words(t));
    match m {
        Matcher::ShellAny => true,
        Matcher::ShellExact(Some(e), _) => {
            let whole: Vec<Vec<String>> = all().map(canon).collect();
            if whole == *e {
                return true;
            }
            let [one] = e.as_slice() else {
                return false;
            };
            all().any(|c| canon(c) == *one || seen_as(c).any(|v| v == *one))
                || loose().any(|w| w.windows(one.len()).any(|w| w == one.as_slice()))
        }
        Matcher::ShellExact(None, text) => line.trim() == text,
        Matcher::ShellPrefix(p) => {
            all().any(|c| seen_as(c).any(|v| names_prefix(&v, p)))
                || loose().any(|w| w.windows(p.len()).any(|w| w == p.as_slice()))
        }
        _ => false,
    }
}

/// Every way deny and ask rules read a command: from each start behind
/// assignments and wrappers, and each of those without the program's
/// global options.
fn seen_as(c: &Command) -> impl Iterator<Item = Vec<String>> + '_ {
    cmdline::views(&c.words).into_iter().flat_map(|s| {
        let v = c.words[s..].to_vec();
        let bare = cmdline::without_global_options(&v);
        std::iter::once(v).chain(bare)
    })
}

/// `starts_with` for deny and ask rules: the program may also be named by
/// a path (`/bin/rm` is `rm`).
fn names_prefix(words: &[String], prefix: &[String]) -> bool {
    let (Some(first), Some(p)) = (words.first(), prefix.first()) else {
        return false;
    };
    (first == p || cmdline::program(first) == p)
        && words.len() >= prefix.len()
        && words[1..prefix.len()] == prefix[1..]
}

/// Every word of a text that could not be looked into, split at anything
/// a shell treats specially (for deny and ask rules only).
fn loose_words(line: &str) -> Vec<String> {
    line.split(|c: char| {
        c.is_whitespace()
            || eonyx_core::text::is_hidden_char(c)
            || matches!(
                c,
                ';' | '&' | '|' | '(' | ')' | '<' | '>' | '{' | '}' | '`' | '$' | '"' | '\'' | '\\'
            )
    })
    .filter(|w| !w.is_empty())
    .map(|w| cmdline::program(w).to_owned())
    .collect()
}

/// The rule `p` in the REPL saves for a shell line: `shell(<first two
/// words>:*)` (one word if that is all) for one simple command; the exact
/// `shell(<line>)` when the second word is an option, the program is a
/// shell, an interpreter or a wrapper, or the command has an option that
/// runs code or writes a file; `None` for a compound line, an opaque
/// command or a line that is not understood.
pub fn project_shell_rule(line: &str) -> Option<String> {
    let parsed = split(line);
    let [one] = parsed.commands.as_slice() else {
        return None;
    };
    if !parsed.parsed || one.opaque || !parsed.nested.is_empty() || one.words.is_empty() {
        return None;
    }
    let program = cmdline::program(&one.words[0]);
    let exact = one.words.get(1).is_some_and(|w| w.starts_with('-'))
        || cmdline::is_interpreter(program)
        || cmdline::WRAPPERS.contains(&program)
        || cmdline::dangerous_option(&one.words).is_some();
    if exact {
        let text = line.trim();
        let balanced = text.chars().try_fold(0i64, |depth, c| {
            let depth = depth + i64::from(c == '(') - i64::from(c == ')');
            (depth >= 0).then_some(depth)
        }) == Some(0);
        return (balanced && !text.contains('\n') && !text.ends_with(":*"))
            .then(|| format!("shell({text})"));
    }
    let plain =
        |w: &&String| !w.is_empty() && !w.chars().any(|c| c.is_whitespace() || "()".contains(c));
    let words: Vec<&str> = one
        .words
        .iter()
        .zip(&one.literal)
        .take(2)
        .take_while(|(w, l)| **l && plain(w))
        .map(|(w, _)| w.as_str())
        .collect();
    (!words.is_empty()).then(|| format!("shell({}:*)", words.join(" ")))
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
