//! The REPL's and batch runs' side of the command layer
//! (`eonyx_agent::commands`): how what a command reports is shown, the
//! rewind question, Ctrl-C. Which commands exist and what they do is the
//! layer's.

use eonyx_agent::commands::{
    self, Answer, Frontend, Invocation, Outcome, Shown, Surface, TurnKind,
};
use eonyx_agent::mining::review;
use eonyx_agent::permission_rules;
use eonyx_agent::rewind::RewindPlan;
use eonyx_agent::{Agent, AgentError, AgentEvent, TurnOutcome, UserInput};
use eonyx_core::provider::CancellationToken;

use super::view::Mode;
use super::{Interrupts, View};

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
        render(self.view, agent, self.surface, shown);
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

    /// The REPL shows what a rewind will do and asks; batch runs just do it.
    fn confirm_rewind<'a>(&'a mut self, plan: &'a RewindPlan) -> Answer<'a, bool> {
        Box::pin(async move {
            let Some(asker) = &self.view.asker else {
                return true;
            };
            self.view.printer.info(&super::rewind::describe(plan));
            let yes = loop {
                match asker.ask("rewind? [y]es / [n]o: ").await {
                    Some(a) => match a.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => break true,
                        "n" | "no" | "" => break false,
                        _ => continue,
                    },
                    None => break false,
                }
            };
            if !yes {
                self.view.printer.info("nothing rewound");
            }
            yes
        })
    }
}

fn home() -> Option<String> {
    std::env::var("HOME").ok()
}

/// Show what a command reports.
fn render(view: &mut View<'_>, agent: &Agent, surface: Surface, shown: Shown) {
    match shown {
        Shown::Help => view.printer.info(&commands::help(surface)),
        Shown::Note(s) => view.printer.info(&s),
        Shown::Warning(s) => view.printer.warn(&s),
        Shown::Renamed(title) => view.printer.info(&format!("renamed to {title}")),
        Shown::Sessions(list) => {
            for s in &list {
                let marker = if &s.id == agent.session_id() {
                    "*"
                } else {
                    " "
                };
                let tasks = match s.children {
                    0 => String::new(),
                    n => format!("  ({n} task{})", if n == 1 { "" } else { "s" }),
                };
                view.printer.info(&format!(
                    "{marker} {}  {}  {:>5}  {}{tasks}",
                    s.id, s.last_activity, s.message_count, s.title
                ));
            }
        }
        Shown::Session { notices } => {
            view.session(agent);
            for n in notices {
                view.printer.warn(&n);
            }
        }
        Shown::Rewound(report) => super::rewind::rewound(view, &report),
        Shown::Forked {
            original,
            forked,
            notices,
        } => super::rewind::forked(view, &original, &forked, notices),
        Shown::Goal => super::goal::show_goal(agent, view),
        // The goal event showed the change.
        Shown::GoalChanged(_) => {}
        Shown::Plan => super::goal::show_plan(agent, view),
        Shown::Exported(x) => crate::commands::export::exported(view.printer, &x),
        Shown::Context => crate::commands::context::print_for_repl(view.printer, agent),
        Shown::Memory(entries) => {
            let entries = crate::commands::memory::newest_last(entries);
            if entries.is_empty() {
                view.printer
                    .info("no memory entries yet; add one with /remember TEXT");
            }
            for row in crate::commands::memory::rows(&entries) {
                view.printer.info(&row);
            }
        }
        Shown::Remembered(entry) => view.memory_changed("add", &entry),
        Shown::Skills => crate::commands::skills::print_for_repl(
            view.printer,
            agent.skills(),
            agent.skills_in_use(),
            home().as_deref(),
        ),
        Shown::Hooks => crate::commands::hooks::print_for_repl(view.printer, agent.config()),
        Shown::Proposals { pending, costs } => {
            for line in review::listing(&pending, &costs) {
                view.printer.info(&line);
            }
        }
        Shown::Reviewed(r) => view.printer.info(&review::reviewed(&r)),
        Shown::LeftOut(out) => {
            for line in review::left_out(&out) {
                view.printer.warn(&line);
            }
        }
        Shown::Permissions(rules) if rules.is_empty() => view.printer.info(permission_rules::NONE),
        Shown::Permissions(rules) => {
            for line in permission_rules::table(&rules) {
                view.printer.info(&line);
            }
        }
        Shown::PermissionForgotten { number, rule } => view
            .printer
            .info(&permission_rules::forgotten(number, &rule)),
        Shown::Status(st) => super::status::show(view, &st, home().as_deref()),
        Shown::Model(info) => {
            view.printer.info(&info.to_string());
            view.printer
                .info(&format!("models: {}", info.keys.join(", ")));
        }
        Shown::ModelSwitched { info, notices } => {
            for n in notices {
                view.printer.warn(&n);
            }
            view.printer.info(&format!("switched: {info}"));
        }
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
