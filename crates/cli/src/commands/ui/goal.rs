//! How goals and plans are shown (docs/goals.md, section "Goals"): `/goal`,
//! `/plan`, goal changes and continuations. The goal loop is the command
//! layer's (`eonyx_agent::commands`).

use eonyx_agent::Agent;
use eonyx_core::goal::{GoalRecord, GoalStatus};
use eonyx_core::plan::{StepStatus, WorkPlan};

use super::View;
use crate::event::Event;

/// `/goal` alone: the goal, its status and budget.
pub fn show_goal(agent: &Agent, view: &mut View<'_>) {
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

/// `/plan`: the current plan as a checklist (stdout: it is what was asked
/// for; a failed write is left in [`View::last_error`]).
pub fn show_plan(agent: &Agent, view: &mut View<'_>) {
    match agent.plan() {
        Some(p) => {
            if let Err(e) = view.printer.outln(&checklist(&p)) {
                view.last_error = Some(e);
            }
        }
        None => view
            .printer
            .info("no plan yet; the model makes one with the plan tool"),
    }
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
