//! `eonyx` with no subcommand: the line-mode REPL on a terminal, a batch run
//! (one turn per non-empty line; `/command`, `!command` and `@path` as in
//! the REPL) when stdin is piped.

use std::io::IsTerminal;

use eonyx_agent::SessionChoice;
use eonyx_agent::commands::{self, GoalEnd, Outcome, Parsed, Surface};

use super::mining;
use super::ui::frontend::Cli;
use super::ui::{self, Drafts, TurnResult};
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
            match commands::parse(input, Surface::Batch) {
                Parsed::Command(inv) => {
                    drafts.before_command(&inv, &mut s.agent, &mut s.view).await;
                    let (outcome, done) = drafts
                        .alongside(ui::frontend::command(
                            &mut s.agent,
                            &mut s.view,
                            &s.interrupts,
                            Surface::Batch,
                            &inv,
                        ))
                        .await;
                    Drafts::finish(done, &mut s.agent, &mut s.view);
                    if let Some(e) = s.view.last_error.take() {
                        return Err(e.into());
                    }
                    match outcome {
                        Outcome::Done | Outcome::Switched => continue,
                        Outcome::Exit => break,
                        Outcome::Turns(end) => {
                            ui::frontend::goal_end(&mut s.view, end)?;
                            continue;
                        }
                        // Its own reason (a bad argument, nothing to do, no
                        // goal): said, and the batch goes on with its exit
                        // status untouched.
                        Outcome::Declined(why) => {
                            ui::outcome::declined(&mut s.view, why);
                            continue;
                        }
                        Outcome::Failed(e) => return Err(e.into()),
                    }
                }
                Parsed::Unknown(name) => {
                    s.view
                        .printer
                        .warn(&format!("unknown command {name}; type /help for the list"));
                    continue;
                }
                Parsed::Text => {}
            }
            if let Some(command) = input.strip_prefix('!') {
                // Runs no model request: a summary being written goes on.
                let (result, done) = drafts
                    .alongside(ui::user_command(
                        &mut s.agent,
                        &mut s.view,
                        &s.interrupts,
                        command,
                    ))
                    .await;
                Drafts::finish(done, &mut s.agent, &mut s.view);
                if let Err(e) = result {
                    let status = e.status();
                    s.view.printer.error(&e.into());
                    return Ok(status);
                }
                if let Some(e) = s.view.last_error.take() {
                    return Err(e.into());
                }
                continue;
            }
            drafts.input_arrived(&mut s.agent, &mut s.view);
            let (result, done) = drafts
                .alongside(ui::line_turn(
                    &mut s.agent,
                    &mut s.view,
                    &s.interrupts,
                    input,
                ))
                .await;
            Drafts::finish(done, &mut s.agent, &mut s.view);
            // Idle after this turn: the summary starts before the turn is
            // reported, so a script that waits for `turn_completed` knows
            // from the events before it whether one is being written.
            if result.is_ok() && !lines.ready() {
                drafts.start_if_due(&mut s.agent, &mut s.view);
            }
            match ui::report(&mut s.view, result) {
                // An active goal goes on by itself (docs/goals.md, section "Goals").
                TurnResult::Ok if s.agent.goal_active() => {
                    let mut fe = Cli::new(&mut s.view, &s.interrupts, Surface::Batch);
                    let end = commands::continue_goal(&mut s.agent, &mut fe, None).await;
                    if let GoalEnd::Failed(e) = end {
                        let status = e.status();
                        s.view.printer.error(&e.into());
                        return Ok(status);
                    }
                }
                TurnResult::Ok => {}
                TurnResult::Failed(e) => {
                    let mut fe = Cli::new(&mut s.view, &s.interrupts, Surface::Batch);
                    commands::pause_after(&mut s.agent, &mut fe, &e);
                    let status = e.status();
                    s.view.printer.error(&e.into());
                    return Ok(status);
                }
            }
            if let Some(e) = s.view.last_error.take() {
                return Err(e.into());
            }
        }
        ui::session_end_hooks(&mut s.agent, &mut s.view, "other").await;
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
