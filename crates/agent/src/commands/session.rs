//! A session's start and end, and `eonyx run`'s one call: the goal it
//! sets or resumes, its prompt's turn and whatever the goal then needs,
//! then the session's end, on every path alike.

use eonyx_tools::jobs::JobInfo;

use super::frontend::{Frontend, GoalEnd, Shown, show_sent, showing};
use super::goal::user_turn;
use crate::hooks::StartSource;
use crate::{Agent, AgentError, AgentEvent, UserInput};

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
/// the end of a batch or `eonyx run`: `other`): its `SessionEnd` hooks,
/// then its background jobs stopped (docs/tools.md#jobs), the ones still
/// running shown.
pub async fn end_session(agent: &mut Agent, fe: &mut dyn Frontend, reason: &str) {
    let stopped = ending(agent, reason, |ev| fe.event(ev)).await;
    if !stopped.is_empty() {
        fe.show(agent, Shown::JobsStopped(stopped));
    }
}

/// The session ends where no frontend shows it (an ACP client closed it,
/// or went): the same end as [`end_session`], its events given to `show`,
/// and the jobs it stopped returned for the caller to report.
pub async fn end_session_unseen(
    agent: &mut Agent,
    reason: &str,
    show: impl FnMut(AgentEvent),
) -> Vec<JobInfo> {
    ending(agent, reason, show).await
}

/// A session just opened (a new one: `startup`; a resumed one: `resume`):
/// its `SessionStart` hooks, their events given to `show`; their context
/// waits for the first user message (docs/hooks.md#events).
pub async fn start_session(agent: &mut Agent, show: impl FnMut(AgentEvent)) {
    let source = if agent.resumed() {
        StartSource::Resume
    } else {
        StartSource::Startup
    };
    let events = agent.events();
    events
        .deliver(agent.hooks().session_start(source), show)
        .await;
}

/// `SessionEnd` hooks with `reason`, then the background jobs stopped;
/// every event to `show`, in order.
async fn ending(agent: &mut Agent, reason: &str, mut show: impl FnMut(AgentEvent)) -> Vec<JobInfo> {
    let events = agent.events();
    events
        .deliver(agent.hooks().session_end(reason), &mut show)
        .await;
    events.deliver(agent.jobs().stop_all(), &mut show).await
}

/// `SessionEnd` hooks with `reason` (`clear` before `/new`), their runs
/// shown.
pub(super) async fn session_end_hooks(agent: &mut Agent, fe: &mut dyn Frontend, reason: &str) {
    let events = agent.events();
    showing(fe, &events, agent.hooks().session_end(reason)).await;
}
