//! `eonyx` with no subcommand: the line-mode REPL on a terminal, a batch run
//! (one turn per non-empty line) when stdin is piped.

use std::io::IsTerminal;

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
        super::repl::run(printer, global, session, new)
    } else {
        batch(printer, global, session)
    }
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
        let mut lines = crate::stdin::lines();
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
