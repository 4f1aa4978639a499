//! Plans and goals (docs/goals.md, section "Goals"; docs/tools.md#plan): the
//! `plan` and `goal_update` tools, `/goal` and its changes, and the
//! continuation a frontend sends after a turn that left the goal active.
//!
//! The plan is never stored apart: it is derived from the view (the last
//! successful `plan` call, else the plan the last compaction pinned). The
//! goal is the last `goal` record of the timeline, else the one the last
//! compaction pinned; `self.goal` holds it, and every change is appended
//! before it is taken. `goal_update` is in the offered tools exactly while
//! a goal is active in the user's own session (never in a task's child).

use eonyx_core::goal::{GoalRecord, GoalStatus, continuation_message};
use eonyx_core::plan::WorkPlan;
use eonyx_core::{CompactionRecord, ToolCall, ToolDef, ToolName};
use eonyx_store::SessionWriter;

use super::{Agent, UserInput};
use crate::error::{AgentError, UsageError};
use crate::events::{AgentEvent, Events};
use eonyx_tools::{self as tools, GoalUpdate, ToolOutput};

/// A change `/goal` asks for besides setting a new goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalChange {
    Pause,
    /// Active again (a budget already used up starts over).
    Resume,
    Clear,
}

/// The goal in force for a session opened from its file: the newest goal
/// record after the compaction in force, else what that compaction pinned,
/// else the newest record (no compaction).
pub(crate) fn goal_in_force(
    compaction: Option<&CompactionRecord>,
    newest: Option<GoalRecord>,
) -> Option<GoalRecord> {
    let goal = match (compaction, newest) {
        (Some(c), Some(g)) if g.seq > c.seq => Some(g),
        (Some(c), _) => c.goal.as_ref().map(|p| GoalRecord {
            seq: c.seq,
            ts: c.ts.clone(),
            text: p.text.clone(),
            status: p.status,
            max_turns: p.max_turns,
            turns_used: p.turns_used,
            evidence: None,
            reason: None,
        }),
        (None, g) => g,
    };
    goal.filter(|g| g.status != GoalStatus::Cleared)
}

/// The session's goal as `/goal`, `run --goal`, the goal loop and the
/// `goal_update` tool change it ([`Agent::goals`]): every change is
/// appended to the session file before it is taken, and `goal_update` is
/// offered exactly while the goal is active.
pub struct SessionGoal<'a> {
    goal: &'a mut Option<GoalRecord>,
    writer: &'a mut SessionWriter,
    /// The tools offered (`goal_update` comes and goes).
    defs: &'a mut Vec<ToolDef>,
    /// A task's child has no goal.
    in_task: bool,
    /// `goals.max_turns`.
    max_turns: u32,
    events: &'a Events,
}

impl Agent {
    /// The session's goal (any status but cleared), if it has one.
    pub fn goal(&self) -> Option<&GoalRecord> {
        self.goal.as_ref()
    }

    /// The session's goal, to change it.
    pub fn goals(&mut self) -> SessionGoal<'_> {
        SessionGoal {
            goal: &mut self.goal,
            writer: &mut self.writer,
            defs: &mut self.tools.defs,
            in_task: self.depth > 0,
            max_turns: self.config.goals.max_turns,
            events: &self.events,
        }
    }

    /// The current plan (docs/tools.md#plan).
    pub fn plan(&self) -> Option<WorkPlan> {
        self.view.plan()
    }

    /// Run a `plan` call: a good plan is shown and becomes the current one
    /// (its result is what makes it so); a bad one changes nothing.
    pub(super) fn run_plan_tool(&mut self, call: &ToolCall) -> ToolOutput {
        match WorkPlan::from_args(&call.arguments) {
            Ok(plan) => {
                let progress = plan.progress();
                self.events.send(AgentEvent::Plan(plan));
                ToolOutput::ok(format!("plan updated: {progress}"))
            }
            Err(e) => ToolOutput::error(format!(
                "{e}; the plan stays as it was ({})",
                self.plan()
                    .map(|p| p.progress())
                    .unwrap_or_else(|| "no plan yet".into())
            )),
        }
    }
}

