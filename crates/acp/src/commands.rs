//! Slash commands and skills (docs/acp.md#slash-commands): advertised with
//! `available_commands_update`, run when a prompt starts with one. A
//! built-in command answers in text without calling the model; a skill
//! (`/deploy staging`) is a user turn asking the model to follow it.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, SessionUpdate,
    UnstructuredCommandInput,
};
use eonyx_agent::{Agent, AgentError, AgentEvent, TurnOutcome, UsageError, UserInput};
use eonyx_core::provider::CancellationToken;

use crate::updates::Updates;

/// The built-in commands an ACP session offers (those of the REPL that
/// make sense inside an editor: the client switches sessions itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Compact,
    Context,
    Status,
    Memory,
    Remember,
    Skills,
    Rename,
    Goal,
    Plan,
    Model,
    Help,
}

const BUILTINS: [(Builtin, &str, &str, Option<&str>); 11] = [
    (
        Builtin::Compact,
        "compact",
        "compact the conversation now (optionally focused)",
        Some("focus"),
    ),
    (
        Builtin::Context,
        "context",
        "the context use: estimate, window, compaction threshold",
        None,
    ),
    (
        Builtin::Status,
        "status",
        "model, window, context, this session's tokens and compactions",
        None,
    ),
    (Builtin::Memory, "memory", "list memory entries", None),
    (
        Builtin::Remember,
        "remember",
        "remember TEXT in this project's memory",
        Some("text to remember"),
    ),
    (
        Builtin::Skills,
        "skills",
        "list the skills the model can load",
        None,
    ),
    (
        Builtin::Rename,
        "rename",
        "rename this session",
        Some("title"),
    ),
    (
        Builtin::Goal,
        "goal",
        "set the objective (eonyx continues until it is achieved), or show, pause, resume, clear it",
        Some("text | pause | resume | clear"),
    ),
    (Builtin::Plan, "plan", "the current plan", None),
    (
        Builtin::Model,
        "model",
        "show or switch the model and its reasoning effort",
        Some("key effort"),
    ),
    (Builtin::Help, "help", "the commands", None),
];

/// One command as offered to the client.
#[derive(Debug, Clone)]
pub struct Offered {
    pub name: String,
    pub description: String,
    pub hint: Option<String>,
    /// `None`: a skill.
    pub builtin: Option<Builtin>,
}

/// The built-in commands, then one per skill (a skill named like a
/// built-in command is reached through the model only).
pub fn offered(agent: &Agent) -> Vec<Offered> {
    let mut out: Vec<Offered> = BUILTINS
        .iter()
        .map(|(b, name, description, hint)| Offered {
            name: (*name).to_owned(),
            description: (*description).to_owned(),
            hint: hint.map(str::to_owned),
            builtin: Some(*b),
        })
        .collect();
    for skill in &agent.skills().skills {
        if out.iter().any(|o| o.name == skill.name) {
            continue;
        }
        out.push(Offered {
            name: skill.name.clone(),
            description: format!("skill: {}", skill.description),
            hint: Some("what to do".to_owned()),
            builtin: None,
        });
    }
    out
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

/// The command a prompt starts with (`/name rest`), when it names one.
fn command<'c>(commands: &'c [Offered], blocks: &[ContentBlock]) -> Option<(&'c Offered, String)> {
    let Some(ContentBlock::Text(first)) = blocks.first() else {
        return None;
    };
    let line = first.text.trim_start().strip_prefix('/')?;
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let c = commands.iter().find(|c| c.name == name)?;
    Some((c, rest.trim().to_owned()))
}

/// What a prompt asks for: a built-in command, or a user turn.
pub enum Prepared {
    Builtin(Builtin, String),
    Turn(UserInput),
}

/// The prompt's command, or its user message (a skill's with the
/// instruction to follow it); an `Err` when a block cannot be read.
pub fn prepare(
    agent: &Agent,
    commands: &[Offered],
    blocks: &[ContentBlock],
) -> Result<Prepared, AgentError> {
    let input = match command(commands, blocks) {
        Some((c, rest)) => match c.builtin {
            Some(b) => return Ok(Prepared::Builtin(b, rest)),
            None => {
                let mut text = format!(
                    "Follow the skill `{}` (load it with the skill tool).",
                    c.name
                );
                if !rest.is_empty() {
                    text.push_str("\n\n");
                    text.push_str(&rest);
                }
                crate::prompt::user_input(agent, &blocks[1..], Some(&text))?
            }
        },
        None => crate::prompt::user_input(agent, blocks, None)?,
    };
    Ok(Prepared::Turn(input))
}

