//! Goals (docs/session-format.md#goal-records): the session's objective,
//! kept in append-only `goal` records, the current one being the last on
//! the timeline; the message eonyx sends itself while a goal is active
//! ([`continuation_message`]); and what every compaction pins at the top
//! of the summary section ([`pinned_section`]).

use serde::{Deserialize, Serialize};

use crate::plan::WorkPlan;

/// Where a goal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// Worked on: a turn that ends without `goal_update` is followed by a
    /// continuation.
    Active,
    /// Stopped by the user (`/goal pause`, Ctrl-C) or a failed turn.
    Paused,
    /// The model called `goal_update` with `achieved`.
    Achieved,
    /// The model called `goal_update` with `blocked`; resumable.
    Blocked,
    /// The continuation budget ran out.
    BudgetLimited,
    /// `/goal clear`: no goal any more.
    Cleared,
}

impl GoalStatus {
    pub const ALL: [GoalStatus; 6] = [
        GoalStatus::Active,
        GoalStatus::Paused,
        GoalStatus::Achieved,
        GoalStatus::Blocked,
        GoalStatus::BudgetLimited,
        GoalStatus::Cleared,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::Achieved => "achieved",
            GoalStatus::Blocked => "blocked",
            GoalStatus::BudgetLimited => "budget_limited",
            GoalStatus::Cleared => "cleared",
        }
    }

    /// Whether `/goal resume` (and `run -c`) may set it active again.
    pub fn resumable(self) -> bool {
        matches!(
            self,
            GoalStatus::Paused | GoalStatus::Blocked | GoalStatus::BudgetLimited
        )
    }
}

/// One `goal` line of a session file: the goal as it stands from this
/// record on. Written at every status change and every continuation
/// (`turns_used` counts them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalRecord {
    /// Shares the sequence of messages and compaction records.
    pub seq: u64,
    pub ts: String,
    pub text: String,
    pub status: GoalStatus,
    /// The continuation budget.
    pub max_turns: u32,
    /// Continuations sent so far.
    pub turns_used: u32,
    /// With `achieved`: what the model gave as evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// With `blocked` (the model's reason) or `paused` (why it stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl GoalRecord {
    /// A new active goal (`seq`/`ts` for the writer to fill).
    pub fn new(text: &str, max_turns: u32) -> Self {
        GoalRecord {
            seq: 0,
            ts: String::new(),
            text: text.trim().to_owned(),
            status: GoalStatus::Active,
            max_turns,
            turns_used: 0,
            evidence: None,
            reason: None,
        }
    }

    /// The same goal with another status (evidence and reason dropped).
    pub fn with_status(&self, status: GoalStatus) -> Self {
        GoalRecord {
            seq: 0,
            ts: String::new(),
            status,
            evidence: None,
            reason: None,
            ..self.clone()
        }
    }

    /// Continuations left.
    pub fn turns_left(&self) -> u32 {
        self.max_turns.saturating_sub(self.turns_used)
    }

    /// `active, 3/20 turns`.
    pub fn status_line(&self) -> String {
        let mut s = format!(
            "{}, {}/{} continuation turns used",
            self.status.as_str(),
            self.turns_used,
            self.max_turns
        );
        if let Some(e) = &self.evidence {
            s.push_str(&format!("; evidence: {e}"));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!("; reason: {r}"));
        }
        s
    }

    /// The goal as a compaction pins it (no seq, no time).
    pub fn pinned(&self) -> PinnedGoal {
        PinnedGoal {
            text: self.text.clone(),
            status: self.status,
            max_turns: self.max_turns,
            turns_used: self.turns_used,
        }
    }
}

/// The goal a compaction record pins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedGoal {
    pub text: String,
    pub status: GoalStatus,
    pub max_turns: u32,
    pub turns_used: u32,
}

/// The user message eonyx sends itself after a turn that ended with the
/// goal still active: the goal verbatim and the budget left.
pub fn continuation_message(goal: &GoalRecord) -> String {
    format!(
        "[eonyx: goal continuation {used} of {max}] The goal is still active and not marked done:\n\n{text}\n\nKeep working toward it. When it is achieved, call goal_update with status \"achieved\" and the evidence; if you cannot go on without the user, call it with status \"blocked\" and the reason. {left} continuation turn(s) left after this one.",
        used = goal.turns_used,
        max = goal.max_turns,
        text = goal.text,
        left = goal.turns_left(),
    )
}

/// Heading of the pinned goal in the summary section.
pub const PINNED_GOAL_HEADING: &str = "## Goal (kept verbatim by eonyx)";
/// Heading of the pinned plan in the summary section.
pub const PINNED_PLAN_HEADING: &str = "## Plan (kept verbatim by eonyx)";

/// What a compaction puts at the top of the summary section, written by
/// eonyx whatever the summarizer returned: the goal (text and status) and
/// the plan (every step with its status). Empty when there is neither.
pub fn pinned_section(goal: Option<&PinnedGoal>, plan: Option<&WorkPlan>) -> String {
    let mut parts = Vec::new();
    if let Some(g) = goal {
        parts.push(format!(
            "{PINNED_GOAL_HEADING}\nStatus: {} ({}/{} continuation turns used)\n{}",
            g.status.as_str(),
            g.turns_used,
            g.max_turns,
            g.text
        ));
    }
    if let Some(p) = plan {
        parts.push(format!("{PINNED_PLAN_HEADING}\n{}", p.render()));
    }
    parts.join("\n\n")
}

/// The line the summarizer is told, when something is pinned.
pub const PINNED_NOTE: &str = "eonyx keeps the current goal and plan verbatim above your summary (they are not lost): do not repeat them; summarize the progress and context around them.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_goal_record_has_the_documented_shape() {
        let mut g = GoalRecord::new("  ship it ", 20);
        g.seq = 7;
        g.ts = "2026-07-05T09:15:00Z".into();
        let line = serde_json::to_string(&g).unwrap();
        assert_eq!(
            line,
            r#"{"seq":7,"ts":"2026-07-05T09:15:00Z","text":"ship it","status":"active","max_turns":20,"turns_used":0}"#
        );
        let mut b = g.with_status(GoalStatus::BudgetLimited);
        b.reason = Some("x".into());
        assert!(
            serde_json::to_string(&b)
                .unwrap()
                .contains(r#""status":"budget_limited""#)
        );
    }

    #[test]
    fn the_continuation_restates_the_goal_and_the_budget() {
        let mut g = GoalRecord::new("make the tests pass", 5);
        g.turns_used = 2;
        let m = continuation_message(&g);
        assert!(m.contains("continuation 2 of 5"));
        assert!(m.contains("\n\nmake the tests pass\n\n"));
        assert!(m.contains("3 continuation turn(s) left"));
    }
}
