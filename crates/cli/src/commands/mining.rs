//! Memory mined from past sessions (docs/memory.md#mining), as the cli
//! shows it: `eonyx memory mine` (foreground, with progress), `eonyx
//! memory review`, what a start prints (entries `auto` learned, proposals
//! waiting) and the events of a background pass. The work is
//! `eonyx_agent::mining`'s; this module parses, asks and prints.

use std::io::BufRead;

use eonyx_agent::mining::{
    Inbox, MineOptions, Miner, MiningEvent, MiningHandle, Pick, StartupNotes,
};
use eonyx_config::{Config, MineMode};
use eonyx_core::SessionId;
use eonyx_core::cost::format_usd;
use eonyx_core::provider::BoxFuture;
use eonyx_store::mining::{CostTotals, MinedStatus, Proposal};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::cli::GlobalArgs;
use crate::event::Event;
use crate::exit::{Status, usage};
use crate::printer::Printer;

/// How long `eonyx run` waits, at its end, for a mining request still out.
pub const RUN_END_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The options mining runs with, for the current directory and flags.
pub fn options(
    global: &GlobalArgs,
    cwd: camino::Utf8PathBuf,
    env: eonyx_config::paths::Env,
) -> MineOptions {
    MineOptions {
        cwd,
        env,
        model: global.model.clone(),
        profile: global.profile.clone(),
        provider: None,
    }
}

/// `eonyx memory mine [--session ID | --all]`.
pub fn mine(
    printer: &mut Printer,
    config: Config,
    opts: MineOptions,
    session: Option<&str>,
    all: bool,
) -> anyhow::Result<Status> {
    let pick = match (session, all) {
        (Some(id), _) => Pick::Session(
            SessionId::parse(id.trim()).map_err(|e| usage(format!("--session {id}: {e}")))?,
        ),
        (None, true) => Pick::All,
        (None, false) => Pick::Foreground,
    };
    if config.memory.mine == MineMode::Off && session.is_none() {
        printer.warn("memory.mine = \"off\": mining anyway, as asked");
    }
    let mode = config.memory.mine;
    let inbox = Inbox::open(&config, &opts)?;
    let miner = Miner::new(config, &opts)?;
    let bar = progress(printer);
    let json = printer.json();
    let mut events = Vec::new();
    let result = super::runtime()?.block_on(async {
        let mut sink = |e: MiningEvent| {
            if let MiningEvent::Started { title, session } = &e {
                bar.set_message(format!("mining session \"{title}\" ({session})"));
            }
            events.push(e);
        };
        miner.run(&pick, Default::default(), &mut sink).await
    });
    bar.finish_and_clear();
    let mut proposed = 0;
    let mut mined = 0;
    for e in &events {
        match e {
            MiningEvent::Mined { proposals, .. } => {
                mined += 1;
                proposed += proposals;
            }
            MiningEvent::Proposed { proposal, entry } if !json => {
                printer.info(&match entry {
                    Some(id) => format!(
                        "learned [{id}] ({}): {} (from session \"{}\", {})",
                        proposal.scope, proposal.text, proposal.title, proposal.session
                    ),
                    None => format!(
                        "proposed [{}] ({}): {} (from session \"{}\", {})",
                        proposal.id,
                        proposal.scope,
                        proposal.text,
                        proposal.title,
                        proposal.session
                    ),
                });
            }
            _ => {}
        }
    }
    show_events(printer, &events, Shown::Foreground)?;
    result?;
    if !json {
        let costs = inbox.costs().ok();
        printer.info(&format!(
            "mined {mined} session(s): {proposed} memor{} proposed{}{}",
            if proposed == 1 { "y" } else { "ies" },
            match costs {
                Some(c) => format!("; mining so far: {}", cost_line(&c)),
                None => String::new(),
            },
            if proposed > 0 && mode == MineMode::Review {
                "; review them with `eonyx memory review`"
            } else {
                ""
            }
        ));
    }
    Ok(Status::Success)
}

