//! Shared frontend for commands that run turns: building the agent,
//! showing its events (text or JSONL), Ctrl-C handling, slash commands.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use eonyx_agent::tools::{Approver, ToolEvent};
use eonyx_agent::{Agent, AgentError, AgentEvent, AgentOptions, SessionChoice, TurnOutcome};
use eonyx_core::SessionId;
use eonyx_core::paths::Env;
use eonyx_core::provider::CancellationToken;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::cli::{GlobalArgs, SessionArgs};
use crate::exit::{Status, usage};
use crate::printer::Printer;

/// How answers are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Stream text to stdout as it arrives (REPL).
    Stream,
    /// Print each turn's final answer (batch, `run`).
    Final,
    /// JSONL events on stdout.
    Json,
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

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
        allow_shell: global.allow_shell,
        allow_write: global.allow_write,
        approver: ask,
        provider: None,
    })
}

/// Map agent errors to anyhow, keeping config errors as exit 2.
pub fn agent_error(e: AgentError) -> anyhow::Error {
    match e {
        AgentError::Config(c) => anyhow::Error::new(c),
        AgentError::Usage(m) => usage(m),
        // A provider that cannot be built from the config is a config error.
        AgentError::Provider(eonyx_core::ProviderError::Config { message }) => {
            anyhow::Error::new(crate::exit::SetupError(message))
        }
        other => anyhow::Error::new(other),
    }
}

/// Ctrl-C: the first press cancels the running step; a second one (or one
/// while nothing runs, when `exit_when_idle`) exits with 130.
pub struct Interrupts {
    current: Arc<std::sync::Mutex<CancellationToken>>,
    busy: Arc<AtomicBool>,
}

impl Interrupts {
    pub fn install() -> Self {
        let current = Arc::new(std::sync::Mutex::new(CancellationToken::new()));
        let busy = Arc::new(AtomicBool::new(false));
        let (c, b) = (current.clone(), busy.clone());
        tokio::spawn(async move {
            loop {
                if tokio::signal::ctrl_c().await.is_err() {
                    return;
                }
                let token = c.lock().map(|t| t.clone()).ok();
                match token {
                    Some(t) if b.load(Ordering::SeqCst) && !t.is_cancelled() => t.cancel(),
                    _ => {
                        // Second Ctrl-C, or Ctrl-C at the prompt.
                        let _ = std::io::Write::flush(&mut std::io::stdout());
                        std::process::exit(130);
                    }
                }
            }
        });
        Self { current, busy }
    }

    /// A fresh token for the next operation; marks the frontend busy.
    pub fn begin(&self) -> CancellationToken {
        let t = CancellationToken::new();
        if let Ok(mut cur) = self.current.lock() {
            *cur = t.clone();
        }
        self.busy.store(true, Ordering::SeqCst);
        t
    }

    pub fn end(&self) {
        self.busy.store(false, Ordering::SeqCst);
    }
}

/// Shows agent events.
pub struct View<'p> {
    pub printer: &'p mut Printer,
    pub mode: Mode,
    spinner: Option<ProgressBar>,
    streamed_any: bool,
    pub last_error: Option<std::io::Error>,
}

impl<'p> View<'p> {
    pub fn new(printer: &'p mut Printer, mode: Mode) -> Self {
        Self {
            printer,
            mode,
            spinner: None,
            streamed_any: false,
            last_error: None,
        }
    }

    fn out(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r
            && self.last_error.is_none()
        {
            self.last_error = Some(e);
        }
    }

