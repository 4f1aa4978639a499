//! The REPL's one reader of the terminal: a rustyline editor shared by the
//! input loop and the approval questions, run on a blocking thread so the
//! async runtime stays free.
//!
//! Invariant: at most one read at a time (the editor sits behind a mutex),
//! and only the editor reads the terminal while the REPL runs; there is no
//! other stdin reader.
//!
//! Ending the prompt's read from outside ([`LineEditor::wake`], when a
//! `notify` job exits): rustyline's `readline` blocks in `read(2)` on the
//! terminal and ends on its own only for a key or, through its signal pipe,
//! a SIGINT it sees. Its handler writes the signal's byte into that pipe
//! (eonyx's SIGINT handler, installed later, calls it), but eonyx's handler
//! restarts the read, so a SIGINT alone never ends it (tried). rustyline's
//! own SIGWINCH handler does not restart it: sent to the reading thread
//! (the kernel gives a resize's SIGWINCH to the main thread), the read
//! fails with `EINTR`, rustyline drains the pipe, takes its first byte,
//! finds the SIGINT and ends the read as interrupted. So: SIGINT to the
//! process (marked as our own, [`Interrupts::raise_own`]), then SIGWINCH to
//! the reading thread. A Ctrl-C during a turn also leaves a SIGINT byte
//! there, so an interrupted read without the Ctrl-C key is never taken as
//! the user's Ctrl-C: it was a wake, and if text was typed meanwhile it
//! comes back in a new read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use eonyx_config::{EditMode, ReplConfig};
use eonyx_core::provider::BoxFuture;
use eonyx_store::Store;
use rustyline::config::{Behavior, Configurer};
use rustyline::error::ReadlineError;
use rustyline::history::MemHistory;

use super::helper::{Continuations, ReplHelper, bind_keys, strip_continuations};
use crate::commands::ui::Interrupts;
use crate::printer::Printer;

type Editor = rustyline::Editor<ReplHelper, MemHistory>;

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// Accepted text, exactly as edited (pasted newlines kept).
    Line(String),
    /// Ctrl-C on an empty line.
    Interrupted,
    /// Ctrl-D on an empty line.
    Eof,
    /// Ended by [`LineEditor::wake`] on an empty prompt.
    Woken,
}

/// A cheap handle on the shared editor.
#[derive(Clone)]
pub struct LineEditor {
    inner: Arc<Mutex<Editor>>,
    continuations: Continuations,
    /// Shared with the helper (the editor is locked while it reads).
    summary_ready: Arc<AtomicBool>,
    /// The text being edited, as the helper last saw it.
    line: Arc<Mutex<String>>,
    /// Set by the Ctrl-C key when it ends a read.
    ctrl_c: Arc<AtomicBool>,
    /// The read in progress, for [`LineEditor::wake`].
    reading: Arc<Mutex<Reading>>,
}

/// Who reads now, and whether a wake asked the read to end.
#[derive(Default)]
struct Reading {
    /// The thread blocked in `readline`, while it is there.
    #[cfg(unix)]
    thread: Option<nix::sys::pthread::Pthread>,
    /// The read is the REPL's prompt (not an approval question).
    prompt: bool,
    /// [`LineEditor::wake`] sent its signals to this read.
    woken: bool,
}

impl LineEditor {
    /// An editor on the terminal (`/dev/tty`, so nothing it draws lands on
    /// stdout), emacs keys, no history yet.
    pub fn new() -> anyhow::Result<Self> {
        let config = rustyline::Config::builder()
            .behavior(Behavior::PreferTerm)
            .auto_add_history(false)
            .history_ignore_dups(false)
            .context("cannot configure the line editor")?
            .build();
        let mut editor = Editor::with_history(config, MemHistory::new())
            .context("cannot open the terminal for line editing")?;
        let summary_ready = Arc::new(AtomicBool::new(false));
        let line = Arc::new(Mutex::new(String::new()));
        editor.set_helper(Some(ReplHelper {
            summary_ready: summary_ready.clone(),
            line: line.clone(),
            ..ReplHelper::default()
        }));
        let continuations = Continuations::default();
        let ctrl_c = Arc::new(AtomicBool::new(false));
        bind_keys(&mut editor, continuations.clone(), ctrl_c.clone());
        Ok(Self {
            inner: Arc::new(Mutex::new(editor)),
            continuations,
            summary_ready,
            line,
            ctrl_c,
            reading: Arc::default(),
        })
    }

