//! One input line of the REPL or a batch run, once for both: a slash
//! command through the command layer, `!command`, or a user turn with
//! whatever the goal then needs (`eonyx_agent::commands::user_turn`). How
//! the two differ is data ([`Style`]); reading lines is each loop's own
//! (the line editor, stdin).

use eonyx_agent::commands::{self, GoalEnd, Outcome, Parsed, Surface};
use eonyx_agent::{Agent, AgentError, UserInput};

use super::frontend::{Cli, goal_end};
use super::{Drafts, Interrupts, View};
use crate::exit::Status;

/// How a loop treats what its lines do.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Whose lines these are: [`Surface::Repl`] or [`Surface::Batch`].
    pub surface: Surface,
    /// A failure (a command's, `!command`'s, a turn's) ends the loop with
    /// its exit status (batch, docs/cli.md#batch-input); otherwise it is
    /// said and the loop goes on (the REPL).
    pub stops_on_failure: bool,
    /// The goal's continuations run alongside a summary being written (the
    /// REPL); a batch runs them before it looks at its input again.
    pub goal_alongside_drafts: bool,
}

impl Style {
    pub const REPL: Style = Style {
        surface: Surface::Repl,
        stops_on_failure: false,
        goal_alongside_drafts: true,
    };

    pub const BATCH: Style = Style {
        surface: Surface::Batch,
        stops_on_failure: true,
        goal_alongside_drafts: false,
    };
}

/// What the loop does after a line.
#[derive(Debug)]
pub enum Flow {
    /// Read the next line.
    Next,
    /// Leave (`/exit`).
    Exit,
    /// Stop with this exit status (a batch whose line failed).
    Stop(Status),
    /// The line could not be sent (a missing `@` file): give it back to
    /// edit (the REPL).
    Unsent,
}

/// One line, what the loop read.
pub struct Line<'a> {
    /// The trimmed, non-empty text.
    pub text: &'a str,
    /// A `notify` job's notice woke the REPL: the turn's input as is, not a
    /// command, no `@` files.
    pub notice: bool,
}

/// The parts of a session a line runs on.
pub struct Parts<'s, 'p> {
    pub agent: &'s mut Agent,
    pub view: &'s mut View<'p>,
    pub interrupts: &'s Interrupts,
    pub drafts: &'s mut Drafts,
}

/// Run `line` as `style` says. `idle` tells whether eonyx is idle once the
/// user's turn ends (no next line waiting): then a summary due is started
/// before the turn's end is shown.
pub async fn dispatch(
    p: Parts<'_, '_>,
    style: Style,
    line: Line<'_>,
    idle: &mut dyn FnMut() -> bool,
) -> anyhow::Result<Flow> {
    let parsed = if line.notice {
        Parsed::Text
    } else {
        commands::parse(line.text, style.surface)
    };
    match parsed {
        Parsed::Command(inv) => {
            p.drafts.before_command(&inv, p.agent, p.view).await;
            let (outcome, done) = p
                .drafts
                .alongside(super::frontend::command(
                    p.agent,
                    p.view,
                    p.interrupts,
                    style.surface,
                    &inv,
                ))
                .await;
            Drafts::finish(done, p.agent, p.view);
            return command_end(p.view, style, outcome);
        }
        Parsed::Unknown(name) => {
            p.view
                .printer
                .warn(&format!("unknown command {name}; type /help for the list"));
            return Ok(Flow::Next);
        }
        Parsed::Text => {}
    }
    if !line.notice
        && let Some(command) = line.text.strip_prefix('!')
    {
        // Runs no model request: a summary being written goes on.
        let (result, done) = p
            .drafts
            .alongside(super::user_command(p.agent, p.view, p.interrupts, command))
            .await;
        Drafts::finish(done, p.agent, p.view);
        if let Err(e) = result
            && let Some(stop) = failed(p.view, style, e)
        {
            return Ok(stop);
        }
        return checked(p.view, Flow::Next);
    }
    p.drafts.input_arrived(p.agent, p.view);
    let (result, done) = if line.notice {
        let input = UserInput::text(line.text);
        p.drafts
            .alongside(super::turn(p.agent, p.view, p.interrupts, &input))
            .await
    } else {
        p.drafts
            .alongside(super::line_turn(p.agent, p.view, p.interrupts, line.text))
            .await
    };
    Drafts::finish(done, p.agent, p.view);
    // Idle after this turn: the summary starts before the turn is
    // reported, so a script that waits for `turn_completed` knows from
    // the events before it whether one is being written.
    if result.is_ok() && idle() {
        p.drafts.start_if_due(p.agent, p.view);
    }
    let end = {
        let mut fe = Cli::new(p.view, p.interrupts, style.surface);
        let after = commands::after_turn(p.agent, &mut fe, result);
        if style.goal_alongside_drafts {
            let (end, done) = p.drafts.alongside(after).await;
            Drafts::finish(done, p.agent, p.view);
            end
        } else {
            after.await
        }
    };
    let flow = match end {
        GoalEnd::Stopped { .. } => Flow::Next,
        GoalEnd::Failed(e @ AgentError::Attach(_)) if !style.stops_on_failure => {
            p.view.printer.error(&e.into());
            Flow::Unsent
        }
        GoalEnd::Failed(e) if e.is_interrupted() && !style.stops_on_failure => {
            p.view.printer.info("interrupted");
            Flow::Next
        }
        GoalEnd::Failed(e) => match failed(p.view, style, e) {
            Some(stop) => return Ok(stop),
            None => Flow::Next,
        },
    };
    checked(p.view, flow)
}

/// How a command ended: `/exit` leaves; a declined command is said; a
/// failure is said (the REPL) or stops the batch.
fn command_end(view: &mut View<'_>, style: Style, outcome: Outcome) -> anyhow::Result<Flow> {
    if style.stops_on_failure
        && let Some(e) = view.last_error.take()
    {
        return Err(e.into());
    }
    let failure = match outcome {
        Outcome::Done | Outcome::Switched => None,
        Outcome::Exit => return Ok(Flow::Exit),
        Outcome::Turns(end) => goal_end(view, end).err(),
        // Its own reason (a bad argument, nothing to do, no goal): said,
        // and a batch goes on with its exit status untouched.
        Outcome::Declined(why) => {
            super::outcome::declined(view, why);
            None
        }
        Outcome::Failed(e) => Some(e),
    };
    if style.stops_on_failure {
        return match failure {
            Some(e) => Err(e.into()),
            None => Ok(Flow::Next),
        };
    }
    if let Some(e) = failure {
        view.printer.error(&e.into());
    }
    checked(view, Flow::Next)
}

/// Say a failure; with `stops_on_failure` the loop stops with its status.
fn failed(view: &mut View<'_>, style: Style, e: AgentError) -> Option<Flow> {
    let status = e.status();
    view.printer.error(&e.into());
    style.stops_on_failure.then_some(Flow::Stop(status))
}

/// `flow`, unless output could not be written (stdout closed): then the
/// loop stops on that error.
fn checked(view: &mut View<'_>, flow: Flow) -> anyhow::Result<Flow> {
    match view.last_error.take() {
        Some(e) => Err(e.into()),
        None => Ok(flow),
    }
}