/// Run a prepared prompt: a built-in command (`Ok(None)` unless it ran a
/// turn, as `/goal TEXT` does), or a turn; then an active goal continues.
pub async fn run(
    agent: &mut Agent,
    prepared: Prepared,
    updates: &mut Updates,
    cancel: &CancellationToken,
) -> Result<Option<TurnOutcome>, AgentError> {
    match prepared {
        Prepared::Builtin(_, _) if cancel.is_cancelled() => Err(AgentError::Interrupted),
        Prepared::Builtin(b, rest) => builtin(agent, b, &rest, updates, cancel).await,
        Prepared::Turn(input) => {
            let outcome = crate::goal::turn(agent, &input, updates, cancel).await?;
            crate::goal::continue_goal(agent, outcome, updates, cancel)
                .await
                .map(Some)
        }
    }
}

async fn builtin(
    agent: &mut Agent,
    b: Builtin,
    arg: &str,
    updates: &mut Updates,
    cancel: &CancellationToken,
) -> Result<Option<TurnOutcome>, AgentError> {
    let whole = arg;
    let arg = (!arg.is_empty()).then_some(arg);
    let text = match b {
        Builtin::Compact => {
            let mut sink = |ev: AgentEvent| updates.event(ev);
            agent.compact_now(arg, &mut sink, cancel).await?;
            return Ok(None);
        }
        Builtin::Goal => return crate::goal::goal_command(agent, whole, updates, cancel).await,
        Builtin::Plan => {
            crate::goal::plan_command(agent, updates);
            return Ok(None);
        }
        Builtin::Model => {
            crate::goal::model_command(agent, whole, updates).await?;
            return Ok(None);
        }
        Builtin::Context => {
            let st = agent.context_status();
            format!(
                "context: ~{} of {} tokens ({:.0}%), compaction at {}",
                st.estimate,
                st.window,
                st.percent,
                agent
                    .trigger()
                    .tokens
                    .map_or("off".to_owned(), |t| format!("~{t} tokens"))
            )
        }
        Builtin::Status => {
            let st = agent.status()?;
            format!(
                "model: {} ({}) · {} · {}\nwindow: {} tokens\ncontext: {{ctx {:.0}%}} ~{} tokens next request\ntokens: prompt {} · completion {} · cached {} over {} requests\ncompactions: {}\nsandbox: {}\nsession: {} \"{}\"\nfile: {}",
                st.model_key,
                st.model_name,
                st.provider,
                st.base_url,
                st.window,
                st.context.percent,
                st.context.estimate,
                st.tokens.prompt,
                st.tokens.completion,
                st.tokens.cached,
                st.tokens.requests,
                st.compactions,
                st.sandbox,
                st.session_id,
                st.title,
                st.path
            )
        }
        Builtin::Memory => {
            let entries = agent.memory_entries()?;
            if entries.is_empty() {
                "no memory entries yet; add one with /remember TEXT".to_owned()
            } else {
                entries
                    .iter()
                    .map(|e| format!("- [{}] {}", e.id.as_deref().unwrap_or("?"), e.text))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        Builtin::Remember => {
            let Some(text) = arg else {
                return Err(AgentError::Usage(UsageError::Synopsis("/remember TEXT")));
            };
            let entry = agent.remember(text)?;
            format!(
                "remembered [{}] {}",
                entry.id.as_deref().unwrap_or("?"),
                entry.text
            )
        }
        Builtin::Skills => {
            let skills = agent.skills();
            if skills.is_empty() {
                "no skills (see docs/skills.md)".to_owned()
            } else {
                skills
                    .skills
                    .iter()
                    .map(|s| format!("- {}: {}", s.name, s.description))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        Builtin::Rename => {
            let Some(title) = arg else {
                return Err(AgentError::Usage(UsageError::Synopsis("/rename TITLE")));
            };
            agent.rename(title)?;
            format!("renamed to {title}")
        }
        Builtin::Help => BUILTINS
            .iter()
            .map(|(_, name, description, hint)| match hint {
                Some(h) => format!("/{name} [{h}]: {description}"),
                None => format!("/{name}: {description}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    updates.text(text);
    Ok(None)
}
