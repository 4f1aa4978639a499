//! What the command layer asks of a frontend (it renders and asks), and
//! what a command hands back to it.

use std::future::Future;
use std::pin::Pin;

use eonyx_core::SessionId;
use eonyx_core::goal::{GoalRecord, GoalStatus};
use eonyx_core::memory::MemoryEntry;
use eonyx_core::permissions::PermissionRule;
use eonyx_core::provider::CancellationToken;
use eonyx_store::mining::{CostTotals, Proposal};
use eonyx_store::{Forked, SessionSummary};
use eonyx_tools::jobs::JobInfo;

use super::table::Surface;
use crate::events::Events;
use crate::mining::review::Reviewed;
use crate::rewind::RewindReport;
use crate::{Agent, AgentError, AgentEvent, AgentStatus, ModelInfo, TurnOutcome, UserInput};

/// A boxed future a frontend answers with.
pub type Answer<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which turn starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// What the user sent (a line, a prompt, `/goal TEXT`'s text).
    User,
    /// A continuation eonyx wrote for an active goal.
    Continuation,
}

/// A frontend: the REPL, a batch run or an ACP session. It shows events
/// and what commands report, and owns interruption; it decides nothing.
pub trait Frontend: Send {
    fn surface(&self) -> Surface;

    /// An agent event to show.
    fn event(&mut self, ev: AgentEvent);

    /// What a command reports; `agent` is there to read, for rendering.
    fn show(&mut self, agent: &Agent, shown: Shown);

    /// A token for work the user can interrupt (a turn, a compaction),
    /// until [`Frontend::settled`].
    fn interruptible(&mut self) -> CancellationToken;

    /// The interruptible work ended.
    fn settled(&mut self) {}

    /// Whether the frontend has already cancelled what comes next (ACP's
    /// `session/cancel` of the prompt).
    fn cancelled(&self) -> bool {
        false
    }

    /// A turn is about to send `input`.
    fn turn_started(&mut self, _input: &UserInput, _kind: TurnKind) {}

    /// How a turn of the goal loop ended (a frontend that reports turns
    /// itself, as ACP does in its response, shows nothing).
    fn turn_ended(&mut self, _result: &Result<TurnOutcome, AgentError>) {}

    /// The machinery failed under a command (the error is also returned).
    fn failed(&mut self, e: &AgentError);

    /// The output itself failed (stdout closed): loops stop.
    fn broken(&self) -> bool {
        false
    }

    /// A turn interrupted before its user message was saved saves it
    /// anyway (ACP: the client already shows it).
    fn keeps_unsent_input(&self) -> bool {
        false
    }

    /// A reply the provider blocked on the user's turn is the turn's
    /// outcome, not its failure (ACP reports it as the stop reason
    /// `refusal`); elsewhere it fails the turn and pauses a goal.
    fn blocked_reply_is_outcome(&self) -> bool {
        false
    }

    /// A line whose `@path` could not be attached comes back to edit (the
    /// REPL): nothing was sent, so an active goal does not pause.
    fn edits_unsent_line(&self) -> bool {
        false
    }

    /// Why a goal paused when its turn was interrupted.
    fn interrupted_reason(&self) -> &'static str;

    /// Whether [`Frontend::ask`] can ask someone (the REPL); where not,
    /// `/memory review` lists the proposals with the flags that answer
    /// them, and `/rewind` goes ahead without showing its plan first.
    fn can_ask(&self) -> bool {
        false
    }

    /// Ask the user `question` (one line, as `/memory review` asks about
    /// each proposal); `None`: no answer (Ctrl-C, Ctrl-D, nobody to ask).
    fn ask<'a>(&'a mut self, _question: &'a str) -> Answer<'a, Option<String>> {
        Box::pin(async { None })
    }
}

/// Await `work`, a call of the agent whose handle `events` is, showing its
/// events through `fe` as they come: all of them, in order, before `work`'s
/// result is returned; a question asked meanwhile comes after every event
/// sent before it.
pub async fn showing<T>(
    fe: &mut dyn Frontend,
    events: &Events,
    work: impl Future<Output = T>,
) -> T {
    events.deliver(work, |ev| fe.event(ev)).await
}

/// Show through `fe` the events `agent` sent in a call that does not wait.
pub fn show_sent(fe: &mut dyn Frontend, agent: &Agent) {
    agent.events().drain(|ev| fe.event(ev));
}

