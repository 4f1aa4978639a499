//! Asking the user in the REPL: y / n / always (for this session).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use eonyx_agent::tools::{ApprovalKind, Approver, Decision};
use eonyx_core::provider::BoxFuture;
use tokio::sync::mpsc;

use crate::printer::Printer;

type Lines = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<std::io::Result<String>>>>;

/// Lines of the terminal, shared by the REPL loop and the approver.
#[derive(Clone)]
pub struct SharedLines(Lines);

impl SharedLines {
    pub async fn next_line(&self) -> Option<std::io::Result<String>> {
        self.0.lock().await.recv().await
    }
}

pub fn shared_lines() -> SharedLines {
    static LINES: OnceLock<Lines> = OnceLock::new();
    let lines = LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::stdin().lock().lines() {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Arc::new(tokio::sync::Mutex::new(rx))
    });
    SharedLines(lines.clone())
}

/// Asks on the terminal; remembers "always" per kind for the session.
pub struct TerminalApprover {
    always: Mutex<HashSet<&'static str>>,
    /// For the question and the diff (stderr).
    printer: Printer,
}

impl TerminalApprover {
    pub fn new() -> Self {
        Self {
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
/// always. The one place the REPL asks a question; a line editor can
/// replace how the answer line is read here.
pub async fn ask(kind: &ApprovalKind, printer: &Printer) -> Answer {
    if let ApprovalKind::Write { diff, .. } = kind {
        printer.diff(diff);
        remember_shown(diff);
    }
    let question = kind.describe();
    let lines = shared_lines();
    loop {
        printer.err_raw(&format!("allow: {question}? [y]es / [n]o / [a]lways: "));
        match lines.next_line().await {
            Some(Ok(answer)) => match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Answer::Yes,
                "a" | "always" => return Answer::Always,
                "n" | "no" | "" => return Answer::No,
                _ => continue,
            },
            _ => return Answer::No,
        }
    }
}

static SHOWN: Mutex<Option<String>> = Mutex::new(None);

fn remember_shown(diff: &str) {
    if let Ok(mut s) = SHOWN.lock() {
        *s = Some(diff.to_owned());
    }
}

/// Whether `diff` was just shown by [`ask`] (so the view need not repeat
/// it); forgets it either way.
pub fn take_shown(diff: &str) -> bool {
    SHOWN
        .lock()
        .ok()
        .and_then(|mut s| s.take())
        .is_some_and(|d| d == diff)
}

impl Approver for TerminalApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let key = kind.class();
            if self.always.lock().map(|a| a.contains(key)).unwrap_or(false) {
                return Decision::Allow;
            }
            match ask(kind, &self.printer).await {
                Answer::Yes => Decision::Allow,
                Answer::Always => {
                    if let Ok(mut a) = self.always.lock() {
                        a.insert(key);
                    }
                    Decision::Allow
                }
                Answer::No => Decision::Deny,
            }
        })
    }
}
