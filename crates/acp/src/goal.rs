//! Goals, plans and the model in an ACP session (docs/acp.md#goals-plans-and-the-model):
//! `/goal`, `/plan` and `/model` as in the REPL, and the goal's
//! continuation after a prompt's turn. Each continuation is shown as the
//! user message eonyx wrote (a `user_message_chunk`), and its turn streams
//! like any other; `session/cancel` pauses the goal, as Ctrl-C does.

use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
use eonyx_agent::{Agent, AgentError, AgentEvent, GoalChange, TurnOutcome, UserInput};
use eonyx_core::provider::CancellationToken;

use crate::updates::{Updates, acp_plan};

/// One user turn. A turn cancelled before its user message was saved
/// saves it ([`Agent::keep_input`]): the client shows it, so the session
/// keeps it.
pub async fn turn(
    agent: &mut Agent,
    input: &UserInput,
    updates: &mut Updates,
    cancel: &CancellationToken,
) -> Result<TurnOutcome, AgentError> {
    let saved = agent.message_count();
    let result = if cancel.is_cancelled() {
        Err(AgentError::Interrupted)
    } else {
        let mut sink = |ev: AgentEvent| updates.event(ev);
        agent.turn_input(input, &mut sink, cancel).await
    };
    match result {
        Err(e) if e.is_interrupted() && agent.message_count() == saved => {
            agent.keep_input(input)?;
            Err(e)
        }
        other => other,
    }
}

/// After a turn that completed (`last`): while the goal is active, the
/// continuations eonyx writes itself, each a turn, until the goal is
/// achieved, blocked or out of budget. A failed or cancelled turn pauses
/// the goal. The last turn's outcome is the prompt's.
pub async fn continue_goal(
    agent: &mut Agent,
    mut last: TurnOutcome,
    updates: &mut Updates,
    cancel: &CancellationToken,
) -> Result<TurnOutcome, AgentError> {
    loop {
        if cancel.is_cancelled() && agent.goal_active() {
            pause(agent, &AgentError::Interrupted, updates);
            return Err(AgentError::Interrupted);
        }
        let next = {
            let mut sink = |ev: AgentEvent| updates.event(ev);
            agent.goal_continuation(&mut sink)?
        };
        let Some(input) = next else {
            return Ok(last);
        };
        updates.send(SessionUpdate::UserMessageChunk(ContentChunk::new(
            ContentBlock::from(input.text.clone()),
        )));
        match turn(agent, &input, updates, cancel).await {
            Ok(outcome) => last = outcome,
            Err(e) => {
                pause(agent, &e, updates);
                return Err(e);
            }
        }
    }
}

/// Pause an active goal after a turn that did not complete.
fn pause(agent: &mut Agent, e: &AgentError, updates: &mut Updates) {
    let why = if e.is_interrupted() {
        "cancelled by the client (session/cancel)".to_owned()
    } else {
        format!("a turn failed: {e}")
    };
    let mut sink = |ev: AgentEvent| updates.event(ev);
    if let Err(err) = agent.pause_goal(&why, &mut sink) {
        crate::diag(&format!("could not pause the goal: {err}"));
    }
}

/// `/goal [TEXT | pause | resume | clear]`: a new goal runs its first turn
/// (its text) and continues; `resume` continues. `Ok(None)`: no turn ran.
pub async fn goal_command(
    agent: &mut Agent,
    arg: &str,
    updates: &mut Updates,
    cancel: &CancellationToken,
) -> Result<Option<TurnOutcome>, AgentError> {
    let change = match arg {
        "" => {
            updates.text(match agent.goal() {
                Some(g) => format!("goal: {}\nstatus: {}", g.text, g.status_line()),
                None => "no goal; set one with /goal TEXT (eonyx continues until it is achieved)"
                    .to_owned(),
            });
            return Ok(None);
        }
        "pause" => Some(GoalChange::Pause),
        "resume" => Some(GoalChange::Resume),
        "clear" => Some(GoalChange::Clear),
        _ => None,
    };
    let goal = {
        let mut sink = |ev: AgentEvent| updates.event(ev);
        match change {
            Some(c) => agent.change_goal(c, &mut sink)?,
            None => agent.set_goal(arg, None, &mut sink)?,
        }
    };
    let first = match change {
        // A new goal: its text is the first message.
        None => {
            let input = agent.prepare_input(&goal.text).await?;
            match turn(agent, &input, updates, cancel).await {
                Ok(o) => o,
                Err(e) => {
                    pause(agent, &e, updates);
                    return Err(e);
                }
            }
        }
        Some(GoalChange::Resume) => TurnOutcome::default(),
        Some(_) => {
            updates.text(format!("goal {}: {}", goal.status.as_str(), goal.text));
            return Ok(None);
        }
    };
    continue_goal(agent, first, updates, cancel).await.map(Some)
}

/// `/plan`: the current plan, as a `plan` update and a line of progress.
pub fn plan_command(agent: &Agent, updates: &mut Updates) {
    match agent.plan() {
        Some(p) => {
            updates.send(SessionUpdate::Plan(acp_plan(&p)));
            updates.text(format!("plan ({})", p.progress()));
        }
        None => updates.text("no plan yet; the model makes one with the plan tool"),
    }
}

/// `/model [KEY] [EFFORT]`: the model and its effort, or a switch for the
/// rest of the session (recorded in the session file).
pub async fn model_command(
    agent: &mut Agent,
    arg: &str,
    updates: &mut Updates,
) -> Result<(), AgentError> {
    let switch = agent.parse_model_args(arg).map_err(AgentError::Usage)?;
    if switch.key.is_none() && switch.effort.is_none() {
        let info = agent.model_info();
        updates.text(format!("{}\nmodels: {}", info, info.keys.join(", ")));
        return Ok(());
    }
    let info = agent.switch_model(&switch).await?;
    for n in agent.take_startup_notices() {
        crate::diag(&n);
    }
    updates.text(format!("switched: {info}"));
    Ok(())
}
