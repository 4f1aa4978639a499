//! How goal and plan events are shown (docs/goals.md, section "Goals"):
//! goal changes, continuations and a new plan (their texts, as `/goal`'s
//! and `/plan`'s, are the command layer's). The goal loop is the command
//! layer's (`eonyx_agent::commands`).

use eonyx_agent::commands::text::{checklist, goal_line};
use eonyx_core::goal::GoalRecord;
use eonyx_core::plan::WorkPlan;

use super::View;
use crate::event::Event;

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
