//! Asking the user in the REPL: y / n / always (for this session). The
//! question is read through the REPL's line editor ([`Asker`]), the only
//! reader of the terminal.

use std::collections::HashSet;
use std::sync::Mutex;

use eonyx_agent::tools::{ApprovalKind, Approver, Decision};
use eonyx_core::provider::BoxFuture;

use super::editor::Asker;
use crate::commands::ui::view::remember_shown;
use crate::printer::Printer;

/// Asks on the terminal; remembers "always" per kind for the session.
pub struct TerminalApprover {
    asker: Asker,
    always: Mutex<HashSet<String>>,
    /// For the diff (stderr).
    printer: Printer,
}

impl TerminalApprover {
    pub fn new(asker: Asker) -> Self {
        Self {
            asker,
            always: Mutex::default(),
            printer: Printer::new(),
        }
    }
}

/// The user's answer to one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    Always,
}

/// Shows what is asked (with a write's diff first) and reads y / n /
/// always through the line editor. The one place the REPL asks a question.
/// Ctrl-C or Ctrl-D at the question is "no" (Ctrl-C also stops the turn).
pub async fn ask(kind: &ApprovalKind, printer: &Printer, asker: &Asker) -> Answer {
    if let ApprovalKind::Write { diff, .. } = kind.innermost() {
        printer.diff(diff);
        remember_shown(diff);
    }
    let question = kind.describe();
    // A question of several lines (a multi-line command) is shown once
    // above a one-line prompt, not redrawn at each key.
    let (shown, prompt) = if question.contains('\n') {
        (
            Some(format!("allow: {question}")),
            "allow the above? [y]es / [n]o / [a]lways: ".to_owned(),
        )
    } else {
        (
            None,
            format!("allow: {question}? [y]es / [n]o / [a]lways: "),
        )
    };
    loop {
        let answer = match &shown {
            Some(text) => asker.ask_after(text, &prompt).await,
            None => asker.ask(&prompt).await,
        };
        match answer {
            Some(answer) => match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Answer::Yes,
                "a" | "always" => return Answer::Always,
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
            match ask(kind, &self.printer, &self.asker).await {
                Answer::Yes => Decision::Allow,
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
}