    fn lock(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Editor>> {
        self.inner
            .lock()
            .map_err(|_| anyhow::anyhow!("the line editor failed in another thread"))
    }

    /// Apply `[repl]`, give completion its session list and the directory
    /// `@` paths are relative to (and `$HOME` for `@~/`).
    pub fn configure(
        &self,
        repl: &ReplConfig,
        store: Store,
        cwd: camino::Utf8PathBuf,
        home: Option<String>,
    ) -> anyhow::Result<()> {
        let mut ed = self.lock()?;
        ed.set_edit_mode(match repl.edit_mode {
            EditMode::Emacs => rustyline::EditMode::Emacs,
            EditMode::Vi => rustyline::EditMode::Vi,
        });
        ed.set_max_history_size(repl.history_size.max(1))
            .context("cannot size the REPL history")?;
        if let Some(h) = ed.helper_mut() {
            h.store = Some(store);
            h.cwd = Some(cwd);
            h.home = home;
        }
        Ok(())
    }

    /// Replace what Up/Down and Ctrl-R walk (oldest first).
    pub fn set_history(&self, entries: &[String]) -> anyhow::Result<()> {
        let mut ed = self.lock()?;
        ed.clear_history()
            .context("cannot reset the REPL history")?;
        for e in entries {
            ed.add_history_entry(e.as_str())
                .context("cannot add to the REPL history")?;
        }
        Ok(())
    }

    /// A summary written ahead became ready while the prompt waits: the
    /// prompt's writing mark is drawn as ready from the next redraw on (a
    /// key press; the next prompt is built with it anyway).
    pub fn summary_ready(&self) {
        self.summary_ready.store(true, Ordering::SeqCst);
    }

    /// Read one input at `prompt`, the line starting as `initial` (a line
    /// that could not be sent comes back for editing); `highlight` colours
    /// its `{ctx N%}`.
    pub fn read(
        &self,
        prompt: String,
        highlight: bool,
        initial: String,
    ) -> impl Future<Output = anyhow::Result<Input>> + '_ {
        // The prompt was built from what is known now.
        self.summary_ready.store(false, Ordering::SeqCst);
        self.read_with(prompt, Field::Prompt { highlight }, initial)
    }

    async fn read_with(
        &self,
        prompt: String,
        field: Field,
        initial: String,
    ) -> anyhow::Result<Input> {
        let (highlight, plain) = match field {
            Field::Prompt { highlight } => (highlight, false),
            Field::Question => (false, true),
        };
        let inner = self.inner.clone();
        let continuations = self.continuations.clone();
        let (line, ctrl_c, reading) =
            (self.line.clone(), self.ctrl_c.clone(), self.reading.clone());
        let result = tokio::task::spawn_blocking(move || {
            let mut ed = inner
                .lock()
                .map_err(|_| ReadlineError::Io(std::io::Error::other("line editor poisoned")))?;
            if let Some(h) = ed.helper_mut() {
                h.highlight_ctx = highlight;
                h.plain = plain;
                h.ready_drawn.store(false, Ordering::SeqCst);
            }
            if let Ok(mut c) = continuations.lock() {
                c.clear();
            }
            let mut initial = initial;
            loop {
                set_text(&line, &initial);
                ctrl_c.store(false, Ordering::SeqCst);
                if let Ok(mut r) = reading.lock() {
                    *r = Reading {
                        #[cfg(unix)]
                        thread: Some(nix::sys::pthread::pthread_self()),
                        prompt: !plain,
                        woken: false,
                    };
                }
                let read = if initial.is_empty() {
                    ed.readline(&prompt)
                } else {
                    ed.readline_with_initial(&prompt, (&initial, ""))
                };
                let woken = reading.lock().map(|mut r| {
                    let woken = r.woken;
                    *r = Reading::default();
                    woken
                });
                match read {
                    Err(ReadlineError::Interrupted) if !ctrl_c.load(Ordering::SeqCst) => {
                        // Not the user's Ctrl-C: a wake, or a SIGINT byte
                        // left in rustyline's pipe. What was typed stays.
                        let text = line.lock().map(|l| l.clone()).unwrap_or_default();
                        if woken.unwrap_or(false) && text.is_empty() {
                            return Ok(Input::Woken);
                        }
                        // The new read draws its prompt on this row.
                        let printer = Printer::new();
                        if printer.stderr_is_terminal() {
                            printer.err_raw("\r\x1b[K");
                        }
                        initial = text;
                    }
                    read => {
                        let line = read?;
                        let at = continuations.lock().map(|c| c.clone()).unwrap_or_default();
                        return Ok(Input::Line(strip_continuations(&line, &at)));
                    }
                }
            }
        })
        .await
        .context("the line editor thread failed")?;
        match result {
            Ok(input) => Ok(input),
            Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(ReadlineError::Eof) => Ok(Input::Eof),
            Err(e) => Err(e).context("cannot read from the terminal"),
        }
    }