    fn spin(&mut self, msg: &str) {
        if self.mode == Mode::Json || !self.printer.stderr_is_terminal() {
            return;
        }
        self.stop_spinner();
        let pb = ProgressBar::new_spinner();
        pb.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            pb.set_style(style);
        }
        pb.set_message(msg.to_owned());
        pb.enable_steady_tick(Duration::from_millis(100));
        self.spinner = Some(pb);
    }

    fn stop_spinner(&mut self) {
        if let Some(pb) = self.spinner.take() {
            pb.finish_and_clear();
        }
    }

    pub fn json(&mut self, v: serde_json::Value) {
        let r = self.printer.json_line(&v);
        self.out(r);
    }

    pub fn session(&mut self, agent: &Agent) {
        let (id, title, count) = (
            agent.session_id().to_string(),
            agent.title().to_owned(),
            agent.message_count(),
        );
        if self.mode == Mode::Json {
            self.json(json!({"type":"session","id":id,"title":title,"resumed":agent.resumed(),"messages":count}));
        } else if agent.resumed() {
            self.printer
                .info(&format!("resumed session {title} ({id}, {count} messages)"));
        } else {
            self.printer.info(&format!("new session {title} ({id})"));
        }
    }

    pub fn event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::StepStarted { .. } => self.spin("waiting for the model"),
            AgentEvent::TextDelta(t) => {
                self.stop_spinner();
                match self.mode {
                    Mode::Stream => {
                        self.streamed_any = true;
                        let r = self.printer.out(&t).and_then(|_| self.printer.flush());
                        self.out(r);
                    }
                    Mode::Json => self.json(json!({"type":"text","delta":t})),
                    Mode::Final => {}
                }
            }
            AgentEvent::ToolCall(call) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(json!({"type":"tool_call","id":call.id,"name":call.name,"arguments":call.arguments}));
                } else {
                    self.end_stream_line();
                    self.printer.info(&format!(
                        "→ {} {}",
                        call.name,
                        preview(&call.arguments_json(), 120)
                    ));
                }
            }
            AgentEvent::ToolResult {
                call_id,
                name,
                output,
                is_error,
            } => {
                if self.mode == Mode::Json {
                    self.json(json!({"type":"tool_result","id":call_id,"name":name,"is_error":is_error,"bytes":output.len(),"preview":preview(&output, 200)}));
                } else {
                    let first = output.lines().next().unwrap_or("");
                    self.printer.info(&format!(
                        "  {} ({} bytes){}",
                        preview(first, 100),
                        output.len(),
                        if is_error { " [error]" } else { "" }
                    ));
                }
            }
            AgentEvent::FileChanged(change) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(json!({"type":"file_changed","path":change.path,"added":change.added,"removed":change.removed}));
                } else if !super::approve::take_shown(&change.diff) {
                    self.end_stream_line();
                    self.printer.diff(&change.diff);
                }
            }
            AgentEvent::CompactionStarted { trigger } => {
                self.end_stream_line();
                self.spin(&format!("compacting ({})", trigger.as_str()));
            }
            AgentEvent::Compacted(rec) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(json!({"type":"compaction","trigger":rec.trigger,"tokens_before":rec.tokens_before,"tokens_after":rec.tokens_after,"first_kept_seq":rec.first_kept_seq,"mid_turn":rec.mid_turn,"mode":rec.mode}));
                } else {
                    self.printer.info(&format!(
                        "compacted ({}): ~{} → ~{} tokens; see `eonyx sessions show --effective`",
                        rec.trigger.as_str(),
                        rec.tokens_before,
                        rec.tokens_after
                    ));
                }
            }
            AgentEvent::StepUsage(_) => {}
            AgentEvent::Notice(m) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(json!({"type":"notice","message":m}));
                } else {
                    self.end_stream_line();
                    self.printer.info(&m);
                }
            }
            AgentEvent::Debug(m) => {
                if debug_enabled() {
                    self.stop_spinner();
                    if self.mode == Mode::Json {
                        self.json(json!({"type":"debug","message":m}));
                    } else {
                        self.end_stream_line();
                        self.printer.info(&format!("debug: {m}"));
                    }
                }
            }
            AgentEvent::Warning(m) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(json!({"type":"warning","message":m}));
                } else {
                    self.end_stream_line();
                    self.printer.warn(&m);
                }
            }
            AgentEvent::Tool(ToolEvent::Recall {
                query,
                scope,
                matches,
                returned,
            }) => {
                self.stop_spinner();
                self.end_stream_line();
                let noun = if matches == 1 { "match" } else { "matches" };
                self.printer.info(&format!("recall: {matches} {noun}"));
                if self.mode == Mode::Json {
                    self.json(json!({"type":"recall","query":query,"scope":scope,"matches":matches,"returned":returned}));
                }
            }
        }
    }

    fn end_stream_line(&mut self) {
        if self.mode == Mode::Stream && self.streamed_any {
            let r = self.printer.out("\n").and_then(|_| self.printer.flush());
            self.out(r);
            self.streamed_any = false;
        }
    }

    pub fn turn_started(&mut self, input: &str) {
        if self.mode == Mode::Json {
            self.json(json!({"type":"turn_started","input":input}));
        }
    }

    pub fn turn_finished(&mut self, outcome: &TurnOutcome) {
        self.stop_spinner();
        match self.mode {
            Mode::Json => self.json(json!({
                "type":"turn_completed",
                "text": outcome.text,
                "steps": outcome.steps,
                "max_steps_reached": outcome.max_steps_reached,
                "finish_reason": outcome.finish_reason.as_ref().map(finish_reason_str),
                "usage": {"prompt_tokens": outcome.usage.prompt_tokens, "completion_tokens": outcome.usage.completion_tokens, "cached_tokens": outcome.usage.cached_tokens}
            })),
            Mode::Stream => {
                if self.streamed_any {
                    self.end_stream_line();
                } else if !outcome.text.is_empty() {
                    let r = self.printer.outln(&outcome.text);
                    self.out(r);
                }
            }
            Mode::Final => {
                if !outcome.text.is_empty() {
                    let r = self.printer.outln(&outcome.text);
                    self.out(r);
                }
            }
        }
    }

    pub fn failed(&mut self, err: &AgentError) {
        self.stop_spinner();
        self.end_stream_line();
        if self.mode == Mode::Json {
            let r = self.printer.json_error(err.class(), &err.to_string());
            self.out(r);
        }
    }
}

