//! The model's plan (docs/tools.md#plan): the steps of the work at hand,
//! each `pending`, `in_progress` or `completed`, replaced whole by every
//! `plan` call. The current plan is not stored apart: it is the last
//! successful `plan` call on the session's timeline, or the plan a
//! compaction record pinned when that call lies before its boundary
//! (`record::current_plan`), so a resume, a fork or a rewind gives the plan of
//! that point.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Completed => "completed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::InProgress, Self::Completed]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

/// A whole plan, as the last `plan` call gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkPlan {
    pub steps: Vec<PlanStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Why a `plan` call was refused; the text tells the model what to send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plan not changed: {0}")]
pub struct PlanError(String);

/// At most this many steps in one plan.
pub const MAX_STEPS: usize = 50;

impl WorkPlan {
    /// The plan a `plan` call's arguments give, or what is wrong with
    /// them: no steps, an empty step, an unknown status, more than one
    /// step in progress, unknown fields.
    pub fn from_args(args: &Value) -> Result<Self, PlanError> {
        let bad = |m: String| Err(PlanError(m));
        let Some(obj) = args.as_object() else {
            return bad(
                "the arguments must be an object {\"steps\": [...], \"note\": \"...\"}".into(),
            );
        };
        if let Some(k) = obj.keys().find(|k| *k != "steps" && *k != "note") {
            return bad(format!(
                "unknown field `{k}`; send {{\"steps\": [{{\"step\": TEXT, \"status\": \"pending\" | \"in_progress\" | \"completed\"}}], \"note\": TEXT?}}"
            ));
        }
        let Some(list) = obj.get("steps").and_then(Value::as_array) else {
            return bad("`steps` is missing: send the whole list, each {\"step\": TEXT, \"status\": \"pending\" | \"in_progress\" | \"completed\"}".into());
        };
        if list.is_empty() {
            return bad("`steps` is empty: a plan needs at least one step".into());
        }
        if list.len() > MAX_STEPS {
            return bad(format!(
                "{} steps; at most {MAX_STEPS} (group small steps together)",
                list.len()
            ));
        }
        let mut steps = Vec::with_capacity(list.len());
        for (i, s) in list.iter().enumerate() {
            let n = i + 1;
            let text = s.get("step").and_then(Value::as_str).map(str::trim);
            let Some(text) = text.filter(|t| !t.is_empty()) else {
                return bad(format!("step {n} has no `step` text"));
            };
            let status = match s.get("status").and_then(Value::as_str) {
                Some(st) => match StepStatus::parse(st) {
                    Some(v) => v,
                    None => {
                        return bad(format!(
                            "step {n} has the unknown status \"{st}\"; use \"pending\", \"in_progress\" or \"completed\""
                        ));
                    }
                },
                None => {
                    return bad(format!(
                        "step {n} has no `status`; use \"pending\", \"in_progress\" or \"completed\""
                    ));
                }
            };
            steps.push(PlanStep {
                step: text.to_owned(),
                status,
            });
        }
        let in_progress: Vec<usize> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.status == StepStatus::InProgress)
            .map(|(i, _)| i + 1)
            .collect();
        if in_progress.len() > 1 {
            let list: Vec<String> = in_progress.iter().map(usize::to_string).collect();
            return bad(format!(
                "steps {} are all in_progress; at most one step may be in progress at a time",
                list.join(", ")
            ));
        }
        let note = match obj.get("note") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
            Some(_) => return bad("`note` must be a string".into()),
        };
        Ok(WorkPlan { steps, note })
    }

    /// Steps completed.
    pub fn completed(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.status == StepStatus::Completed)
            .count()
    }

    /// The step in progress, if any.
    pub fn in_progress(&self) -> Option<&PlanStep> {
        self.steps
            .iter()
            .find(|s| s.status == StepStatus::InProgress)
    }

    /// `2/5 completed` plus the step in progress.
    pub fn progress(&self) -> String {
        let mut s = format!("{}/{} completed", self.completed(), self.steps.len());
        if let Some(p) = self.in_progress() {
            s.push_str(&format!(", in progress: {}", p.step));
        }
        s
    }

    /// The plan exactly, one `- [status] step` line per step, then the
    /// note: what a compaction pins and `/plan` prints.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.steps {
            out.push_str(&format!("- [{}] {}\n", s.status.as_str(), s.step));
        }
        if let Some(n) = &self.note {
            out.push_str(&format!("Note: {n}\n"));
        }
        out.trim_end().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_plans_say_what_is_wrong() {
        let err = |v: Value| WorkPlan::from_args(&v).unwrap_err().to_string();
        assert!(err(json!({"steps": []})).contains("empty"));
        assert!(err(json!({})).contains("`steps` is missing"));
        assert!(
            err(json!({"steps": [{"step": "a", "status": "done"}]}))
                .contains("unknown status \"done\"")
        );
        assert!(
            err(json!({"steps": [
                {"step": "a", "status": "in_progress"},
                {"step": "b", "status": "in_progress"}
            ]}))
            .contains("steps 1, 2 are all in_progress")
        );
        assert!(err(json!({"steps": [{"step": " ", "status": "pending"}]})).contains("no `step`"));
        let ok = WorkPlan::from_args(&json!({"steps": [
            {"step": "a", "status": "completed"},
            {"step": "b", "status": "in_progress"},
            {"step": "c", "status": "pending"}
        ], "note": "n"}))
        .unwrap();
        assert_eq!(ok.progress(), "1/3 completed, in progress: b");
        assert_eq!(
            ok.render(),
            "- [completed] a\n- [in_progress] b\n- [pending] c\nNote: n"
        );
    }
}