/// A spinner on stderr, drawn only on a terminal.
fn progress(printer: &Printer) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if printer.stderr_is_terminal() && !printer.json() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message("looking for sessions to mine");
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// `R requests, T tokens, $C` for all mining so far.
pub fn cost_line(c: &CostTotals) -> String {
    if c.requests == 0 {
        return "no mining requests yet".to_owned();
    }
    format!(
        "{} request{}, {} tokens ({} in, {} out), {}",
        c.requests,
        if c.requests == 1 { "" } else { "s" },
        c.prompt_tokens + c.completion_tokens,
        c.prompt_tokens,
        c.completion_tokens,
        match c.cost_usd {
            Some(usd) => format_usd(usd),
            None => "cost unknown (no pricing for the mining model)".to_owned(),
        }
    )
}

/// Who shows the events: a start's background pass or a foreground mine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Background,
    Foreground,
}

/// Show a pass's events: `--json` events, warnings, and (in the
/// background, in `review` mode) one line per session that proposed
/// something. Entries `auto` learned are announced at the next start.
pub fn show_events(
    printer: &mut Printer,
    events: &[MiningEvent],
    shown: Shown,
) -> anyhow::Result<()> {
    for e in events {
        match e {
            MiningEvent::Warning(w) => printer.warn(w),
            MiningEvent::Started { .. } => {}
            MiningEvent::Proposed { proposal, entry } => {
                if printer.json() {
                    printer.event(&Event::MemoryProposed {
                        id: &proposal.id,
                        text: &proposal.text,
                        scope: proposal.scope,
                        session: &proposal.session,
                        seq: proposal.seq,
                        accepted: entry.as_deref(),
                    })?;
                }
            }
            MiningEvent::Mined {
                session,
                title,
                proposals,
                usage,
                cost_usd,
                status,
            } => {
                if printer.json() {
                    printer.event(&Event::MemoryMined {
                        session,
                        title,
                        proposals: *proposals,
                        tokens: usage.prompt_tokens + usage.completion_tokens,
                        prompt_tokens: usage.prompt_tokens,
                        completion_tokens: usage.completion_tokens,
                        cost_usd: *cost_usd,
                        status: status_str(*status),
                    })?;
                } else if shown == Shown::Background && *proposals > 0 {
                    printer.info(&format!(
                        "{proposals} memor{} proposed from session \"{title}\" ({session}): eonyx memory review",
                        if *proposals == 1 { "y" } else { "ies" }
                    ));
                }
            }
        }
    }
    Ok(())
}

fn status_str(s: MinedStatus) -> &'static str {
    match s {
        MinedStatus::Mined => "mined",
        MinedStatus::Retry => "retry",
        MinedStatus::Failed => "failed",
    }
}

/// [`on_start`] in the current directory with the run's flags.
pub fn on_start_here(
    printer: &mut Printer,
    global: &GlobalArgs,
    config: &Config,
    waiting_line: bool,
) -> Option<MiningHandle> {
    let cwd = match eonyx_config::paths::current_dir() {
        Ok(c) => c,
        Err(e) => {
            printer.warn(&format!("memory mining: {e}"));
            return None;
        }
    };
    let opts = options(global, cwd, eonyx_config::paths::Env::from_process());
    on_start(printer, config, opts, waiting_line)
}

/// At the end of a non-interactive run: give a request still out at most
/// [`RUN_END_WAIT`], then abandon it (its session stays unmarked), and
/// show what came.
pub fn at_end(printer: &mut Printer, handle: Option<MiningHandle>, wait: std::time::Duration) {
    if let Some(h) = handle {
        let events = h.finish(wait);
        if let Err(e) = show_events(printer, &events, Shown::Background) {
            printer.warn(&format!("memory mining: {e}"));
        }
    }
}

/// Show what a background pass sent so far.
pub fn show_pending(printer: &mut Printer, handle: &mut Option<MiningHandle>) {
    if let Some(h) = handle {
        let events = h.drain();
        if let Err(e) = show_events(printer, &events, Shown::Background) {
            printer.warn(&format!("memory mining: {e}"));
        }
    }
}

/// Start a start's background pass (when mining is on) and print what
/// the last passes left: one line per entry `auto` learned, and, with
/// `waiting_line`, how many proposals wait (the REPL's first prompt).
pub fn on_start(
    printer: &mut Printer,
    config: &Config,
    opts: MineOptions,
    waiting_line: bool,
) -> Option<MiningHandle> {
    match eonyx_agent::mining::startup_notes(config, &opts) {
        Ok(notes) => print_notes(printer, &notes, waiting_line),
        Err(e) => printer.warn(&format!("memory mining: {e}")),
    }
    eonyx_agent::mining::start_background(config, opts)
}

