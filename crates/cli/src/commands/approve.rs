//! Asking the user in the REPL: y / n / always (for this session).
#![allow(clippy::print_stderr)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use eonyx_agent::tools::{ApprovalKind, Approver, Decision};
use eonyx_core::provider::BoxFuture;
use tokio::sync::mpsc;

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
#[derive(Default)]
pub struct TerminalApprover {
    always: Mutex<HashSet<&'static str>>,
}

impl Approver for TerminalApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let (key, question) = (kind.class(), kind.describe());
            if self.always.lock().map(|a| a.contains(key)).unwrap_or(false) {
                return Decision::Allow;
            }
            let lines = shared_lines();
            loop {
                eprint!("allow: {question}? [y]es / [n]o / [a]lways: ");
                match lines.next_line().await {
                    Some(Ok(answer)) => match answer.trim().to_ascii_lowercase().as_str() {
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
                    _ => return Decision::Deny,
                }
            }
        })
    }
}
