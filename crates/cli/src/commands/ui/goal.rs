//! Goals and plans in the frontends (docs/goals.md, section "Goals"): `/goal`,
//! `/plan`, the continuation loop after a turn (REPL, batch, `run`), and
//! how plans and goal changes are shown.

use eonyx_agent::{Agent, AgentError, AgentEvent, GoalChange, UserInput};
use eonyx_core::goal::{GoalRecord, GoalStatus};
use eonyx_core::plan::{StepStatus, WorkPlan};

use super::{Interrupts, Slash, View, report};
use crate::event::Event;
use crate::exit::Status;

/// How a goal's loop ended.
#[derive(Debug)]
pub enum GoalEnd {
    /// No goal is active (any more): its status says why (`None`: no goal).
    Stopped(Option<GoalStatus>),
    /// A turn failed (interrupted included); the goal was paused.
    Failed(AgentError),
}

impl GoalEnd {
    /// The exit status of `run` for a goal run: 0 achieved, 1 blocked or
    /// out of budget (or a failed turn), 130 interrupted.
    pub fn status(&self) -> Status {
        match self {
            GoalEnd::Stopped(Some(GoalStatus::Achieved) | None) => Status::Success,
            GoalEnd::Stopped(Some(_)) => Status::Failed,
            GoalEnd::Failed(e) => e.status(),
        }
    }
}

/// After a turn completed: while the goal is active, send
/// the continuations eonyx writes itself, each a visible, interruptible
/// turn, until the goal is achieved, blocked or out of budget. A failed or
/// interrupted turn pauses the goal.
pub async fn continue_goal(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
) -> GoalEnd {
    loop {
        let next = {
            let mut sink = |ev: AgentEvent| view.event(ev);
            agent.goal_continuation(&mut sink)
        };
        let input = match next {
            Ok(Some(input)) => input,
            Ok(None) => return GoalEnd::Stopped(agent.goal().map(|g| g.status)),
            Err(e) => {
                view.failed(&e);
                return GoalEnd::Failed(e);
            }
        };
        let result = super::turn(agent, view, interrupts, &input).await;
        match report(view, result) {
            super::TurnResult::Ok => {}
            super::TurnResult::Failed(e) => {
                pause_after(agent, view, &e);
                return GoalEnd::Failed(e);
            }
        }
        if view.last_error.is_some() {
            return GoalEnd::Stopped(agent.goal().map(|g| g.status));
        }
    }
}

/// Pause an active goal after a turn that did not complete.
pub fn pause_after(agent: &mut Agent, view: &mut View<'_>, e: &AgentError) {
    let why = if e.is_interrupted() {
        "interrupted (Ctrl-C)".to_owned()
    } else {
        format!("a turn failed: {e}")
    };
    let mut sink = |ev: AgentEvent| view.event(ev);
    if let Err(err) = agent.pause_goal(&why, &mut sink) {
        view.failed(&err);
    }
}

/// Run `first` (the goal's first message) and continue the goal.
pub async fn run_goal(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    first: &UserInput,
) -> GoalEnd {
    let result = super::turn(agent, view, interrupts, first).await;
    match report(view, result) {
        super::TurnResult::Ok => continue_goal(agent, view, interrupts).await,
        super::TurnResult::Failed(e) => {
            pause_after(agent, view, &e);
            GoalEnd::Failed(e)
        }
    }
}

/// `/goal [TEXT | pause | resume | clear]` (REPL and batch).
pub async fn goal_command(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    arg: &str,
) -> Slash {
    let change = match arg {
        "" => {
            show_goal(agent, view);
            return Slash::Continue;
        }
        "pause" => Some(GoalChange::Pause),
        "resume" => Some(GoalChange::Resume),
        "clear" => Some(GoalChange::Clear),
        _ => None,
    };
    let changed = {
        let mut sink = |ev: AgentEvent| view.event(ev);
        match change {
            Some(c) => agent.change_goal(c, &mut sink),
            None => agent.set_goal(arg, None, &mut sink),
        }
    };
    let goal = match changed {
        Ok(g) => g,
        Err(e) => return Slash::Failed(e.into()),
    };
    let end = match change {
        // A new goal: its text is the first message.
        None => {
            let input = match agent.prepare_input(&goal.text).await {
                Ok(i) => i,
                Err(e) => return Slash::Failed(e.into()),
            };
            run_goal(agent, view, interrupts, &input).await
        }
        Some(GoalChange::Resume) => continue_goal(agent, view, interrupts).await,
        Some(_) => return Slash::Continue,
    };
    ended(view, end)
}