pub fn preview(s: &str, max: usize) -> String {
    let one_line: String = s.chars().map(|c| if c == '\n' { ' ' } else { c }).collect();
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut t: String = one_line.chars().take(max).collect();
        t.push('…');
        t
    }
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

/// Install Ctrl-C handling, open the agent, print its startup warnings and,
/// with `announce`, which session is in use. Must run inside the runtime.
pub async fn start(
    printer: &mut Printer,
    opts: AgentOptions,
    choice: SessionChoice,
    mode: Mode,
    announce: bool,
) -> anyhow::Result<Session<'_>> {
    let interrupts = Interrupts::install();
    let mut agent = Agent::open(opts, choice).await.map_err(agent_error)?;
    for n in agent.take_startup_notices() {
        printer.warn(&n);
    }
    let mut view = View::new(printer, mode);
    if announce {
        view.session(&agent);
    }
    Ok(Session {
        agent,
        view,
        interrupts,
    })
}

/// Outcome of running one turn through the view.
pub enum TurnResult {
    Ok,
    Failed(AgentError),
}

/// Run one turn, showing its events.
pub async fn run_turn(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    input: &str,
) -> TurnResult {
    view.turn_started(input);
    let cancel = interrupts.begin();
    let result = {
        let mut sink = |ev: AgentEvent| view.event(ev);
        agent.turn(input, &mut sink, &cancel).await
    };
    interrupts.end();
    match result {
        Ok(outcome) => {
            view.turn_finished(&outcome);
            TurnResult::Ok
        }
        Err(e) => {
            view.failed(&e);
            TurnResult::Failed(e)
        }
    }
}

/// Slash commands shared by the REPL and batch runs.
pub const HELP: &str = "\
/compact [focus]  compact the conversation now (optionally focused)
/summarize        same as /compact
/new              start a new session
/sessions         list sessions
/resume ID        switch to another session
/rename TITLE     rename this session
/context          show the context files and the {ctx} estimate
/skills           list the skills the model can load
/help             this help
/exit             leave";

/// What a slash command asks the loop to do next.
pub enum Slash {
    Continue,
    Exit,
    Failed(anyhow::Error),
}

