//! Running the `task` calls of one step: children prepared one by one,
//! run concurrently (at most `tasks.max_parallel` at once), their events
//! sent into the parent's queue labelled with their call (each child's
//! handle, `Events::relabelled`), and one result per call in call order.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use eonyx_core::provider::CancellationToken;
use eonyx_core::tool::{TaskEnd, TaskHeader};
use eonyx_core::{SessionId, ToolCall};
use futures_util::StreamExt as _;

use super::super::{Agent, TurnOutcome};
use super::child::Child;
use crate::error::AgentError;
use crate::events::{AgentEvent, Events};
use crate::tools::{self, ToolOutput};

/// How one task call ended: its result.
type Finished = ToolOutput;

impl Agent {
    /// Run `calls` (all `task` calls) and return one output per call, in
    /// the same order.
    pub(crate) async fn run_tasks(
        &mut self,
        calls: &[&ToolCall],
        cancel: &CancellationToken,
    ) -> Vec<ToolOutput> {
        let mut next_number = None;
        let mut prepared: Vec<Result<Child, ToolOutput>> = Vec::with_capacity(calls.len());
        for call in calls {
            let child = match tools::task::parse(&call.arguments) {
                Ok(task) => self
                    .prepare_child(call, task, &mut next_number)
                    .await
                    .map_err(|e| ToolOutput::error(e.to_string())),
                Err(e) => Err(ToolOutput::error(e.to_string())),
            };
            if let Ok(c) = &child {
                self.events.send(AgentEvent::TaskStarted {
                    call_id: c.call_id.clone(),
                    session: c.agent.session_id().clone(),
                    profile: c.profile.clone(),
                    description: c.description.clone(),
                });
            }
            prepared.push(child);
        }

        // Each child's events go into this agent's queue, labelled with
        // its call, as they come; its end is this agent's own event.
        let parallel = self.config.tasks.max_parallel.max(1) as usize;
        let events = self.events.clone();
        futures_util::stream::iter(prepared.into_iter().map(|p| {
            let cancel = cancel.clone();
            let events = events.clone();
            async move {
                match p {
                    Err(out) => out,
                    Ok(child) => run_child(child, events, cancel).await,
                }
            }
        }))
        .buffered(parallel)
        .collect::<Vec<_>>()
        .await
    }
}

/// A child's run, boxed: `turn` runs tasks which run turns, so the future
/// needs a fixed size (and a named type, for the compiler to see it is
/// `Send`).
type ChildRun = Pin<Box<dyn Future<Output = Finished> + Send>>;

/// Run one child's turn to its end (its events go through its own
/// handle, labelled); its end is reported through the parent's `events`.
fn run_child(child: Child, events: Events, cancel: CancellationToken) -> ChildRun {
    Box::pin(child_turn(child, events, cancel))
}

async fn child_turn(mut child: Child, events: Events, cancel: CancellationToken) -> Finished {
    let session = child.agent.session_id().clone();
    let call_id = child.call_id.clone();
    for n in child.agent.take_startup_notices() {
        child.agent.events.send(AgentEvent::Warning(n));
    }
    child.agent.hook.subagent_start().await;
    let result = child.agent.turn(&child.prompt, &cancel).await;
    let steps = match &result {
        Ok(outcome) => outcome.steps,
        Err(_) => child.steps.load(Ordering::Acquire),
    };
    let out = task_output(&session, child.profile, steps, result);
    events.send(AgentEvent::TaskCompleted {
        call_id,
        session,
        steps,
        is_error: out.is_error,
    });
    out
}

/// The tool result of a finished child: its header line, then the final
/// answer (or why there is none and how to continue).
fn task_output(
    session: &SessionId,
    profile: String,
    steps: u32,
    result: Result<TurnOutcome, AgentError>,
) -> ToolOutput {
    let header = |end| TaskHeader {
        session: session.to_string(),
        profile: profile.clone(),
        steps,
        end,
    };
    let again = format!("continue it with the task tool and session: {session}");
    match result {
        Ok(outcome) => {
            let mut text = format!("{}\n\n", header(TaskEnd::Answered));
            let answer = outcome.text.trim();
            if answer.is_empty() {
                text.push_str("(the sub-agent ended without a final answer)");
            } else {
                text.push_str(answer);
            }
            if outcome.max_steps_reached {
                text.push_str(&format!(
                    "\n\n[eonyx: the sub-agent stopped at its step limit (max_steps) before finishing; {again}]"
                ));
            }
            ToolOutput::ok(text)
        }
        Err(e) if e.is_interrupted() => ToolOutput::error(format!(
            "{}\n\n{}: the user cancelled this task; its session keeps what it did so far. To finish it, {again}.",
            header(TaskEnd::Interrupted),
            tools::INTERRUPTED
        )),
        Err(e) => ToolOutput::error(format!(
            "{}\n\nfailed: {e}\nIts session keeps what it did so far; {again}.",
            header(TaskEnd::Failed)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_name_the_child_and_say_how_to_continue() {
        let id = SessionId::parse("20260705T091500-1a2b3c4d").unwrap();
        let done = TurnOutcome {
            text: "  It lives in src/retry.rs.  ".into(),
            steps: 3,
            ..TurnOutcome::default()
        };
        let out = task_output(&id, "explore".into(), 3, Ok(done));
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "task session 20260705T091500-1a2b3c4d · profile explore · 3 steps\n\nIt lives in src/retry.rs."
        );
        let out = task_output(&id, "general".into(), 1, Err(AgentError::Interrupted));
        assert!(out.is_error);
        let h = TaskHeader::from_result(&out.text).unwrap();
        assert_eq!(h.end, TaskEnd::Interrupted);
        assert!(
            out.text.contains("session: 20260705T091500-1a2b3c4d"),
            "{}",
            out.text
        );
        let out = task_output(
            &id,
            "general".into(),
            2,
            Err(AgentError::Provider(eonyx_core::ProviderError::Config {
                message: "the disk is full".into(),
            })),
        );
        assert_eq!(
            TaskHeader::from_result(&out.text).unwrap().end,
            TaskEnd::Failed
        );
        assert!(
            out.text.contains("failed: the disk is full"),
            "{}",
            out.text
        );
    }
}