    /// End the REPL prompt's read when it waits on an empty line (a job
    /// that asked for `"notify": true` exited): it then gives
    /// [`Input::Woken`]. Nothing happens during an approval question, with
    /// text typed (it goes with the next message) or with no read. See the
    /// module's doc for how; tried again while the read goes on, as
    /// rustyline reads only the first byte of its signal pipe and an older
    /// byte (a resize) may come before ours.
    #[cfg(unix)]
    pub async fn wake(&self, interrupts: &Interrupts) {
        use nix::sys::signal::Signal;
        for _ in 0..10 {
            if !self.waiting_empty() {
                return;
            }
            if let Ok(mut r) = self.reading.lock() {
                r.woken = true;
            }
            if !interrupts.raise_own().await {
                return;
            }
            {
                let Ok(r) = self.reading.lock() else { return };
                // Still the same read: its thread is in `readline`.
                if let (Some(t), true) = (r.thread, r.woken) {
                    let _ = nix::sys::pthread::pthread_kill(t, Signal::SIGWINCH);
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    #[cfg(not(unix))]
    pub async fn wake(&self, _interrupts: &Interrupts) {}

    /// The prompt waits for input and nothing is typed.
    fn waiting_empty(&self) -> bool {
        let reading = self.reading.lock().is_ok_and(|r| {
            #[cfg(unix)]
            let there = r.thread.is_some();
            #[cfg(not(unix))]
            let there = false;
            there && r.prompt
        });
        reading && self.line.lock().is_ok_and(|l| l.is_empty())
    }
}

fn set_text(line: &Mutex<String>, text: &str) {
    if let Ok(mut l) = line.lock() {
        l.clear();
        l.push_str(text);
    }
}

/// What the editor reads: the REPL's prompt (its `{ctx N%}` coloured when
/// `highlight`), or the answer to an approval question (no completion).
#[derive(Debug, Clone, Copy)]
enum Field {
    Prompt { highlight: bool },
    Question,
}

/// The approval hook: asks one question through the REPL's editor.
///
/// `ask` returns the answer as typed, or `None` on Ctrl-C (which also stops
/// the running turn, as Ctrl-C does anywhere else during a turn), Ctrl-D or
/// a terminal error. Callers treat `None` as "no". `ask_after` first shows
/// some lines (a diff, say) on stderr through a [`Printer`], so a long text
/// is not redrawn with the question at each key.
pub struct Asker {
    editor: LineEditor,
    interrupts: Interrupts,
    printer: Printer,
}

impl Asker {
    pub fn new(editor: LineEditor, interrupts: Interrupts) -> Self {
        Self {
            editor,
            interrupts,
            printer: Printer::new(),
        }
    }

    pub async fn ask_after(&self, shown: &str, question: &str) -> Option<String> {
        self.printer.info(shown.trim_end_matches('\n'));
        self.ask(question).await
    }

    pub async fn ask(&self, question: &str) -> Option<String> {
        match self
            .editor
            .read_with(question.to_owned(), Field::Question, String::new())
            .await
        {
            Ok(Input::Line(answer)) => Some(answer),
            Ok(Input::Interrupted) => {
                self.interrupts.cancel_current();
                None
            }
            Ok(Input::Eof | Input::Woken) | Err(_) => None,
        }
    }
}

impl crate::commands::ui::view::Ask for Asker {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(Asker::ask(self, question))
    }
}
