//! `eonyx run [PROMPT]`: one turn, the answer on stdout.

use anyhow::Context as _;

use super::ui::{self, Mode, TurnResult};
use crate::cli::{GlobalArgs, RunArgs};
use crate::exit::{Status, usage};
use crate::printer::Printer;

pub fn run(printer: &mut Printer, global: &GlobalArgs, args: &RunArgs) -> anyhow::Result<Status> {
    let prompt = match args.prompt.as_deref() {
        Some(p) if p != "-" => p.to_owned(),
        _ => crate::stdin::read_all().context("cannot read the prompt from stdin")?,
    };
    let prompt = prompt.trim().to_owned();
    if prompt.is_empty() {
        return Err(usage(
            "no prompt: pass it as an argument (`eonyx run \"...\"`) or on stdin",
        ));
    }
    let choice = ui::session_choice(&args.session, true)?;
    ui::with_session(printer, global, choice, true, |mut s| async move {
        // The prompt goes as written (`@` is a REPL and batch-line
        // convenience); images only through --image.
        let input = s.agent.prepare_prompt(&prompt, &args.images)?;
        let result = ui::run_turn(&mut s.agent, &mut s.view, &s.interrupts, &input).await;
        ui::session_end_hooks(&mut s.agent, &mut s.view, "other").await;
        if let Some(e) = s.view.last_error.take() {
            return Err(e.into());
        }
        match result {
            TurnResult::Ok => Ok(Status::Success),
            TurnResult::Failed(e) => {
                let status = e.status();
                if s.view.mode != Mode::Json || status != Status::Interrupted {
                    s.view.printer.error(&e.into());
                }
                Ok(status)
            }
        }
    })
}
