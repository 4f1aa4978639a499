//! `eonyx` with no subcommand: the line-mode REPL on a terminal, a batch run
//! (one turn per non-empty line; `/command`, `!command` and `@path` as in
//! the REPL) when stdin is piped.

use std::io::IsTerminal;

use eonyx_agent::SessionChoice;

use super::mining;
use super::ui::dispatch::{Flow, Line, Parts, Style, dispatch};
use super::ui::{self, Drafts};
use crate::cli::{GlobalArgs, SessionArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    session: &SessionArgs,
    new: bool,
) -> anyhow::Result<Status> {
    if std::io::stdin().is_terminal() {
        super::repl::run(printer, global, ui::session_choice(session, new)?)
    } else {
        // Piped runs start a new session unless -c / -s.
        batch(printer, global, ui::session_choice(session, true)?)
    }
}

fn batch(
    printer: &mut Printer,
    global: &GlobalArgs,
    choice: SessionChoice,
) -> anyhow::Result<Status> {
    ui::with_session(printer, global, choice, true, |mut s| async move {
        // Past sessions are mined beside the turns (docs/memory.md#mining).
        let mining = mining::on_start_here(s.view.printer, global, s.agent.config(), false);
        let status = batch_lines(&mut s).await;
        mining::at_end(s.view.printer, mining, mining::RUN_END_WAIT);
        status
    })
}

async fn batch_lines(s: &mut ui::Session<'_>) -> anyhow::Result<Status> {
    {
        let mut lines = Lines::new(crate::stdin::lines());
        let mut drafts = Drafts::default();
        loop {
            // No line ready: eonyx is idle until one comes (or stdin ends,
            // which exits at once, dropping any summary being written).
            let next = if lines.ready() {
                lines.next().await
            } else {
                drafts.start_if_due(&mut s.agent, &mut s.view);
                let view = &mut s.view;
                drafts
                    .wait(lines.next(), &mut s.agent, &mut |ev| view.event(ev))
                    .await
            };
            let Some(line) = next else { break };
            let line = line?;
            let input = line.trim();
            if input.is_empty() {
                continue;
            }
            let parts = Parts {
                agent: &mut s.agent,
                view: &mut s.view,
                interrupts: &s.interrupts,
                drafts: &mut drafts,
            };
            let line = Line {
                text: input,
                notice: false,
            };
            match dispatch(parts, Style::BATCH, line, &mut || !lines.ready()).await? {
                Flow::Next | Flow::Unsent => {}
                Flow::Exit => break,
                Flow::Stop(status) => return Ok(status),
            }
        }
        ui::session_end_hooks(&mut s.agent, &mut s.view, &s.interrupts, "other").await;
        Ok(Status::Success)
    }
}

/// Stdin's lines with one line of look-ahead, to tell whether the next one
/// is already there (then eonyx is not idle).
struct Lines {
    rx: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<String>>,
    peeked: Option<Option<std::io::Result<String>>>,
}

impl Lines {
    fn new(rx: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<String>>) -> Self {
        Self { rx, peeked: None }
    }

    /// Whether the next line (or the end of input) has arrived.
    fn ready(&mut self) -> bool {
        if self.peeked.is_none() {
            match self.rx.try_recv() {
                Ok(line) => self.peeked = Some(Some(line)),
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                    self.peeked = Some(None);
                }
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {}
            }
        }
        self.peeked.is_some()
    }

    /// The next line; `None` at the end of input.
    fn next(&mut self) -> impl Future<Output = Option<std::io::Result<String>>> + '_ {
        let peeked = self.peeked.take();
        async move {
            match peeked {
                Some(p) => p,
                None => self.rx.recv().await,
            }
        }
    }
}
