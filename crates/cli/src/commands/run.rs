//! `eonyx run [PROMPT]`: one turn, the answer on stdout; with `--goal`
//! (or `-c` on a paused goal) the turns it takes to reach the goal
//! (docs/goals.md, section "Goals").

use anyhow::Context as _;

use eonyx_agent::commands::{self, GoalEnd, GoalStart, Surface, text};
use eonyx_core::goal::GoalStatus;

use super::mining;
use super::ui::frontend::Cli;
use super::ui::{self, Mode};
use crate::cli::{GlobalArgs, RunArgs};
use crate::exit::{Status, usage};
use crate::printer::Printer;

pub fn run(printer: &mut Printer, global: &GlobalArgs, args: &RunArgs) -> anyhow::Result<Status> {
    let goal_text = match args.goal.as_deref().map(str::trim) {
        Some("") => return Err(usage("--goal needs the goal's text: --goal \"...\"")),
        g => g.map(str::to_owned),
    };
    let prompt = match (args.prompt.as_deref(), &goal_text) {
        // With a goal and no prompt, the goal is the first message.
        (None, Some(g)) => g.clone(),
        (Some(p), _) if p != "-" => p.to_owned(),
        _ => crate::stdin::read_all().context("cannot read the prompt from stdin")?,
    };
    let prompt = prompt.trim().to_owned();
    if prompt.is_empty() {
        return Err(usage(
            "no prompt: pass it as an argument (`eonyx run \"...\"`) or on stdin",
        ));
    }
    let continues = args.session.continue_ || args.session.session.is_some();
    let choice = ui::session_choice(&args.session, true)?;
    ui::with_session(printer, global, choice, true, |mut s| async move {
        // Past sessions are mined beside the turn (docs/memory.md#mining).
        let mining = mining::on_start_here(s.view.printer, global, s.agent.config(), false);
        let status = turns(&mut s, args, goal_text, continues, prompt).await;
        mining::at_end(s.view.printer, mining, mining::RUN_END_WAIT);
        status
    })
}

async fn turns(
    s: &mut ui::Session<'_>,
    args: &RunArgs,
    goal_text: Option<String>,
    continues: bool,
    prompt: String,
) -> anyhow::Result<Status> {
    // The prompt goes as written (`@` is a REPL and batch-line
    // convenience); images only through --image.
    let input = s.agent.prepare_prompt(&prompt, &args.images)?;
    let start = match &goal_text {
        Some(text) => GoalStart::Set {
            text,
            max_turns: args.max_turns,
        },
        // `run -c` goes on with a paused (or blocked) goal.
        None if continues => GoalStart::Resume,
        None => GoalStart::None,
    };
    let ran = {
        let mut fe = Cli::new(&mut s.view, &s.interrupts, Surface::Batch);
        commands::run_prompt(&mut s.agent, &mut fe, &input, start).await?
    };
    if let Some(e) = s.view.last_error.take() {
        return Err(e.into());
    }
    if ran.goal {
        return Ok(verdict(s, ran.end));
    }
    match ran.end {
        GoalEnd::Stopped { .. } => Ok(Status::Success),
        GoalEnd::Failed(e) => {
            let status = e.status();
            if s.view.mode != Mode::Json || status != Status::Interrupted {
                s.view.printer.error(&e.into());
            }
            Ok(status)
        }
    }
}

/// How a goal run ends: its exit status, and one line on stderr (the goal
/// event's line, which `--json` does not show otherwise; or the error).
fn verdict(s: &mut ui::Session<'_>, end: GoalEnd) -> Status {
    let status = goal_status(&end);
    let json = s.view.mode == Mode::Json;
    match end {
        GoalEnd::Failed(e) if !e.is_interrupted() && !json => {
            s.view.printer.error(&e.into());
        }
        // The goal event already printed its line.
        _ if !json => {}
        _ => {
            if let Some(g) = s.agent.goal() {
                s.view.printer.info(&text::goal_line(g));
            }
        }
    }
    status
}

/// The exit status of a goal run: 0 achieved, 1 blocked or out of budget
/// (or a failed turn), 130 interrupted.
fn goal_status(end: &GoalEnd) -> Status {
    match end {
        GoalEnd::Stopped {
            status: Some(GoalStatus::Achieved) | None,
            ..
        } => Status::Success,
        GoalEnd::Stopped { .. } => Status::Failed,
        GoalEnd::Failed(e) => e.status(),
    }
}
