//! Shared frontend for commands that run turns: building the agent and
//! running turns. Showing events is in [`view`], Ctrl-C in [`interrupts`],
//! what slash commands report in [`frontend`] (the commands themselves and
//! the goal loop are `eonyx_agent::commands`).

use std::sync::Arc;

use anyhow::Context as _;
use eonyx_agent::commands;
use eonyx_agent::tools::Approver;
use eonyx_agent::{Agent, AgentError, AgentOptions, SessionChoice, UserInput};
use eonyx_core::SessionId;
use eonyx_core::paths::Env;

use crate::cli::{GlobalArgs, SessionArgs};
use crate::printer::Printer;

pub mod ahead;
pub mod dispatch;
pub mod frontend;
pub mod goal;
pub mod interrupts;
pub mod outcome;
pub mod quiet;
pub mod reasoning;
pub mod rewind;
pub mod text;
pub mod view;

pub use ahead::Drafts;
pub use interrupts::Interrupts;
pub use view::{Mode, View};

pub fn session_choice(args: &SessionArgs, new: bool) -> anyhow::Result<SessionChoice> {
    if let Some(id) = &args.session {
        return Ok(SessionChoice::Id(SessionId::parse(id)?));
    }
    if args.continue_ {
        return Ok(SessionChoice::Continue);
    }
    Ok(if new {
        SessionChoice::New
    } else {
        SessionChoice::Latest
    })
}

/// The agent's options from the command line. `ask` is the user to ask
/// (the REPL) or `None` (batch, `run`); the agent applies `tools.shell`,
/// `tools.write` and the `--allow-*` flags itself.
pub fn options(
    global: &GlobalArgs,
    ask: Option<Arc<dyn Approver>>,
) -> anyhow::Result<AgentOptions> {
    let cwd = eonyx_core::paths::current_dir().context("cannot read the current directory")?;
    Ok(AgentOptions {
        cwd,
        env: Env::from_process(),
        model: global.model.clone(),
        profile: global.profile.clone(),
        permissions: global.allow.permissions(),
        approver: ask,
        provider: None,
        mcp: None,
        mcp_servers: Vec::new(),
        sandbox_helper: std::env::current_exe().ok(),
    })
}

/// An open agent with its view and Ctrl-C handling.
pub struct Session<'p> {
    pub agent: Agent,
    pub view: View<'p>,
    pub interrupts: Interrupts,
}

/// `--json` picks JSON events; otherwise `default`.
pub fn mode(global: &GlobalArgs, default: Mode) -> Mode {
    if global.json { Mode::Json } else { default }
}

/// Run `body` on a started session in a fresh runtime: the agent's options
/// from the command line with no one to ask (batch, `run`, `compact`), the
/// view in `--json` or [`Mode::Final`] mode, and with `announce` the session
/// shown.
pub fn with_session<'p, T, F>(
    printer: &'p mut Printer,
    global: &GlobalArgs,
    choice: SessionChoice,
    announce: bool,
    body: impl FnOnce(Session<'p>) -> F,
) -> anyhow::Result<T>
where
    F: Future<Output = anyhow::Result<T>>,
{
    let opts = options(global, None)?;
    let mode = mode(global, Mode::Final);
    super::runtime()?
        .block_on(async move { body(start(printer, opts, choice, mode, announce).await?).await })
}

/// Install Ctrl-C handling, open the agent, print its startup warnings and,
/// with `announce`, which session is in use. Must run inside the runtime.
pub async fn start(
    printer: &mut Printer,
    opts: AgentOptions,
    choice: SessionChoice,
    mode: Mode,
    announce: bool,
) -> anyhow::Result<Session<'_>> {
    start_with(printer, opts, choice, mode, announce, Interrupts::new()).await
}

/// [`start`] with Ctrl-C state made beforehand (the REPL shares it with the
/// approval question).
pub async fn start_with(
    printer: &mut Printer,
    opts: AgentOptions,
    choice: SessionChoice,
    mode: Mode,
    announce: bool,
    interrupts: Interrupts,
) -> anyhow::Result<Session<'_>> {
    interrupts.listen();
    let mut agent = Agent::open(opts, choice).await?;
    for n in agent.take_startup_notices() {
        printer.warn(&n);
    }
    let mut view = View::new(printer, mode);
    view.reasoning = reasoning::ReasoningView::new(agent.config().ui.reasoning);
    if announce {
        view.session(&agent);
    }
    let events = agent.events();
    events
        .deliver(commands::start_session(&mut agent), |ev| view.event(ev))
        .await;
    Ok(Session {
        agent,
        view,
        interrupts,
    })
}

/// The session ends: `SessionEnd` hooks with `reason`
/// (`prompt_input_exit`: the REPL's `/exit` or Ctrl-D; `other`: the end of
/// a batch), then its jobs stopped (`commands::end_session`).
pub async fn session_end_hooks(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    reason: &str,
) {
    let mut fe = frontend::Cli::new(view, interrupts, commands::Surface::Batch);
    commands::end_session(agent, &mut fe, reason).await;
}

/// Run one turn, showing its events up to its end, which
/// `commands::after_turn` shows (the batch loop decides in between whether
/// it is idle).
pub async fn turn(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    input: &UserInput,
) -> Result<eonyx_agent::TurnOutcome, AgentError> {
    let mut fe = frontend::Cli::new(view, interrupts, commands::Surface::Batch);
    commands::turn(agent, &mut fe, input, commands::TurnKind::User).await
}

/// A REPL or batch line with its `@path` files read, then its turn, up
/// to its end (`commands::after_turn` shows it). A file that cannot be
/// attached fails before anything is sent (an [`AgentError::Attach`]).
pub async fn line_turn(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    line: &str,
) -> Result<eonyx_agent::TurnOutcome, AgentError> {
    let input = agent.prepare_input(line).await?;
    turn(agent, view, interrupts, &input).await
}

/// `!command` (docs/repl.md, section "The REPL"): run it, its output shown as it
/// arrives, and put it in the conversation; `!` alone does nothing.
pub async fn user_command(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    command: &str,
) -> Result<(), AgentError> {
    let command = command.trim();
    if command.is_empty() {
        return Ok(());
    }
    let cancel = interrupts.begin();
    let (tee, ended) = view.command_tee();
    let result = agent.run_user_command(command, tee, &cancel).await;
    interrupts.end();
    match result {
        Ok(run) => {
            view.command_finished(command, &run, &ended);
            Ok(())
        }
        Err(e) => {
            view.failed(&e);
            Err(e)
        }
    }
}
