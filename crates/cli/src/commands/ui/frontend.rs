//! The REPL's and batch runs' side of the command layer
//! (`eonyx_agent::commands`): how what a command reports is shown, the
//! rewind question, Ctrl-C. Which commands exist and what they do is the
//! layer's.

use eonyx_agent::commands::{
    self, Answer, Frontend, Invocation, Outcome, Shown, Surface, Tone, TurnKind,
};
use eonyx_agent::{Agent, AgentError, AgentEvent, TurnOutcome, UserInput};
use eonyx_core::provider::CancellationToken;

use super::view::Mode;
use super::{Interrupts, View};
use crate::event::{Event, StatusEvent};

/// The terminal frontends: a [`View`] and Ctrl-C.
pub struct Cli<'v, 'p> {
    pub view: &'v mut View<'p>,
    pub interrupts: &'v Interrupts,
    pub surface: Surface,
}

impl<'v, 'p> Cli<'v, 'p> {
    pub fn new(view: &'v mut View<'p>, interrupts: &'v Interrupts, surface: Surface) -> Self {
        Self {
            view,
            interrupts,
            surface,
        }
    }
}

/// Run the command `inv` (a line the table read) through the view. Output
/// that could not be written (stdout closed) is left in
/// [`View::last_error`] for the loop to stop on.
pub async fn command(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    surface: Surface,
    inv: &Invocation<'_>,
) -> Outcome {
    let mut fe = Cli::new(view, interrupts, surface);
    commands::run(agent, &mut fe, inv).await
}

impl Frontend for Cli<'_, '_> {
    fn surface(&self) -> Surface {
        self.surface
    }

    fn event(&mut self, ev: AgentEvent) {
        self.view.event(ev);
    }

    fn show(&mut self, agent: &Agent, shown: Shown) {
        show(self.view, agent, self.surface, shown);
    }

    fn interruptible(&mut self) -> CancellationToken {
        self.interrupts.begin()
    }

    fn settled(&mut self) {
        self.interrupts.end();
    }

    fn turn_started(&mut self, input: &UserInput, _kind: TurnKind) {
        self.view.turn_started(input);
    }

    fn turn_ended(&mut self, result: &Result<TurnOutcome, AgentError>) {
        match result {
            Ok(outcome) => self.view.turn_finished(outcome),
            Err(e) => self.view.failed(e),
        }
    }

    fn failed(&mut self, e: &AgentError) {
        self.view.failed(e);
    }

    fn broken(&self) -> bool {
        self.view.last_error.is_some()
    }

    fn interrupted_reason(&self) -> &'static str {
        "interrupted (Ctrl-C)"
    }

    fn can_ask(&self) -> bool {
        self.view.asker.is_some()
    }

    /// The REPL asks in its line editor; Ctrl-C or Ctrl-D is no answer.
    fn ask<'a>(&'a mut self, question: &'a str) -> Answer<'a, Option<String>> {
        Box::pin(async move { self.view.asker.as_ref()?.ask(question).await })
    }
}

fn home() -> Option<String> {
    std::env::var("HOME").ok()
}

/// Print what a command reports: the command layer's lines
/// (`commands::render`), each by its tone; with `--json` also its event,
/// which replaces the information lines of `/status` and of the session
/// after `/new` or `/resume`.
fn show(view: &mut View<'_>, agent: &Agent, surface: Surface, shown: Shown) {
    if let Shown::Remembered(_) = shown {
        view.settle_line();
    }
    let replaced =
        view.mode == Mode::Json && matches!(shown, Shown::Status(_) | Shown::Session { .. });
    // `/status` has only the line its event replaces: not written at all.
    let lines = if replaced && matches!(shown, Shown::Status(_)) {
        Vec::new()
    } else {
        commands::render(agent, &shown, surface, home().as_deref())
    };
    for line in lines {
        match line.tone {
            Tone::Info if replaced => {}
            Tone::Info => view.printer.info(&line.text),
            Tone::Warn => view.printer.warn(&line.text),
            Tone::Data => {
                if let Err(e) = view.printer.outln(&line.text) {
                    view.last_error = Some(e);
                }
            }
            // The goal's event showed it.
            Tone::Echo => {}
        }
    }
    if view.mode == Mode::Json {
        json_event(view, agent, shown);
    }
}

/// The `--json` event of what a command reports, where it has one.
fn json_event(view: &mut View<'_>, agent: &Agent, shown: Shown) {
    match shown {
        Shown::Status(st) => view.json(&Event::Status(Box::new(StatusEvent::new(&st)))),
        Shown::Session { .. } => view.session(agent),
        Shown::Rewound(report) => super::rewind::rewound_json(view, &report),
        Shown::Forked {
            original, forked, ..
        } => super::rewind::forked_json(view, &original, &forked),
        Shown::Remembered(entry) => view.memory_json("add", &entry),
        _ => {}
    }
}

/// A goal loop's end after a command: interrupted is not a failure of the
/// command (the goal is paused, the REPL or batch goes on).
pub fn goal_end(view: &mut View<'_>, end: commands::GoalEnd) -> Result<(), AgentError> {
    match end {
        commands::GoalEnd::Stopped { .. } => Ok(()),
        commands::GoalEnd::Failed(e) if e.is_interrupted() => {
            if view.mode != Mode::Json {
                view.printer.info("interrupted");
            }
            Ok(())
        }
        commands::GoalEnd::Failed(e) => Err(e),
    }
}