/// A goal loop's end as a slash command's: interrupted is not a failure
/// of the command (the REPL goes on; the goal is paused).
fn ended(view: &mut View<'_>, end: GoalEnd) -> Slash {
    match end {
        GoalEnd::Stopped(_) => Slash::Continue,
        GoalEnd::Failed(e) if e.is_interrupted() => {
            if view.mode != super::Mode::Json {
                view.printer.info("interrupted");
            }
            Slash::Continue
        }
        GoalEnd::Failed(e) => Slash::Failed(e.into()),
    }
}

/// `/goal` alone: the goal, its status and budget.
fn show_goal(agent: &Agent, view: &mut View<'_>) {
    match agent.goal() {
        Some(g) => {
            view.printer.info(&format!("goal: {}", g.text));
            view.printer.info(&format!("status: {}", g.status_line()));
        }
        None => view
            .printer
            .info("no goal; set one with /goal TEXT (eonyx continues until it is achieved)"),
    }
}

/// `/plan`: the current plan as a checklist (stdout: it is what was asked for).
pub fn plan_command(agent: &Agent, view: &mut View<'_>) -> Slash {
    match agent.plan() {
        Some(p) => {
            if let Err(e) = view.printer.outln(&checklist(&p)) {
                return Slash::Failed(e.into());
            }
        }
        None => view
            .printer
            .info("no plan yet; the model makes one with the plan tool"),
    }
    Slash::Continue
}

/// A plan as a checklist: `[x]` completed, `[>]` in progress, `[ ]`
/// pending, under a line with the progress.
pub fn checklist(plan: &WorkPlan) -> String {
    let mut out = format!("plan ({}):", plan.progress());
    for s in &plan.steps {
        let mark = match s.status {
            StepStatus::Completed => "[x]",
            StepStatus::InProgress => "[>]",
            StepStatus::Pending => "[ ]",
        };
        out.push_str(&format!("\n  {mark} {}", s.step));
    }
    if let Some(n) = &plan.note {
        out.push_str(&format!("\n  note: {n}"));
    }
    out
}

/// The one line a goal's status change is shown with (and `run --goal`'s
/// verdict).
pub fn goal_line(g: &GoalRecord) -> String {
    match g.status {
        GoalStatus::Active if g.turns_used == 0 => format!(
            "goal set: {} (eonyx continues until it is achieved; budget {} turns; Ctrl-C pauses)",
            g.text, g.max_turns
        ),
        GoalStatus::Active => format!("goal active again: {}", g.text),
        GoalStatus::Paused => format!(
            "goal paused: {}; /goal resume or `eonyx run -c` goes on",
            g.reason.as_deref().unwrap_or("by the user")
        ),
        GoalStatus::Achieved => format!(
            "goal achieved: {}",
            g.evidence.as_deref().unwrap_or("no evidence given")
        ),
        GoalStatus::Blocked => format!(
            "goal blocked: {}",
            g.reason.as_deref().unwrap_or("no reason given")
        ),
        GoalStatus::BudgetLimited => format!(
            "goal stopped: the budget of {} continuation turns is used up (budget_limited); /goal resume gives it another",
            g.max_turns
        ),
        GoalStatus::Cleared => "goal cleared".to_owned(),
    }
}

impl View<'_> {
    /// A `plan` call replaced the plan: the checklist on stderr, or a
    /// `plan` event.
    pub fn plan_changed(&mut self, plan: &WorkPlan) {
        if self.mode == super::Mode::Json {
            self.json(&Event::Plan {
                steps: &plan.steps,
                note: plan.note.as_deref(),
            });
        } else {
            self.end_stream_line();
            self.printer.info(&checklist(plan));
        }
    }

    /// The goal was set or changed.
    pub fn goal_changed(&mut self, g: &GoalRecord) {
        if self.mode == super::Mode::Json {
            self.json(&Event::Goal {
                text: &g.text,
                status: g.status,
                turns_used: g.turns_used,
                max_turns: g.max_turns,
                evidence: g.evidence.as_deref(),
                reason: g.reason.as_deref(),
            });
        } else {
            self.end_stream_line();
            self.printer.info(&goal_line(g));
        }
    }

    /// eonyx continues the goal by itself.
    pub fn goal_continues(&mut self, turns_used: u32, max_turns: u32) {
        if self.mode == super::Mode::Json {
            self.json(&Event::GoalContinue {
                turns_used,
                max_turns,
            });
        } else {
            self.end_stream_line();
            self.printer.info(&format!(
                "goal: continuing by itself ({turns_used} of {max_turns}; Ctrl-C pauses)"
            ));
        }
    }
}