impl SessionGoal<'_> {
    /// Whether a goal is active (the frontend continues after each turn).
    pub fn active(&self) -> bool {
        self.goal
            .as_ref()
            .is_some_and(|g| g.status == GoalStatus::Active)
    }

    /// Set a new goal (`/goal TEXT`, `run --goal`), active with the budget
    /// `max_turns` (default `goals.max_turns`). It replaces any earlier
    /// goal. A task's child has no goal.
    pub fn set(&mut self, text: &str, max_turns: Option<u32>) -> Result<GoalRecord, AgentError> {
        if self.in_task {
            return Err(AgentError::Usage(UsageError::GoalInTask));
        }
        if text.trim().is_empty() {
            return Err(AgentError::Usage(UsageError::GoalNeedsText));
        }
        let max = max_turns.unwrap_or(self.max_turns);
        self.write(GoalRecord::new(text, max))
    }

    /// Pause, resume or clear the goal.
    pub fn change(&mut self, change: GoalChange) -> Result<GoalRecord, AgentError> {
        let Some(goal) = self.goal.clone() else {
            return Err(AgentError::Usage(UsageError::NoGoal));
        };
        let next = match change {
            GoalChange::Clear => goal.with_status(GoalStatus::Cleared),
            GoalChange::Pause if goal.status == GoalStatus::Active => {
                let mut g = goal.with_status(GoalStatus::Paused);
                g.reason = Some("paused by the user".into());
                g
            }
            GoalChange::Pause => {
                return Err(AgentError::Usage(UsageError::GoalNotActive {
                    status: goal.status.as_str(),
                }));
            }
            GoalChange::Resume if goal.status.resumable() => {
                let mut g = goal.with_status(GoalStatus::Active);
                if goal.status == GoalStatus::BudgetLimited {
                    g.turns_used = 0;
                }
                g
            }
            GoalChange::Resume => {
                return Err(AgentError::Usage(UsageError::GoalNotResumable {
                    status: goal.status.as_str(),
                }));
            }
        };
        self.write(next)
    }

    /// Set a paused or blocked goal active again, as `run -c` does; `None`
    /// when there is no such goal.
    pub fn resume_paused(&mut self) -> Result<Option<GoalRecord>, AgentError> {
        match self.goal.as_ref().map(|g| g.status) {
            Some(GoalStatus::Paused | GoalStatus::Blocked) => {
                self.change(GoalChange::Resume).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Pause an active goal because its loop stopped (Ctrl-C, a failed
    /// turn): `why` is kept as the reason. Nothing when none is active.
    pub fn pause(&mut self, why: &str) -> Result<(), AgentError> {
        if let Some(goal) = self.goal.clone().filter(|g| g.status == GoalStatus::Active) {
            let mut g = goal.with_status(GoalStatus::Paused);
            g.reason = Some(why.to_owned());
            self.write(g)?;
        }
        Ok(())
    }

    /// After a turn: the message that continues an active goal, counted
    /// against its budget (its record is appended first), or `None` when
    /// no goal is active — or the budget is used up, which sets the goal
    /// `budget_limited`.
    pub fn continuation(&mut self) -> Result<Option<UserInput>, AgentError> {
        let Some(goal) = self.goal.clone().filter(|g| g.status == GoalStatus::Active) else {
            return Ok(None);
        };
        if goal.turns_used >= goal.max_turns {
            let mut g = goal.with_status(GoalStatus::BudgetLimited);
            g.reason = Some(format!(
                "the budget of {} continuation turns is used up",
                goal.max_turns
            ));
            self.write(g)?;
            return Ok(None);
        }
        let mut next = goal.with_status(GoalStatus::Active);
        next.turns_used += 1;
        let saved = self.writer.append_goal(next)?;
        self.events.send(AgentEvent::GoalContinue {
            turns_used: saved.turns_used,
            max_turns: saved.max_turns,
        });
        let text = continuation_message(&saved);
        *self.goal = Some(saved);
        Ok(Some(UserInput::text(&text)))
    }

    /// Append a goal record, take it and tell the frontend.
    fn write(&mut self, record: GoalRecord) -> Result<GoalRecord, AgentError> {
        let saved = self.writer.append_goal(record)?;
        self.events.send(AgentEvent::Goal(saved.clone()));
        *self.goal = (saved.status != GoalStatus::Cleared).then(|| saved.clone());
        self.sync_tool();
        Ok(saved)
    }

    /// Offer `goal_update` exactly while a goal is active in the user's own
    /// session.
    pub(super) fn sync_tool(&mut self) {
        let name = ToolName::GoalUpdate.as_str();
        let want = !self.in_task && self.active();
        let has = self.defs.iter().any(|d| d.name == name);
        if want && !has {
            self.defs.push(tools::goal_update_definition());
        } else if !want && has {
            self.defs.retain(|d| d.name != name);
        }
    }

    /// Run a `goal_update` call: `achieved` ends the goal, `blocked`
    /// stops it with the reason; with no active goal, an error result.
    pub(super) fn run_update_tool(&mut self, call: &ToolCall) -> Result<ToolOutput, AgentError> {
        let Some(goal) = self.goal.clone().filter(|g| g.status == GoalStatus::Active) else {
            return Ok(ToolOutput::error(
                "error: no goal is active in this session, so there is nothing to update; only the user sets a goal (/goal TEXT)",
            ));
        };
        let update = match tools::parse_goal_update(&call.arguments) {
            Ok(u) => u,
            Err(e) => return Ok(ToolOutput::error(e)),
        };
        let text = match update {
            GoalUpdate::Achieved { evidence } => {
                let mut g = goal.with_status(GoalStatus::Achieved);
                g.evidence = Some(evidence);
                self.write(g)?;
                "goal marked achieved; eonyx sends no more continuations. Finish with a short report for the user."
            }
            GoalUpdate::Blocked { reason } => {
                let mut g = goal.with_status(GoalStatus::Blocked);
                g.reason = Some(reason);
                self.write(g)?;
                "goal marked blocked; eonyx stops and shows the user your reason. Finish with what the user must do."
            }
        };
        Ok(ToolOutput::ok(text))
    }
}

impl Agent {
    /// What every compaction pins (docs/compaction.md#what-is-pinned): the
    /// goal and the plan as they stand now.
    pub(super) fn pin(&self, record: &mut CompactionRecord) {
        record.goal = self.goal.as_ref().map(GoalRecord::pinned);
        record.plan = self.plan();
        // And the background jobs running now (docs/tools.md#jobs).
        record.jobs = self
            .tools
            .ctx
            .jobs
            .as_ref()
            .map(|j| j.pinned())
            .unwrap_or_default();
    }

    /// Whether a compaction now pins something (the summarizer is told).
    pub(super) fn pinned(&self) -> eonyx_compact::Pinned {
        let jobs = self
            .tools
            .ctx
            .jobs
            .as_ref()
            .is_some_and(|j| !j.pinned().is_empty());
        if self.goal.is_some() || self.plan().is_some() || jobs {
            eonyx_compact::Pinned::GoalOrPlan
        } else {
            eonyx_compact::Pinned::Nothing
        }
    }
}
