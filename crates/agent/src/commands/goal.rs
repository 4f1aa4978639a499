//! The goal loop (docs/goals.md), once for every frontend: after
//! a turn, while the goal is active, write the continuation, run its turn,
//! count the budget, and stop when the goal is achieved, blocked, out of
//! budget, or a turn fails or is interrupted (which pauses it).

use super::frontend::{Frontend, GoalEnd, TurnKind, show_sent, showing};
use crate::{Agent, AgentError, TurnOutcome, UserInput};

/// One turn through `fe`: shown as it starts, interruptible. Its end is
/// not reported here ([`after_turn`] or the goal loop does).
pub async fn turn(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    input: &UserInput,
    kind: TurnKind,
) -> Result<TurnOutcome, AgentError> {
    fe.turn_started(input, kind);
    let cancel = fe.interruptible();
    let saved = agent.message_count();
    let result = if cancel.is_cancelled() {
        Err(AgentError::Interrupted)
    } else {
        let events = agent.events();
        showing(fe, &events, agent.turn_input(input, &cancel)).await
    };
    fe.settled();
    match result {
        Err(e)
            if e.is_interrupted() && fe.keeps_unsent_input() && agent.message_count() == saved =>
        {
            agent.keep_input(input)?;
            Err(e)
        }
        other => other,
    }
}

/// After a turn that completed (`last`): while the goal is active, the
/// continuations eonyx writes itself, each a visible, interruptible turn,
/// until the goal is achieved, blocked or out of budget. A failed or
/// interrupted turn pauses the goal.
pub(super) async fn continue_goal(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    mut last: Option<TurnOutcome>,
) -> GoalEnd {
    loop {
        if fe.cancelled() && agent.goals().active() {
            pause_after(agent, fe, &AgentError::Interrupted);
            return GoalEnd::Failed(AgentError::Interrupted);
        }
        let next = agent.goals().continuation();
        show_sent(fe, agent);
        let input = match next {
            Ok(Some(input)) => input,
            Ok(None) => return stopped(agent, last),
            Err(e) => {
                fe.failed(&e);
                return GoalEnd::Failed(e);
            }
        };
        let result = turn(agent, fe, &input, TurnKind::Continuation).await;
        fe.turn_ended(&result);
        match result.and_then(unless_blocked(fe)) {
            Ok(outcome) => last = Some(outcome),
            Err(e) => {
                pause_after(agent, fe, &e);
                return GoalEnd::Failed(e);
            }
        }
        if fe.broken() {
            return stopped(agent, last);
        }
    }
}

/// A user's turn and whatever the goal then needs: `input`'s turn (the
/// goal's first message, a REPL or batch line, an ACP prompt), then
/// [`after_turn`]. The one call a frontend makes for what the user sent.
pub async fn user_turn(agent: &mut Agent, fe: &mut dyn Frontend, input: &UserInput) -> GoalEnd {
    let result = turn(agent, fe, input, TurnKind::User).await;
    after_turn(agent, fe, result).await
}

/// After the user's turn ([`turn`] with [`TurnKind::User`]) ended with
/// `result`: its end shown, then an active goal continues, or pauses when
/// the turn failed or was interrupted. A reply the provider blocked fails
/// the turn unless the frontend reports it as the turn's outcome
/// ([`Frontend::blocked_reply_is_outcome`]); a line whose `@path` could not
/// be attached pauses nothing where the frontend gives the line back to
/// edit ([`Frontend::edits_unsent_line`]): nothing was sent.
pub async fn after_turn(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    result: Result<TurnOutcome, AgentError>,
) -> GoalEnd {
    let blocked_fails = !fe.blocked_reply_is_outcome();
    goal_after(agent, fe, result, blocked_fails).await
}

/// Run `first` (the goal's first message, `/goal TEXT`) and continue the
/// goal: a blocked reply fails it on every frontend.
pub(super) async fn run_goal(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    first: &UserInput,
) -> GoalEnd {
    let result = turn(agent, fe, first, TurnKind::User).await;
    goal_after(agent, fe, result, true).await
}

async fn goal_after(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    result: Result<TurnOutcome, AgentError>,
    blocked_fails: bool,
) -> GoalEnd {
    fe.turn_ended(&result);
    let result = if blocked_fails {
        result.and_then(unless_blocked(fe))
    } else {
        result
    };
    match result {
        Ok(outcome) => continue_goal(agent, fe, Some(outcome)).await,
        Err(e) => {
            if !(matches!(e, AgentError::Attach(_)) && fe.edits_unsent_line()) {
                pause_after(agent, fe, &e);
            }
            GoalEnd::Failed(e)
        }
    }
}

/// A turn whose reply the provider blocked fails the goal's turn (the
/// goal pauses, docs/providers.md#blocked-replies): reported to `fe` as
/// the failure it is.
fn unless_blocked(
    fe: &mut dyn Frontend,
) -> impl FnOnce(TurnOutcome) -> Result<TurnOutcome, AgentError> + '_ {
    move |outcome| match outcome.reply_blocked() {
        Some(e) => {
            fe.failed(&e);
            Err(e)
        }
        None => Ok(outcome),
    }
}

/// Pause an active goal after a turn that did not complete (nothing when
/// none is active).
fn pause_after(agent: &mut Agent, fe: &mut dyn Frontend, e: &AgentError) {
    let why = if e.is_interrupted() {
        fe.interrupted_reason().to_owned()
    } else {
        format!("a turn failed: {e}")
    };
    let result = agent.goals().pause(&why);
    show_sent(fe, agent);
    if let Err(err) = result {
        fe.failed(&err);
    }
}

fn stopped(agent: &Agent, last: Option<TurnOutcome>) -> GoalEnd {
    GoalEnd::Stopped {
        status: agent.goal().map(|g| g.status),
        last,
    }
}
