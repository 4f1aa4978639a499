//! Slash commands and skills in an ACP session (docs/acp.md#slash-commands):
//! the command layer's (`eonyx_agent::commands`) commands that need no
//! terminal, advertised with `available_commands_update` and run when a
//! prompt starts with one; their reports come as the command layer's text
//! (`commands::render`), every line of it. A skill
//! (`/deploy staging`) is a user turn asking the model to follow it.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk,
    SessionUpdate, UnstructuredCommandInput,
};
use eonyx_agent::commands::{
    self, Frontend, GoalEnd, Invocation, Offered, Outcome, Prompt, Shown, Surface, TurnKind,
};
use eonyx_agent::{Agent, AgentError, AgentEvent, TurnOutcome, UserInput};
use eonyx_core::provider::CancellationToken;

use crate::updates::{Updates, acp_plan};

/// The commands of the table ACP offers, then one per skill.
pub fn offered(agent: &Agent) -> Vec<Offered> {
    commands::offered_with_skills(agent, Surface::Acp)
}

pub fn update(commands: &[Offered]) -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
        commands
            .iter()
            .map(|c| {
                AvailableCommand::new(c.name.clone(), c.description.clone()).input(
                    c.hint.as_ref().map(|h| {
                        AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                            h.clone(),
                        ))
                    }),
                )
            })
            .collect(),
    ))
}

/// The prompt's first text block, when there is one.
fn first_text(blocks: &[ContentBlock]) -> Option<&str> {
    match blocks.first() {
        Some(ContentBlock::Text(first)) => Some(first.text.as_str()),
        _ => None,
    }
}

/// What a prompt asks for: a command, or a user turn.
pub enum Prepared<'b> {
    Command(Invocation<'b>),
    Turn(UserInput),
}

/// The prompt's command, or its user message (a skill's with the
/// instruction to follow it); an `Err` when a block cannot be read.
pub fn prepare<'b>(
    agent: &Agent,
    commands: &[Offered],
    blocks: &'b [ContentBlock],
) -> Result<Prepared<'b>, AgentError> {
    let input = match first_text(blocks).map(|t| commands::parse_prompt(t, Surface::Acp, commands))
    {
        Some(Prompt::Command(inv)) => return Ok(Prepared::Command(inv)),
        Some(Prompt::Skill { name, args }) => {
            let text = commands::skill_request(name, args);
            crate::prompt::user_input(agent, &blocks[1..], Some(&text))?
        }
        Some(Prompt::Text) | None => crate::prompt::user_input(agent, blocks, None)?,
    };
    Ok(Prepared::Turn(input))
}

/// Run a prepared prompt: a command (`Ok(None)` unless it ran turns, as
/// `/goal TEXT` does), or a turn; then an active goal continues.
pub async fn run(
    agent: &mut Agent,
    prepared: Prepared<'_>,
    updates: &mut Updates,
    cancel: &CancellationToken,
) -> Result<Option<TurnOutcome>, AgentError> {
    let mut fe = Acp { updates, cancel };
    let end = match prepared {
        Prepared::Command(_) if cancel.is_cancelled() => return Err(AgentError::Interrupted),
        Prepared::Command(inv) => match commands::run(agent, &mut fe, &inv).await {
            Outcome::Done | Outcome::Switched | Outcome::Exit => return Ok(None),
            // Its own reason: said, as any command's report is.
            Outcome::Declined(why) => {
                fe.updates.text(why);
                return Ok(None);
            }
            Outcome::Failed(e) => return Err(e),
            Outcome::Turns(end) => end,
        },
        Prepared::Turn(input) => commands::user_turn(agent, &mut fe, &input).await,
    };
    match end {
        GoalEnd::Stopped { last, .. } => Ok(last),
        GoalEnd::Failed(e) => Err(e),
    }
}

/// An ACP prompt as the command layer's frontend: reports as updates,
/// the prompt's cancel (`session/cancel`) as the interrupt.
struct Acp<'u> {
    updates: &'u mut Updates,
    cancel: &'u CancellationToken,
}

impl Frontend for Acp<'_> {
    fn surface(&self) -> Surface {
        Surface::Acp
    }

    fn event(&mut self, ev: AgentEvent) {
        self.updates.event(ev);
    }

    fn show(&mut self, agent: &Agent, shown: Shown) {
        if let Shown::Plan = shown
            && let Some(p) = agent.plan()
        {
            self.updates.send(SessionUpdate::Plan(acp_plan(&p)));
        }
        let home = std::env::var("HOME").ok();
        let lines = commands::render(agent, &shown, Surface::Acp, home.as_deref());
        let text: Vec<String> = lines.into_iter().map(|l| l.text).collect();
        self.updates.text(text.join("\n"));
    }

    fn interruptible(&mut self) -> CancellationToken {
        self.cancel.clone()
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// A continuation is shown as the user message eonyx wrote.
    fn turn_started(&mut self, input: &UserInput, kind: TurnKind) {
        if kind == TurnKind::Continuation {
            self.updates
                .send(SessionUpdate::UserMessageChunk(ContentChunk::new(
                    ContentBlock::from(input.text.clone()),
                )));
        }
    }

    fn failed(&mut self, e: &AgentError) {
        crate::diag(&e.to_string());
    }

    /// The client shows the prompt: the session keeps it.
    fn keeps_unsent_input(&self) -> bool {
        true
    }

    fn interrupted_reason(&self) -> &'static str {
        "cancelled by the client (session/cancel)"
    }

    /// A blocked reply ends the prompt with the stop reason `refusal`.
    fn blocked_reply_is_outcome(&self) -> bool {
        true
    }
}
