//! `eonyx` with no subcommand: the line-mode REPL on a terminal, a batch run
//! (one turn per non-empty line) when stdin is piped.

use std::io::{BufRead, IsTerminal};
use std::sync::Arc;

use eonyx_agent::Agent;
use tokio::sync::mpsc;

use super::ui::{self, Mode, Slash, TurnResult};
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
        repl(printer, global, session, new)
    } else {
        batch(printer, global, session)
    }
}

/// Lines of stdin, read on a blocking thread so Ctrl-C stays responsive.
fn stdin_lines() -> mpsc::UnboundedReceiver<std::io::Result<String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn batch(
    printer: &mut Printer,
    global: &GlobalArgs,
    session: &SessionArgs,
) -> anyhow::Result<Status> {
    // Piped runs start a new session unless -c / -s.
    let choice = ui::session_choice(session, true)?;
    let opts = ui::options(global, None)?;
    let mode = ui::mode(global, Mode::Final);
    ui::runtime()?.block_on(async move {
        let ui::Session {
            mut agent,
            mut view,
            interrupts,
        } = ui::start(printer, opts, choice, mode, true).await?;
        let mut lines = stdin_lines();
        while let Some(line) = lines.recv().await {
            let line = line?;
            let input = line.trim();
            if input.is_empty() {
                continue;
            }
            if input.starts_with('/') {
                match ui::slash(&mut agent, &mut view, &interrupts, input).await {
                    Slash::Continue => continue,
                    Slash::Exit => break,
                    Slash::Failed(e) => return Err(e),
                }
            }
            match ui::run_turn(&mut agent, &mut view, &interrupts, input).await {
                TurnResult::Ok => {}
                TurnResult::Failed(e) => {
                    let status = ui::status_for(&e);
                    view.printer.error(&ui::agent_error(e));
                    return Ok(status);
                }
            }
            if let Some(e) = view.last_error.take() {
                return Err(e.into());
            }
        }
        Ok(Status::Success)
    })
}

fn repl(
    printer: &mut Printer,
    global: &GlobalArgs,
    session: &SessionArgs,
    new: bool,
) -> anyhow::Result<Status> {
    let choice = ui::session_choice(session, new)?;
    let opts = ui::options(
        global,
        Some(Arc::new(super::approve::TerminalApprover::new())),
    )?;
    let mode = ui::mode(global, Mode::Stream);
    ui::runtime()?.block_on(async move {
        let ui::Session {
            mut agent,
            mut view,
            interrupts,
        } = ui::start(printer, opts, choice, mode, true).await?;
        view.printer.info("type /help for commands, /exit to leave");
        let lines = super::approve::shared_lines();
        loop {
            let prompt = ctx_prompt(&agent, view.printer.color());
            view.printer.err_raw(&prompt);
            let Some(line) = lines.next_line().await else {
                view.printer.info("");
                break;
            };
            let line = line?;
            let input = line.trim();
            if input.is_empty() {
                continue;
            }
            if input.starts_with('/') {
                match ui::slash(&mut agent, &mut view, &interrupts, input).await {
                    Slash::Continue => {}
                    Slash::Exit => break,
                    Slash::Failed(e) => view.printer.error(&e),
                }
                continue;
            }
            match ui::run_turn(&mut agent, &mut view, &interrupts, input).await {
                TurnResult::Ok => {}
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

/// `{ctx N%} > `, highlighted from the compaction threshold on.
fn ctx_prompt(agent: &Agent, color: bool) -> String {
    let st = agent.context_status();
    let label = format!("{{ctx {:.0}%}}", st.percent);
    if color && st.over_threshold {
        format!("\x1b[1;33m{label}\x1b[0m > ")
    } else {
        format!("{label} > ")
    }
}
