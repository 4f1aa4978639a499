//! The line-mode REPL on a terminal: reads inputs through the line editor
//! ([`editor`]), keeps the shared input history ([`history`]), runs turns,
//! slash commands and `!command`s through [`super::ui`]. A line whose
//! `@path` cannot be attached is not sent and comes back in the editor.
//!
//! Invariant: what is sent to the model is the accepted text, trimmed (its
//! `@path` files after it); editing keys never reach it (the editor
//! consumes them).

pub mod approve;
pub mod editor;
pub mod helper;
pub mod history;

use std::sync::Arc;

use eonyx_agent::{Agent, AgentEvent, SessionChoice};

use self::approve::TerminalApprover;
use self::editor::{Asker, Input, LineEditor};
use self::history::{HistoryFile, collapse};
use super::ui::dispatch::{Flow, Line, Parts, Style, dispatch};
use super::ui::{self, Drafts, Interrupts, Mode};
use crate::cli::GlobalArgs;
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    choice: SessionChoice,
) -> anyhow::Result<Status> {
    let editor = LineEditor::new()?;
    let interrupts = Interrupts::new();
    let asker = Asker::new(editor.clone(), interrupts.clone());
    let slash_asker = Asker::new(editor.clone(), interrupts.clone());
    let opts = ui::options(global, Some(Arc::new(TerminalApprover::new(asker))))?;
    let env = opts.env.clone();
    let env_cwd = opts.cwd.clone();
    let mode = ui::mode(global, Mode::Stream);
    super::runtime()?.block_on(async move {
        let ui::Session {
            mut agent,
            mut view,
            interrupts,
        } = ui::start_with(printer, opts, choice, mode, true, interrupts).await?;
        view.asker = Some(Box::new(slash_asker));
        let repl = agent.config().repl.clone();
        editor.configure(
            &repl,
            agent.store().clone(),
            env_cwd.clone(),
            env.get("HOME").map(str::to_owned),
        )?;
        let mut history = History::new(HistoryFile::from_settings(&env, &repl)?);
        history.load(&editor, view.printer);
        view.printer.info("type /help for commands, /exit to leave");
        // Past sessions are mined while the prompt waits
        // (docs/memory.md#mining); the first prompt says how many wait.
        let mut mining = super::mining::on_start_here(view.printer, global, agent.config(), true);
        // A line that could not be sent (a missing `@` file), to edit.
        let mut unsent = String::new();
        // A summary written ahead while the prompt waits
        // (docs/compaction.md#ahead-of-time-summaries).
        let mut drafts = Drafts::default();
        let mut held = Vec::new();
        loop {
            drafts.start_if_due(&mut agent, &mut view);
            let (prompt, highlight) = ctx_prompt(&agent, view.printer.color(), drafts.running());
            // A `notify` job that exited as the last turn ended: its turn
            // comes before the prompt.
            let pending = poll_jobs(&mut agent, &view);
            let initial = std::mem::take(&mut unsent);
            let read = editor.read(prompt, highlight, initial);
            // The editor owns the terminal until the read ends: events wait.
            // A background job that exits while the prompt waits: one line
            // above it; its notice goes with the next message (docs/tools.md#jobs).
            let mut jobs = agent.jobs().changes();
            let input = if pending {
                Ok(Input::Woken)
            } else {
                let mut hold = |ev: AgentEvent| {
                    if matches!(ev, AgentEvent::SummaryDraft(_)) {
                        editor.summary_ready();
                    }
                    held.push(ev);
                };
                tokio::pin!(read);
                loop {
                    tokio::select! {
                        out = drafts.wait(&mut read, &mut agent, &mut hold) => break out,
                        Some(()) = job_changed(&mut jobs) => {
                            // A `notify` job: its notice starts a turn if
                            // nothing is typed (then the read ends as woken).
                            if poll_jobs(&mut agent, &view) {
                                editor.wake(&interrupts).await;
                            }
                        }
                    }
                }
            };
            for ev in held.drain(..) {
                view.event(ev);
            }
            super::mining::show_pending(view.printer, &mut mining);
            // A notice is the turn's input when a `notify` job woke the
            // prompt: not a command, not history, no `@` files.
            let (line, notice) = match input? {
                Input::Line(line) => (line, false),
                Input::Woken => {
                    // A `notify` job exited while the prompt waited with
                    // nothing typed: its notice is the turn's input, shown
                    // where a typed one would be (docs/tools.md#jobs).
                    let Some(notice) = agent.jobs().notify_turn() else {
                        view.printer.info("");
                        continue;
                    };
                    view.printer.info(&notice);
                    (notice, true)
                }
                Input::Interrupted => {
                    view.printer.info("");
                    return Ok(Status::Interrupted);
                }
                Input::Eof => {
                    view.printer.info("");
                    break;
                }
            };
            let input = line.trim();
            if input.is_empty() {
                continue;
            }
            if !notice {
                history.add(input, &editor, view.printer);
            }
            let _quiet = ui::quiet::QuietTyping::start();
            let parts = Parts {
                agent: &mut agent,
                view: &mut view,
                interrupts: &interrupts,
                drafts: &mut drafts,
            };
            let line = Line {
                text: input,
                notice,
            };
            match dispatch(parts, Style::REPL, line, &mut || false).await? {
                Flow::Next => {}
                Flow::Exit => break,
                Flow::Stop(status) => return Ok(status),
                Flow::Unsent => unsent = input.to_owned(),
            }
        }
        ui::session_end_hooks(&mut agent, &mut view, &interrupts, "prompt_input_exit").await;
        Ok(Status::Success)
    })
}

