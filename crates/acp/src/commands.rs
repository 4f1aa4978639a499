//! Slash commands and skills in an ACP session (docs/acp.md#slash-commands):
//! the command layer's (`eonyx_agent::commands`) commands that need no
//! terminal, advertised with `available_commands_update` and run when a
//! prompt starts with one; their reports come as text. A skill
//! (`/deploy staging`) is a user turn asking the model to follow it.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk,
    SessionUpdate, UnstructuredCommandInput,
};
use eonyx_agent::commands::{
    self, Answer, Frontend, GoalEnd, Invocation, Offered, Outcome, Prompt, Shown, Surface,
    TurnKind, text,
};
use eonyx_agent::mining::review;
use eonyx_agent::permission_rules;
use eonyx_agent::rewind::RewindPlan;
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
        let text = render(agent, shown);
        self.updates.text(text);
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

    /// No one to ask in an editor's prompt: the client shows the report.
    fn confirm_rewind<'a>(&'a mut self, _plan: &'a RewindPlan) -> Answer<'a, bool> {
        Box::pin(async { true })
    }
}

/// A command's report as the text of the reply.
fn render(agent: &Agent, shown: Shown) -> String {
    let lines = |v: Vec<String>| v.join("\n");
    match shown {
        Shown::Help => lines(
            commands::offered(Surface::Acp)
                .map(|c| match c.hint {
                    Some(h) => format!("/{} [{h}]: {}", c.bare(), c.help),
                    None => format!("/{}: {}", c.bare(), c.help),
                })
                .collect(),
        ),
        Shown::Note(s) | Shown::Warning(s) => s,
        Shown::Renamed(title) => format!("renamed to {title}"),
        Shown::Sessions(list) => lines(
            list.iter()
                .map(|s| {
                    let marker = if &s.id == agent.session_id() {
                        "*"
                    } else {
                        "-"
                    };
                    format!(
                        "{marker} {} {} ({} messages)",
                        s.id, s.title, s.message_count
                    )
                })
                .collect(),
        ),
        Shown::Session { .. } => format!("session {}", agent.session_id()),
        Shown::Rewound(r) => text::rewound(&r),
        Shown::Forked {
            original, forked, ..
        } => text::forked(&original, &forked),
        Shown::Goal => match agent.goal() {
            Some(g) => format!("goal: {}\nstatus: {}", g.text, g.status_line()),
            None => {
                "no goal; set one with /goal TEXT (eonyx continues until it is achieved)".to_owned()
            }
        },
        Shown::GoalChanged(goal) => format!("goal {}: {}", goal.status.as_str(), goal.text),
        Shown::Plan => match agent.plan() {
            Some(p) => format!("plan ({})", p.progress()),
            None => "no plan yet; the model makes one with the plan tool".to_owned(),
        },
        Shown::Exported(x) => format!(
            "exported session {} as {} to {}",
            x.id,
            x.format.as_str(),
            x.path
        ),
        Shown::Context => text::context_estimate(agent),
        Shown::Memory(entries) if entries.is_empty() => {
            "no memory entries yet; add one with /remember TEXT".to_owned()
        }
        Shown::Memory(entries) => lines(
            entries
                .iter()
                .map(|e| format!("- [{}] {}", e.id.as_deref().unwrap_or("?"), e.text))
                .collect(),
        ),
        Shown::Remembered(entry) => format!(
            "remembered [{}] {}",
            entry.id.as_deref().unwrap_or("?"),
            entry.text
        ),
        Shown::Skills if agent.skills().is_empty() => "no skills (see docs/skills.md)".to_owned(),
        Shown::Skills => lines(
            agent
                .skills()
                .skills
                .iter()
                .map(|s| format!("- {}: {}", s.name, s.description))
                .collect(),
        ),
        Shown::Hooks => hooks(agent),
        Shown::Proposals { pending, costs } => lines(review::listing(&pending, &costs)),
        Shown::Reviewed(r) => review::reviewed(&r),
        Shown::LeftOut(out) => lines(review::left_out(&out)),
        Shown::Permissions(rules) if rules.is_empty() => permission_rules::NONE.to_owned(),
        Shown::Permissions(rules) => lines(permission_rules::table(&rules)),
        Shown::PermissionForgotten { number, rule } => permission_rules::forgotten(number, &rule),
        Shown::Status(st) => format!(
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
        ),
        Shown::Model(info) => format!("{}\nmodels: {}", info, info.keys.join(", ")),
        Shown::ModelSwitched { info, notices } => {
            for n in notices {
                crate::diag(&n);
            }
            format!("switched: {info}")
        }
    }
}

/// `/hooks`: each configured hook, its event, matcher, command, file and
/// whether it runs here.
fn hooks(agent: &Agent) -> String {
    let hooks = &agent.config().hooks.hooks;
    if hooks.is_empty() {
        return "no hooks configured; add them under `hooks` in config.toml or a trusted eonyx.json (docs/hooks.md)".to_owned();
    }
    hooks
        .iter()
        .map(|h| {
            format!(
                "- {} {}: {} ({}; {})",
                h.event.as_str(),
                if h.matcher.is_empty() {
                    "*"
                } else {
                    &h.matcher
                },
                h.command,
                h.file,
                if h.runs {
                    "runs here"
                } else {
                    "does not run: project not trusted (eonyx trust)"
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