/// What a command reports, for the frontend to render.
#[derive(Debug)]
pub enum Shown {
    /// `/help`: [`super::table::offered`] for the frontend's surface.
    Help,
    /// `/sessions`: top-level sessions, newest first.
    Sessions(Vec<SessionSummary>),
    /// The session after `/new` or `/resume`, with the notices of opening
    /// it.
    Session {
        notices: Vec<String>,
    },
    Renamed(String),
    Rewound(RewindReport),
    Forked {
        original: SessionId,
        forked: Forked,
        notices: Vec<String>,
    },
    /// `/goal` alone: [`Agent::goal`].
    Goal,
    /// `/goal pause` or `/goal clear` changed it (its event was sent).
    GoalChanged(GoalRecord),
    /// `/plan`: [`Agent::plan`].
    Plan,
    Exported(Exported),
    /// A line of information (`/export` before the first message).
    Note(String),
    /// Something to correct (an answer of `/memory review` that does not
    /// read).
    Warning(String),
    /// `/context`: read from the agent.
    Context,
    Memory(Vec<MemoryEntry>),
    Remembered(MemoryEntry),
    /// `/memory review` where nobody is asked (or nothing waits): the
    /// proposals, [`crate::mining::review::header`] above them and
    /// [`crate::mining::review::HOW_TO_ANSWER`] below.
    Proposals {
        pending: Vec<Proposal>,
        costs: CostTotals,
    },
    /// What an answer or a flag of `/memory review` did
    /// ([`crate::mining::review::reviewed`]).
    Reviewed(Reviewed),
    /// What `memory.max_bytes` now leaves out of `# Memory` after an
    /// acceptance ([`crate::mining::review::left_out`]).
    LeftOut(Vec<MemoryEntry>),
    /// `/skills`: read from the agent.
    Skills,
    /// `/hooks`: read from the agent's config.
    Hooks,
    /// `/permissions`: every rule, numbered from 1 in this order
    /// ([`crate::permission_rules::table`]).
    Permissions(Vec<PermissionRule>),
    /// `/permissions forget N` removed this saved rule.
    PermissionForgotten {
        number: usize,
        rule: PermissionRule,
    },
    Status(Box<AgentStatus>),
    /// `/model` alone.
    Model(ModelInfo),
    /// `/model KEY [EFFORT]` switched.
    ModelSwitched {
        info: ModelInfo,
        notices: Vec<String>,
    },
    /// The session ended with these background jobs still running; they
    /// were stopped.
    JobsStopped(Vec<JobInfo>),
}

/// An export written to a file.
#[derive(Debug)]
pub struct Exported {
    pub id: SessionId,
    pub format: eonyx_export::Format,
    pub path: String,
    /// Lines of the session file that could not be read.
    pub skipped: eonyx_export::Skipped,
}

/// How a command ended.
#[derive(Debug)]
pub enum Outcome {
    /// Done; what it reports was shown.
    Done,
    /// The session changed (`/new`, `/resume`, `/fork`).
    Switched,
    /// Turns ran (`/goal TEXT`, `/goal resume`).
    Turns(GoalEnd),
    /// Leave (`/exit`).
    Exit,
    /// Nothing done for a reason of the command's own (a bad argument,
    /// nothing to do, an unknown id, no goal): a notice, and a batch goes
    /// on (docs/cli.md#batch-input).
    Declined(String),
    /// What runs the command failed (disk, provider): a batch stops.
    Failed(AgentError),
}

/// How a goal's loop ended.
#[derive(Debug)]
pub enum GoalEnd {
    /// No goal is active (any more): its status says why (`None`: no
    /// goal); `last` is the last turn's outcome.
    Stopped {
        status: Option<GoalStatus>,
        last: Option<TurnOutcome>,
    },
    /// A turn failed (interrupted included); the goal was paused.
    Failed(AgentError),
}

impl Outcome {
    /// An agent error as a command's end: the user's to correct
    /// ([`AgentError::is_users`]) declines, the rest fails.
    pub fn of_error(e: AgentError) -> Outcome {
        if e.is_users() {
            Outcome::Declined(e.to_string())
        } else {
            Outcome::Failed(e)
        }
    }
}
