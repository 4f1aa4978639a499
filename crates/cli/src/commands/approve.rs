//! Asking the user in the REPL: y / n / always (for this session). The
//! question is read through the REPL's line editor ([`Asker`]), the only
//! reader of the terminal.

use std::collections::HashSet;
use std::sync::Mutex;

use eonyx_agent::tools::{ApprovalKind, Approver, Decision};
use eonyx_core::provider::BoxFuture;

use super::repl::editor::Asker;

/// Asks on the terminal; remembers "always" per kind for the session.
pub struct TerminalApprover {
    asker: Asker,
    always: Mutex<HashSet<&'static str>>,
}

impl TerminalApprover {
    pub fn new(asker: Asker) -> Self {
        Self {
            asker,
            always: Mutex::default(),
        }
    }
}

impl Approver for TerminalApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let (key, question) = (kind.class(), kind.describe());
            if self.always.lock().map(|a| a.contains(key)).unwrap_or(false) {
                return Decision::Allow;
            }
            // A question of several lines (a multi-line command) is shown
            // once above a one-line prompt, not redrawn at each key.
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
                    Some(text) => self.asker.ask_after(text, &prompt).await,
                    None => self.asker.ask(&prompt).await,
                };
                match answer {
                    Some(answer) => match answer.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => return Decision::Allow,
                        "a" | "always" => {
                            if let Ok(mut a) = self.always.lock() {
                                a.insert(key);
                            }
                            return Decision::Allow;
                        }
                        "n" | "no" | "" => return Decision::Deny,
                        _ => continue,
                    },
                    None => return Decision::Deny,
                }
            }
        })
    }
}
