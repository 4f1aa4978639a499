//! `eonyx permissions check -- COMMAND` (docs/tools.md#checking-a-command):
//! what the permission rules and `tools.shell` decide about a shell
//! command, the rule and file that decided it, and the simple commands the
//! rules looked at. The decision is the one the shell tool's approval
//! makes before anyone is asked; the CLI only renders it.

use eonyx_core::config::{ShellPolicy, ToolsConfig};
use serde::Serialize;

use crate::cmdline::{self, Command};
use crate::permissions::{RuleMatcher, RuleRef, Verdict};

/// What is decided about one command line.
#[derive(Debug, Clone, Serialize)]
pub struct ShellCheck {
    /// `allow`, `ask` or `deny`.
    pub decision: &'static str,
    /// The rules that made it (none: `tools.shell` did).
    pub rules: Vec<CheckedRule>,
    /// Why, in words.
    pub because: String,
    /// The shell the line is read as, and run with.
    pub shell: &'static str,
    /// Whether every part of the line was understood.
    pub understood: bool,
    /// What was not, when something was not.
    pub unclear: Option<String>,
    /// Every simple command the rules looked at.
    pub commands: Vec<CheckedCommand>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckedRule {
    pub rule: String,
    pub list: &'static str,
    pub file: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckedCommand {
    pub words: Vec<String>,
    /// Inside a substitution, `eval` or a shell's script.
    pub nested: bool,
    /// Never covered by a prefix rule.
    pub opaque: bool,
    /// An option of it that runs code or writes a file.
    pub dangerous_option: Option<String>,
}

fn checked(r: &RuleRef) -> CheckedRule {
    CheckedRule {
        rule: r.text.clone(),
        list: r.list.as_str(),
        file: r.file.to_string(),
    }
}

fn command(c: &Command, nested: bool) -> CheckedCommand {
    CheckedCommand {
        words: c.words.clone(),
        nested,
        opaque: c.opaque,
        dangerous_option: cmdline::dangerous_option(&c.words),
    }
}

/// What `tools` (its rules and `tools.shell`) decide about `line`, as the
/// shell tool would before asking anyone (`--allow-shell` aside).
pub fn check_shell(tools: &ToolsConfig, line: &str) -> ShellCheck {
    let rules = RuleMatcher::new(&tools.permissions);
    let parsed = cmdline::split(line);
    let verdict = if rules.is_empty() {
        Verdict::Unmatched
    } else {
        rules.shell_split(line, &parsed)
    };
    let (decision, found, because) = match verdict {
        Verdict::Deny(r) => (
            "deny",
            vec![r],
            "a deny rule names a command of it".to_owned(),
        ),
        Verdict::Ask(r) => (
            "ask",
            vec![r],
            "an ask rule names a command of it (asked in the REPL, denied in batch)".to_owned(),
        ),
        Verdict::Allow => (
            "allow",
            rules.allowing_rules(&parsed),
            "allow rules cover every command of it".to_owned(),
        ),
        Verdict::Unmatched => {
            let setting = match tools.shell {
                ShellPolicy::Ask => ("ask", "ask"),
                ShellPolicy::Allow => ("allow", "allow"),
                ShellPolicy::Deny => ("deny", "deny"),
            };
            (
                setting.0,
                Vec::new(),
                format!(
                    "no rule covers it{}; tools.shell is \"{}\"",
                    if parsed.parsed {
                        ""
                    } else {
                        " (not fully understood)"
                    },
                    setting.1
                ),
            )
        }
    };
    ShellCheck {
        decision,
        rules: found.iter().map(checked).collect(),
        because,
        shell: eonyx_sandbox::shell_program().name(),
        understood: parsed.parsed,
        unclear: parsed.unclear.clone(),
        commands: parsed
            .commands
            .iter()
            .map(|c| command(c, false))
            .chain(parsed.nested.iter().map(|c| command(c, true)))
            .collect(),
    }
}

impl ShellCheck {
    /// The report as lines, for a terminal (words escaped).
    pub fn lines(&self) -> Vec<String> {
        let esc = |s: &str| eonyx_core::text::escape_controls(s, true).into_owned();
        let mut out = vec![
            format!("decision: {}", self.decision),
            format!("why: {}", self.because),
        ];
        for r in &self.rules {
            out.push(format!(
                "rule: {} (in the `{}` list of {})",
                esc(&r.rule),
                r.list,
                r.file
            ));
        }
        out.push(format!("read as: {}", self.shell));
        if let Some(why) = &self.unclear {
            out.push(format!("not understood: {}", esc(why)));
        }
        out.push("commands:".to_owned());
        for c in &self.commands {
            let words: Vec<String> = c.words.iter().map(|w| format!("`{}`", esc(w))).collect();
            let mut notes = Vec::new();
            if c.nested {
                notes.push("nested".to_owned());
            }
            if c.opaque {
                notes.push("opaque".to_owned());
            }
            if let Some(o) = &c.dangerous_option {
                notes.push(format!("runs code or writes: {}", esc(o)));
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join(", "))
            };
            out.push(format!("  {}{notes}", words.join(" ")));
        }
        out
    }
}
