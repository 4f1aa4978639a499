//! The line-mode REPL on a terminal: reads inputs through the line editor
//! ([`editor`]), keeps the shared input history ([`history`]), runs turns,
//! slash commands and `!command`s through [`super::ui`]. A line whose
//! `@path` cannot be attached is not sent and comes back in the editor.
//!
//! Invariant: what is sent to the model is the accepted text, trimmed (its
//! `@path` files after it); editing keys never reach it (the editor
//! consumes them).

pub mod editor;
pub mod helper;
pub mod history;
pub mod quiet;

use std::sync::Arc;

use eonyx_agent::{Agent, AgentError, SessionChoice};

use self::editor::{Asker, Input, LineEditor};
use self::history::{HistoryFile, collapse};
use super::approve::TerminalApprover;
use super::ui::{self, Interrupts, Mode, Slash, TurnResult};
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
    ui::runtime()?.block_on(async move {
        let ui::Session {
            mut agent,
            mut view,
            interrupts,
        } = ui::start_with(printer, opts, choice, mode, true, interrupts).await?;
        view.asker = Some(slash_asker);
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
        // A line that could not be sent (a missing `@` file), to edit.
        let mut unsent = String::new();
        loop {
            let (prompt, highlight) = ctx_prompt(&agent, view.printer.color());
            let initial = std::mem::take(&mut unsent);
            let line = match editor.read(prompt, highlight, initial).await? {
                Input::Line(line) => line,
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
            history.add(input, &editor, view.printer);
            let _quiet = quiet::QuietTyping::start();
            if input.starts_with('/') {
                match ui::slash(&mut agent, &mut view, &interrupts, input).await {
                    Slash::Continue => {}
                    Slash::Exit => break,
                    Slash::Failed(e) => view.printer.error(&e),
                }
                continue;
            }
            if let Some(command) = input.strip_prefix('!') {
                if let Err(e) = ui::user_command(&mut agent, &mut view, &interrupts, command).await
                {
                    view.printer.error(&ui::agent_error(e));
                }
                if let Some(e) = view.last_error.take() {
                    return Err(e.into());
                }
                continue;
            }
            match ui::send_line(&mut agent, &mut view, &interrupts, input).await {
                TurnResult::Ok => {}
                TurnResult::Failed(e @ AgentError::Attach(_)) => {
                    view.printer.error(&ui::agent_error(e));
                    unsent = input.to_owned();
                }
                TurnResult::Failed(e) => {
                    if e.is_interrupted() {
                        view.printer.info("interrupted");
                    } else {
                        view.printer.error(&ui::agent_error(e));
                    }
                }
            }
            if let Some(e) = view.last_error.take() {
                return Err(e.into());
            }
        }
        Ok(Status::Success)
    })
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
/// on, when colour is allowed).
fn ctx_prompt(agent: &Agent, color: bool) -> (String, bool) {
    let st = agent.context_status();
    (
        format!("{{ctx {:.0}%}} > ", st.percent),
        color && st.over_threshold,
    )
}
