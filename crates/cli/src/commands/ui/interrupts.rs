//! Ctrl-C while something runs.
//!
//! At the REPL prompt the line editor reads Ctrl-C as a key (the terminal is
//! in raw mode then); everywhere else it arrives as SIGINT and lands here.
//! The REPL also sends SIGINT to itself to end the prompt's read (a
//! `notify` job exited, see `repl::editor`): [`Interrupts::raise_own`]
//! marks that one so it neither exits nor cancels anything.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eonyx_core::provider::CancellationToken;

use crate::exit::Status;

/// Ctrl-C: the first press cancels the running step; a second one (or one
/// while nothing runs) exits with 130. Clones share the state, so the
/// approval question can cancel the turn it was asked in.
#[derive(Clone)]
pub struct Interrupts {
    current: Arc<std::sync::Mutex<CancellationToken>>,
    busy: Arc<AtomicBool>,
    /// The next SIGINT is eonyx's own ([`Interrupts::raise_own`]).
    own: Arc<AtomicBool>,
    /// Counts the own SIGINTs the listener has taken.
    taken: tokio::sync::watch::Sender<u64>,
}

impl Default for Interrupts {
    fn default() -> Self {
        Self::new()
    }
}

impl Interrupts {
    /// The shared state, not yet listening (see [`Interrupts::listen`]).
    pub fn new() -> Self {
        Self {
            current: Arc::new(std::sync::Mutex::new(CancellationToken::new())),
            busy: Arc::new(AtomicBool::new(false)),
            own: Arc::new(AtomicBool::new(false)),
            taken: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Listen for SIGINT. Must run inside the runtime. On unix the handler
    /// is installed before this returns, so a line editor that swaps the
    /// handler while it reads puts this one back afterwards.
    pub fn listen(&self) {
        let (c, b) = (self.current.clone(), self.busy.clone());
        let (own, taken) = (self.own.clone(), self.taken.clone());
        #[cfg(unix)]
        let mut sigint =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
                Ok(s) => s,
                Err(_) => return,
            };
        tokio::spawn(async move {
            loop {
                #[cfg(unix)]
                if sigint.recv().await.is_none() {
                    return;
                }
                #[cfg(not(unix))]
                if tokio::signal::ctrl_c().await.is_err() {
                    return;
                }
                if own.swap(false, Ordering::SeqCst) {
                    taken.send_modify(|n| *n += 1);
                    continue;
                }
                let token = c.lock().map(|t| t.clone()).ok();
                match token {
                    Some(t) if b.load(Ordering::SeqCst) && !t.is_cancelled() => t.cancel(),
                    _ => {
                        // Second Ctrl-C, or Ctrl-C while nothing runs.
                        crate::printer::flush_stdout();
                        super::quiet::restore();
                        std::process::exit(i32::from(Status::Interrupted.code()));
                    }
                }
            }
        });
    }

    /// A fresh token for the next operation; marks the frontend busy.
    pub fn begin(&self) -> CancellationToken {
        let t = CancellationToken::new();
        if let Ok(mut cur) = self.current.lock() {
            *cur = t.clone();
        }
        self.busy.store(true, Ordering::SeqCst);
        t
    }

    pub fn end(&self) {
        self.busy.store(false, Ordering::SeqCst);
    }

    /// Send SIGINT to this process, marked as eonyx's own, and wait until
    /// the listener has taken it (so the mark never outlives it and a later
    /// Ctrl-C acts as usual). The signal's handler has run, on this thread,
    /// when this returns. False when it could not be sent or was not taken
    /// within a second.
    #[cfg(unix)]
    pub async fn raise_own(&self) -> bool {
        let mut rx = self.taken.subscribe();
        rx.borrow_and_update();
        self.own.store(true, Ordering::SeqCst);
        if nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).is_err() {
            self.own.store(false, Ordering::SeqCst);
            return false;
        }
        let taken = tokio::time::timeout(std::time::Duration::from_secs(1), rx.changed()).await;
        matches!(taken, Ok(Ok(())))
    }

    /// Cancel what runs now, as a Ctrl-C would (no-op when idle).
    pub fn cancel_current(&self) {
        if self.busy.load(Ordering::SeqCst)
            && let Ok(t) = self.current.lock()
        {
            t.cancel();
        }
    }
}
