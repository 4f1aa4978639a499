//! Asking the user in the REPL: y / n / always (for this session) / p
//! (always in this project: a permission rule saved in the user's data
//! dir, docs/tools.md#permission-rules). What an `ask` rule asks is asked
//! every time, y / n only. The question is read through the
//! REPL's line editor ([`Asker`]), the only reader of the terminal.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use camino::Utf8PathBuf;
use eonyx_agent::tools::permissions::{RuleMatcher, Verdict};
use eonyx_agent::tools::{ApprovalKind, Approver, Decision, rule_verdict};
use eonyx_core::permissions::{PermissionRule, PermissionRules, RuleList, RuleOrigin};
use eonyx_core::provider::BoxFuture;

use super::editor::Asker;
use crate::commands::ui::view::remember_shown;
use crate::printer::Printer;

/// Asks on the terminal; remembers "always" per kind for the session and
/// saves "always in this project" as a permission rule.
pub struct TerminalApprover {
    asker: Asker,
    always: Mutex<HashSet<String>>,
    /// For the diff (stderr).
    printer: Printer,
    /// Where `p` saves rules; `None` (no data dir): `p` is not offered.
    project: Option<ProjectRules>,
}

/// The project's saved rule file and the rules `p` saved in this
/// session (the session's policy read the file when it started).
struct ProjectRules {
    file: Utf8PathBuf,
    root: Utf8PathBuf,
    saved: Mutex<(PermissionRules, Arc<RuleMatcher>)>,
}

impl TerminalApprover {
    pub fn new(asker: Asker) -> Self {
        Self {
            asker,
            always: Mutex::default(),
            printer: Printer::new(),
            project: project_rules(),
        }
    }

    /// `p`: save `rule` for this project, say so, and let this session
    /// follow it from now on.
    fn save(&self, project: &ProjectRules, rule: &str) {
        match eonyx_config::permissions::save_rule(
            &project.file,
            &project.root,
            RuleList::Allow,
            rule,
        ) {
            Ok(_) => self.printer.info(&format!(
                "saved the permission rule allow `{rule}` for this project in {} (`eonyx permissions` lists it; `eonyx permissions forget N` removes it)",
                project.file
            )),
            Err(e) => {
                self.printer
                    .warn(&format!("{e}; allowed this once, no rule saved"));
                return;
            }
        }
        let Ok(parsed) = eonyx_config::permissions::parse_rule(rule) else {
            return;
        };
        if let Ok(mut saved) = project.saved.lock() {
            saved.0.rules.push(PermissionRule {
                list: RuleList::Allow,
                rule: parsed,
                text: rule.to_owned(),
                file: project.file.clone(),
                origin: RuleOrigin::Saved,
                active: true,
            });
            saved.1 = Arc::new(RuleMatcher::new(&saved.0));
        }
    }

    /// Whether a rule `p` saved in this session allows `kind`.
    fn saved_allows(&self, kind: &ApprovalKind) -> bool {
        let Some(project) = &self.project else {
            return false;
        };
        let matcher = match project.saved.lock() {
            Ok(saved) => saved.1.clone(),
            Err(_) => return false,
        };
        rule_verdict(&matcher, kind) == Verdict::Allow
    }
}

/// The saved rule file of the project the REPL runs in, found as the
/// config loader finds it.
fn project_rules() -> Option<ProjectRules> {
    let env = eonyx_config::paths::Env::from_process();
    let data = eonyx_config::paths::data_dir(&env).ok()?;
    let cwd = eonyx_config::paths::current_dir().ok()?;
    let root = eonyx_config::paths::find_project(&cwd).root;
    let rules = PermissionRules {
        rules: Vec::new(),
        project_root: root.clone(),
        home: env.get("HOME").map(Utf8PathBuf::from),
    };
    let matcher = Arc::new(RuleMatcher::new(&rules));
    Some(ProjectRules {
        file: eonyx_config::permissions::saved_path(&data, &root),
        root,
        saved: Mutex::new((rules, matcher)),
    })
}

