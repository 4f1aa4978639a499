//! A session's start and end, and `eonyx run`'s one call: the goal it
//! sets or resumes, its prompt's turn and whatever the goal then needs,
//! then the session's end, on every path alike.

use eonyx_tools::jobs::JobInfo;

use super::frontend::{Frontend, GoalEnd, Shown, show_sent, showing};
use super::goal::user_turn;
use crate::hooks::StartSource;
use crate::{Agent, AgentError, UserInput};

/// What `eonyx run` asks of a goal besides its prompt.
#[derive(Debug, Clone, Copy)]
pub enum GoalStart<'a> {
    /// `--goal TEXT [--max-turns N]`: set it; the prompt is its first
    /// message.
    Set {
        text: &'a str,
        max_turns: Option<u32>,
    },
    /// `-c` or `-s ID`: a paused or blocked goal goes on (an active one
    /// does anyway).
    Resume,
    /// No goal asked for.
    None,
}

/// How `eonyx run` ended: whether a goal was active for its prompt (then
/// the goal's end is the verdict), and how the turns ended.
#[derive(Debug)]
pub struct RunEnd {
    pub goal: bool,
    pub end: GoalEnd,
}

/// `eonyx run`: the goal set or resumed as `start` asks, `input`'s turn
/// and whatever the goal then needs ([`user_turn`]), then the session's
/// end ([`end_session`], reason `other`). `Err` only when the goal could
/// not be set or resumed (nothing ran).
pub async fn run_prompt(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    input: &UserInput,
    start: GoalStart<'_>,
) -> Result<RunEnd, AgentError> {
    let started = match start {
        GoalStart::Set { text, max_turns } => agent.goals().set(text, max_turns).map(drop),
        GoalStart::Resume => agent.goals().resume_paused().map(drop),
        GoalStart::None => Ok(()),
    };
    show_sent(fe, agent);
    started?;
    let goal = agent.goals().active();
    let end = user_turn(agent, fe, input).await;
    end_session(agent, fe, "other").await;
    Ok(RunEnd { goal, end })
}

/// The session ends (the REPL's `/exit` or Ctrl-D: `prompt_input_exit`;
/// the end of a batch or `eonyx run`: `other`): [`close_session`], its
/// events shown as they come, the jobs still running then shown.
pub async fn end_session(agent: &mut Agent, fe: &mut dyn Frontend, reason: &str) {
    let events = agent.events();
    let stopped = showing(fe, &events, close_session(agent, reason)).await;
    if !stopped.is_empty() {
        fe.show(agent, Shown::JobsStopped(stopped));
    }
}

/// The end of a session, for a frontend that shows it its own way (an ACP
/// session its client let go): its `SessionEnd` hooks with `reason`, then
/// its background jobs stopped (docs/tools.md#jobs), which are returned.
/// The events wait in the agent's handle for the caller to deliver.
pub async fn close_session(agent: &mut Agent, reason: &str) -> Vec<JobInfo> {
    agent.hooks().session_end(reason).await;
    agent.jobs().stop_all().await
}

/// A session just opened (a new one: `startup`; a resumed one: `resume`):
/// its `SessionStart` hooks, whose context waits for the first user
/// message (docs/hooks.md#events). The events wait in the agent's handle
/// for the caller to deliver.
pub async fn start_session(agent: &mut Agent) {
    let source = if agent.resumed() {
        StartSource::Resume
    } else {
        StartSource::Startup
    };
    agent.hooks().session_start(source).await;
}

/// `SessionEnd` hooks with `reason` (`clear` before `/new`), their runs
/// shown.
pub(super) async fn session_end_hooks(agent: &mut Agent, fe: &mut dyn Frontend, reason: &str) {
    let events = agent.events();
    showing(fe, &events, agent.hooks().session_end(reason)).await;
}