pub async fn slash(
    agent: &mut Agent,
    view: &mut View<'_>,
    interrupts: &Interrupts,
    line: &str,
) -> Slash {
    let line = line.trim();
    let (cmd, rest) = match line.split_once(char::is_whitespace) {
        Some((c, r)) => (c, r.trim()),
        None => (line, ""),
    };
    let arg = (!rest.is_empty()).then_some(rest);
    match cmd {
        "/exit" | "/quit" => Slash::Exit,
        "/help" => {
            view.printer.info(HELP);
            Slash::Continue
        }
        "/compact" | "/summarize" => {
            let cancel = interrupts.begin();
            let result = {
                let mut sink = |ev: AgentEvent| view.event(ev);
                agent.compact_now(arg, &mut sink, &cancel).await
            };
            interrupts.end();
            match result {
                Ok(_) => Slash::Continue,
                Err(e) => {
                    view.failed(&e);
                    Slash::Failed(agent_error(e))
                }
            }
        }
        "/new" => match agent.new_session() {
            Ok(()) => {
                view.session(agent);
                Slash::Continue
            }
            Err(e) => Slash::Failed(agent_error(e)),
        },
        "/resume" => {
            let Some(id) = arg else {
                return Slash::Failed(usage("usage: /resume ID (see /sessions)"));
            };
            let id = match SessionId::parse(id) {
                Ok(id) => id,
                Err(e) => return Slash::Failed(e.into()),
            };
            match agent.resume(&id) {
                Ok(()) => {
                    view.session(agent);
                    Slash::Continue
                }
                Err(e) => Slash::Failed(agent_error(e)),
            }
        }
        "/rename" => {
            let Some(title) = arg else {
                return Slash::Failed(usage("usage: /rename TITLE"));
            };
            match agent.rename(title) {
                Ok(()) => {
                    view.printer.info(&format!("renamed to {title}"));
                    Slash::Continue
                }
                Err(e) => Slash::Failed(agent_error(e)),
            }
        }
        "/sessions" => match agent.store().list() {
            Ok(list) => {
                for s in list.iter().take(20) {
                    let marker = if &s.id == agent.session_id() {
                        "*"
                    } else {
                        " "
                    };
                    view.printer.info(&format!(
                        "{marker} {}  {}  {:>5}  {}",
                        s.id, s.last_activity, s.message_count, s.title
                    ));
                }
                Slash::Continue
            }
            Err(e) => Slash::Failed(e.into()),
        },
        "/context" => {
            let system = agent.system_prompt();
            let system_tokens = eonyx_core::tokens::estimate(
                system.chars(),
                eonyx_core::tokens::DEFAULT_CHARS_PER_TOKEN,
            );
            super::context::print_table(
                view.printer,
                agent.context_files(),
                &system,
                system_tokens,
                std::env::var("HOME").ok().as_deref(),
            );
            if !agent.skills().is_empty() {
                view.printer
                    .info(&super::skills::section_line(agent.skills()));
            }
            let st = agent.context_status();
            view.printer.info(&format!(
                "context: ~{} of {} tokens ({:.0}%), compaction at {}",
                st.estimate,
                st.window,
                st.percent,
                agent
                    .trigger()
                    .tokens
                    .map_or("off".to_owned(), |t| format!("~{t} tokens"))
            ));
            if let Some(s) = agent.summary() {
                view.printer
                    .info(&format!("summary: {} characters", s.chars().count()));
            }
            Slash::Continue
        }
        "/skills" => {
            super::skills::print_for_repl(
                view.printer,
                agent.skills(),
                agent.skills_in_use(),
                std::env::var("HOME").ok().as_deref(),
            );
            Slash::Continue
        }
        other => {
            view.printer
                .warn(&format!("unknown command {other}; type /help for the list"));
            Slash::Continue
        }
    }
}

/// Final status for a failed turn.
pub fn status_for(err: &AgentError) -> Status {
    if err.is_interrupted() {
        Status::Interrupted
    } else if matches!(err, AgentError::Config(_) | AgentError::Usage(_)) {
        Status::Usage
    } else {
        Status::Failed
    }
}

/// `EONYX_DEBUG` set to anything but empty, `0` or `false`: show debug
/// diagnostics (on stderr; as `debug` events with `--json`).
fn debug_enabled() -> bool {
    std::env::var("EONYX_DEBUG").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// The API-neutral name of a finish reason for JSON events.
fn finish_reason_str(f: &eonyx_core::FinishReason) -> String {
    use eonyx_core::FinishReason as F;
    match f {
        F::Stop => "stop".to_owned(),
        F::Length => "length".to_owned(),
        F::ToolCalls => "tool_calls".to_owned(),
        F::ContentFilter => "content_filter".to_owned(),
        F::Other(s) => s.clone(),
    }
}