/// The jobs' exits since the last look, one line each on stderr (not
/// through the view: the editor may own the terminal; rustyline's external
/// printer changes how the editor reads, and its hints stop showing). True
/// when a job that asked for `"notify": true` exited and its turn is due.
fn poll_jobs(agent: &mut Agent, view: &ui::View<'_>) -> bool {
    let mut lines = Vec::new();
    let notify = agent.jobs().poll();
    // Only what the poll sent is waiting (everything before was shown).
    agent.events().drain(|ev| {
        if let AgentEvent::JobExited {
            id,
            command,
            status,
            secs,
            ..
        } = ev
        {
            lines.push(format!("job {id} {status} after {secs} s: {command}"));
        }
    });
    for line in lines {
        view.printer.info(&line);
    }
    notify.unwrap_or(false)
}

/// When the session's jobs change (new output, an exit); never when it
/// has none.
async fn job_changed(rx: &mut Option<tokio::sync::watch::Receiver<u64>>) -> Option<()> {
    match rx {
        Some(rx) => rx.changed().await.ok(),
        None => std::future::pending().await,
    }
}

/// The inputs Up/Down walk: the saved file (when history is on) plus this
/// run's inputs, each once. A failure to save is shown once, then the REPL
/// goes on with history in memory.
struct History {
    file: HistoryFile,
    entries: Vec<String>,
    warned: bool,
}

impl History {
    fn new(file: HistoryFile) -> Self {
        Self {
            file,
            entries: Vec::new(),
            warned: false,
        }
    }

    fn load(&mut self, editor: &LineEditor, printer: &Printer) {
        match self.file.load() {
            Ok(entries) => self.entries = entries,
            Err(e) => self.warn(printer, &e),
        }
        if let Err(e) = editor.set_history(&self.entries) {
            self.warn(printer, &e);
        }
    }

    fn add(&mut self, input: &str, editor: &LineEditor, printer: &Printer) {
        let saved = match self.file.record(input) {
            Ok(saved) if self.file.path().is_some() => Some(saved),
            Ok(_) => None,
            Err(e) => {
                self.warn(printer, &e);
                None
            }
        };
        self.entries = saved.unwrap_or_else(|| {
            let mut all = std::mem::take(&mut self.entries);
            all.push(input.to_owned());
            collapse(all, self.file.max())
        });
        if let Err(e) = editor.set_history(&self.entries) {
            self.warn(printer, &e);
        }
    }

    fn warn(&mut self, printer: &Printer, e: &anyhow::Error) {
        if !self.warned {
            self.warned = true;
            printer.warn(&format!("{e:#}; history is kept for this run only"));
        }
    }
}

/// `{ctx N%} > ` and whether to highlight it (from the compaction threshold
/// on, when colour is allowed). A summary written ahead adds a mark:
/// `{ctx N% ✓}` when it is ready, `{ctx N% …}` while it is being written
/// (the editor turns it into `✓` at the next redraw once it is ready; see
/// [`helper::ready_prompt`]).
fn ctx_prompt(agent: &Agent, color: bool, drafting: bool) -> (String, bool) {
    let st = agent.context_status();
    let mark = if st.summary_ready {
        format!(" {}", helper::READY_MARK)
    } else if drafting {
        format!(" {}", helper::WRITING_MARK)
    } else {
        String::new()
    };
    (
        format!("{{ctx {:.0}%{mark}}} > ", st.percent),
        color && st.over_threshold,
    )
}