fn print_notes(printer: &mut Printer, notes: &StartupNotes, waiting_line: bool) {
    for l in &notes.learned {
        printer.info(&format!(
            "learned from session {} \"{}\": [{}] ({}) {}",
            l.session, l.title, l.entry, l.scope, l.text
        ));
    }
    if waiting_line && notes.waiting > 0 {
        printer.info(&format!(
            "{} memor{} proposed from earlier sessions: eonyx memory review",
            notes.waiting,
            if notes.waiting == 1 { "y" } else { "ies" }
        ));
    }
}

/// What the review flags asked for.
pub struct ReviewArgs<'a> {
    pub accept: &'a [String],
    pub reject: &'a [String],
    pub accept_all: bool,
}

/// `eonyx memory review`.
pub fn review(
    printer: &mut Printer,
    config: &Config,
    opts: &MineOptions,
    args: &ReviewArgs<'_>,
) -> anyhow::Result<Status> {
    let inbox = Inbox::open(config, opts)?;
    let pending = inbox.pending()?;
    if printer.json() && args.accept.is_empty() && args.reject.is_empty() && !args.accept_all {
        let list: Vec<_> = pending.iter().map(proposal_json).collect();
        printer.json_line(&json!(list))?;
        return Ok(Status::Success);
    }
    let ids = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|i| i.trim().trim_matches(['[', ']']).to_owned())
            .collect()
    };
    if !args.reject.is_empty() {
        let ids = ids(args.reject);
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        for p in inbox.reject(&refs).map_err(user_error)? {
            printer.info(&format!("rejected [{}]: never proposed again", p.id));
        }
    }
    let to_accept: Vec<String> = if args.accept_all {
        pending.iter().map(|p| p.id.clone()).collect()
    } else {
        ids(args.accept)
    };
    if !to_accept.is_empty() {
        for id in &to_accept {
            accept(printer, &inbox, id, None)?;
        }
        cap_note(printer, &inbox);
    }
    if args.accept_all || !args.accept.is_empty() || !args.reject.is_empty() {
        return Ok(Status::Success);
    }
    interactive(printer, &inbox, pending)
}

fn user_error(e: eonyx_agent::mining::MineError) -> anyhow::Error {
    use eonyx_agent::mining::MineError;
    use eonyx_store::memory::MemoryError;
    use eonyx_store::mining::MiningError;
    match &e {
        MineError::State(MiningError::UnknownIds { .. })
        | MineError::State(MiningError::Memory(MemoryError::Secret | MemoryError::Empty))
        | MineError::Memory(MemoryError::Secret | MemoryError::Empty) => usage(e.to_string()),
        _ => anyhow::Error::new(e),
    }
}

fn proposal_json(p: &Proposal) -> serde_json::Value {
    json!({
        "id": p.id,
        "text": p.text,
        "scope": p.scope,
        "session": p.session,
        "title": p.title,
        "seq": p.seq,
    })
}

fn accept(
    printer: &mut Printer,
    inbox: &Inbox,
    id: &str,
    edited: Option<&str>,
) -> anyhow::Result<()> {
    let a = inbox.accept(id, edited).map_err(user_error)?;
    if printer.json() {
        printer.json_line(&json!({
            "accepted": a.proposal.id,
            "entry": a.entry,
        }))?;
    } else {
        printer.info(&format!(
            "accepted [{}] as memory [{}] ({}): {} (from session {})",
            a.proposal.id,
            a.entry.id.as_deref().unwrap_or_default(),
            a.entry.scope,
            a.entry.text,
            a.proposal.session
        ));
    }
    Ok(())
}

/// Say what `memory.max_bytes` now leaves out, if anything.
fn cap_note(printer: &mut Printer, inbox: &Inbox) {
    match inbox.left_out() {
        Ok(out) if !out.is_empty() => {
            printer.warn(&format!(
                "memory.max_bytes now leaves {} older entr{} out of the prompt (still kept; `eonyx memory` lists all):",
                out.len(),
                if out.len() == 1 { "y" } else { "ies" }
            ));
            for e in out {
                printer.warn(&format!(
                    "  [{}] ({}) {}",
                    e.id.as_deref().unwrap_or("-"),
                    e.scope,
                    e.text
                ));
            }
        }
        Ok(_) => {}
        Err(e) => printer.warn(&format!("memory: {e}")),
    }
}

