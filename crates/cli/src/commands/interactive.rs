//! `eonyx` with no subcommand: the line-mode REPL on a terminal, a batch run
//! (one turn per non-empty line; `/command`, `!command` and `@path` as in
//! the REPL) when stdin is piped.

use std::io::IsTerminal;

use eonyx_agent::SessionChoice;

use super::ui::{self, Slash, TurnResult};
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
        let mut lines = crate::stdin::lines();
        while let Some(line) = lines.recv().await {
            let line = line?;
            let input = line.trim();
            if input.is_empty() {
                continue;
            }
            if input.starts_with('/') {
                match ui::slash(&mut s.agent, &mut s.view, &s.interrupts, input).await {
                    Slash::Continue => continue,
                    Slash::Exit => break,
                    Slash::Failed(e) => return Err(e),
                }
            }
            if let Some(command) = input.strip_prefix('!') {
                if let Err(e) =
                    ui::user_command(&mut s.agent, &mut s.view, &s.interrupts, command).await
                {
                    let status = ui::status_for(&e);
                    s.view.printer.error(&ui::agent_error(e));
                    return Ok(status);
                }
                if let Some(e) = s.view.last_error.take() {
                    return Err(e.into());
                }
                continue;
            }
            match ui::send_line(&mut s.agent, &mut s.view, &s.interrupts, input).await {
                TurnResult::Ok => {}
                TurnResult::Failed(e) => {
                    let status = ui::status_for(&e);
                    s.view.printer.error(&ui::agent_error(e));
                    return Ok(status);
                }
            }
            if let Some(e) = s.view.last_error.take() {
                return Err(e.into());
            }
        }
        Ok(Status::Success)
    })
}