/// The user's answer to one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    Always,
    /// Always in this project: save this rule.
    Project,
}

/// What a question offers beside yes and no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered<'r> {
    /// Yes or no only: a permission rule in the `ask` list asked, and it
    /// is asked every time.
    Once,
    /// Also "always" (for the rest of the session).
    Always,
    /// Also "always", and `p`: save this rule for the project.
    Project(&'r str),
}

/// A question longer than this is shown above its prompt.
const SHOWN_ABOVE: usize = 80;

/// Shows what is asked (with a write's diff first) and reads y / n (/
/// always / p, as `offered` says) through the line editor. The one place
/// the REPL asks a question. Ctrl-C or Ctrl-D at the question is "no"
/// (Ctrl-C also stops the turn).
pub async fn ask(
    kind: &ApprovalKind,
    printer: &Printer,
    asker: &Asker,
    offered: Offered<'_>,
) -> Answer {
    if let ApprovalKind::Write { diff, .. } = kind.innermost() {
        printer.diff(diff);
        remember_shown(diff);
    }
    let question = kind.describe();
    let choices = match offered {
        Offered::Project(rule) => {
            format!("[y]es / [n]o / [a]lways / [p]roject: always here ({rule})")
        }
        Offered::Always => "[y]es / [n]o / [a]lways".to_owned(),
        Offered::Once => "[y]es / [n]o (a permission rule asks every time)".to_owned(),
    };
    // A question of several lines (a multi-line command), or too long
    // for one screen line, is shown whole once above a one-line prompt,
    // wrapped by the terminal, never cut nor redrawn at each key.
    let (shown, prompt) = if question.contains('\n') || question.chars().count() > SHOWN_ABOVE {
        (
            Some(format!("allow: {question}")),
            format!("allow the above? {choices}: "),
        )
    } else {
        (None, format!("allow: {question}? {choices}: "))
    };
    loop {
        let answer = match &shown {
            Some(text) => asker.ask_after(text, &prompt).await,
            None => asker.ask(&prompt).await,
        };
        match answer {
            Some(answer) => match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Answer::Yes,
                "a" | "always" if offered != Offered::Once => return Answer::Always,
                "p" | "project" if matches!(offered, Offered::Project(_)) => {
                    return Answer::Project;
                }
                "n" | "no" | "" => return Answer::No,
                _ => continue,
            },
            None => return Answer::No,
        }
    }
}

impl Approver for TerminalApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let key = kind.class();
            if self
                .always
                .lock()
                .map(|a| a.contains(key.as_ref()))
                .unwrap_or(false)
            {
                return Decision::Allow;
            }
            if self.saved_allows(kind) {
                return Decision::Allow;
            }
            let rule = self
                .project
                .as_ref()
                .and_then(|p| Some((p, kind.project_rule()?)));
            let offered = match &rule {
                Some((_, r)) => Offered::Project(r),
                None => Offered::Always,
            };
            match ask(kind, &self.printer, &self.asker, offered).await {
                Answer::Yes => Decision::Allow,
                Answer::Project => {
                    if let Some((project, rule)) = &rule {
                        self.save(project, rule);
                    }
                    Decision::Allow
                }
                Answer::Always => {
                    if let Ok(mut a) = self.always.lock() {
                        a.insert(key.into_owned());
                    }
                    Decision::Allow
                }
                Answer::No => Decision::Deny,
            }
        })
    }

    /// An `ask` rule's question: asked every time, whatever "always" or a
    /// rule saved with `p` answered before (deny > ask > allow), and it
    /// offers only yes and no.
    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            match ask(kind, &self.printer, &self.asker, Offered::Once).await {
                Answer::Yes => Decision::Allow,
                Answer::No | Answer::Always | Answer::Project => Decision::Deny,
            }
        })
    }

    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }

    /// Reads reach the user only when a rule asks them: asked as a
    /// rule's question.
    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.decide_asked(kind)
    }

    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        None
    }
}