/// Where the review's answers come from: stdin (a terminal or not, one
/// answer a line) or the REPL's line editor.
pub trait Answers {
    /// The next answer to `question`; `None` at the end of input.
    fn next<'a>(
        &'a mut self,
        printer: &'a Printer,
        question: &'a str,
    ) -> BoxFuture<'a, Option<String>>;
}

/// Answers read a line at a time from stdin, the question on stderr.
struct StdinAnswers(std::io::Lines<std::io::StdinLock<'static>>);

impl Answers for StdinAnswers {
    fn next<'a>(
        &'a mut self,
        printer: &'a Printer,
        question: &'a str,
    ) -> BoxFuture<'a, Option<String>> {
        printer.err_raw(question);
        let line = self.0.next().and_then(Result::ok);
        Box::pin(async move { line })
    }
}

/// One proposal at a time: accept / reject / edit / skip, an answer a
/// line on stdin (a terminal or not).
fn interactive(
    printer: &mut Printer,
    inbox: &Inbox,
    pending: Vec<Proposal>,
) -> anyhow::Result<Status> {
    let mut answers = StdinAnswers(std::io::stdin().lock().lines());
    super::runtime()?.block_on(review_each(printer, inbox, pending, &mut answers))?;
    Ok(Status::Success)
}

/// Ask about each proposal in turn; accepted ones then say what the cap
/// leaves out.
pub async fn review_each(
    printer: &mut Printer,
    inbox: &Inbox,
    pending: Vec<Proposal>,
    answers: &mut dyn Answers,
) -> anyhow::Result<()> {
    let costs = inbox.costs()?;
    if pending.is_empty() {
        printer.info(&format!(
            "no memories proposed from earlier sessions (mining so far: {})",
            cost_line(&costs)
        ));
        return Ok(());
    }
    printer.info(&format!(
        "{} memor{} proposed from earlier sessions (mining so far: {})",
        pending.len(),
        if pending.len() == 1 { "y" } else { "ies" },
        cost_line(&costs)
    ));
    let mut accepted = 0;
    for p in &pending {
        printer.info(&format!(
            "[{}] ({}) {}\n  from session \"{}\" ({}){}",
            p.id,
            p.scope,
            p.text,
            p.title,
            p.session,
            p.seq
                .map_or_else(String::new, |s| format!(", message #{s}"))
        ));
        loop {
            let Some(line) = answers
                .next(printer, "accept, reject, edit or skip? [a/r/e TEXT/s] ")
                .await
            else {
                printer.info("end of input: the rest wait for a later review");
                if accepted > 0 {
                    cap_note(printer, inbox);
                }
                return Ok(());
            };
            let line = line.trim();
            let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            match word {
                "a" | "accept" => {
                    accept(printer, inbox, &p.id, None)?;
                    accepted += 1;
                }
                "r" | "reject" => {
                    inbox.reject(&[p.id.as_str()]).map_err(user_error)?;
                    printer.info(&format!("rejected [{}]: never proposed again", p.id));
                }
                "e" | "edit" => {
                    let text = if rest.trim().is_empty() {
                        answers
                            .next(printer, "new text: ")
                            .await
                            .unwrap_or_default()
                    } else {
                        rest.to_owned()
                    };
                    match inbox.accept(&p.id, Some(text.trim())) {
                        Ok(_) => {
                            accept_note(printer, &p.id, text.trim());
                            accepted += 1;
                        }
                        Err(e) => {
                            printer.warn(&format!("{e}; answer again"));
                            continue;
                        }
                    }
                }
                "s" | "skip" | "" => printer.info(&format!("skipped [{}]: it waits", p.id)),
                other => {
                    printer.warn(&format!(
                        "`{other}` is not an answer: a (accept), r (reject), e TEXT (edit, then accept) or s (skip)"
                    ));
                    continue;
                }
            }
            break;
        }
    }
    if accepted > 0 {
        cap_note(printer, inbox);
    }
    Ok(())
}

fn accept_note(printer: &mut Printer, id: &str, text: &str) {
    printer.info(&format!("accepted [{id}] as edited: {text}"));
}
