//! Memory mined from past sessions (docs/memory.md#mining), as the cli
//! shows it: `eonyx memory mine` (foreground, with progress), `eonyx
//! memory review`, what a start prints (entries `auto` learned, proposals
//! waiting) and the events of a background pass. The work is
//! `eonyx_agent::mining`'s; this module parses, asks and prints.

use eonyx_agent::mining::review::{self, ReviewFlags, Reviewed};
use eonyx_agent::mining::review_loop::{Reviewer, review_each};
use eonyx_agent::mining::{
    Inbox, MineOptions, Miner, MiningEvent, MiningHandle, Pick, StartupNotes,
};
use eonyx_config::{Config, MineMode};
use eonyx_core::SessionId;
use eonyx_core::memory::MemoryScope;
use eonyx_core::provider::BoxFuture;
use eonyx_store::mining::{MinedStatus, Proposal};
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

pub use eonyx_agent::mining::review::cost_line;

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
            "{} memor{} proposed from earlier sessions: /memory review",
            notes.waiting,
            if notes.waiting == 1 { "y" } else { "ies" }
        ));
    }
}

/// `eonyx memory review`.
pub fn review(
    printer: &mut Printer,
    config: &Config,
    opts: &MineOptions,
    flags: &ReviewFlags,
) -> anyhow::Result<Status> {
    let inbox = Inbox::open(config, opts)?;
    let pending = inbox.pending()?;
    if printer.json() && !flags.any() {
        printer.json_array_line(pending.iter().map(ProposalJson::from))?;
        return Ok(Status::Success);
    }
    if !flags.any() {
        return interactive(printer, &inbox, pending);
    }
    let flags = flags.clone().without_brackets();
    let done = inbox.apply(&flags).map_err(user_error)?;
    let accepted = done.iter().any(|r| matches!(r, Reviewed::Accepted { .. }));
    for r in &done {
        reviewed(printer, r)?;
    }
    if accepted {
        cap_note(printer, &inbox);
    }
    Ok(Status::Success)
}

fn user_error(e: eonyx_agent::mining::MineError) -> anyhow::Error {
    if e.class() == eonyx_core::ErrorClass::Usage {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// A `memory review --json` proposal, its fields declared in the
/// alphabetical order its keys are written in
/// ([`Printer::json_array_line`]).
#[derive(serde::Serialize)]
struct ProposalJson<'a> {
    id: &'a str,
    scope: MemoryScope,
    seq: Option<u64>,
    session: &'a str,
    text: &'a str,
    title: &'a str,
}

impl<'a> From<&'a Proposal> for ProposalJson<'a> {
    fn from(p: &'a Proposal) -> Self {
        ProposalJson {
            id: &p.id,
            scope: p.scope,
            seq: p.seq,
            session: &p.session,
            text: &p.text,
            title: &p.title,
        }
    }
}

/// What an answer or a flag did: a line, or with `--json` an
/// `accepted` object for an acceptance.
fn reviewed(printer: &mut Printer, r: &Reviewed) -> anyhow::Result<()> {
    match r {
        Reviewed::Accepted { accepted, .. } if printer.json() => printer.json_line(&json!({
            "accepted": accepted.proposal.id,
            "entry": accepted.entry,
        }))?,
        r => printer.info(&review::reviewed(r)),
    }
    Ok(())
}

/// Say what `memory.max_bytes` now leaves out, if anything.
fn cap_note(printer: &mut Printer, inbox: &Inbox) {
    match inbox.left_out() {
        Ok(out) => {
            for line in review::left_out(&out) {
                printer.warn(&line);
            }
        }
        Err(e) => printer.warn(&format!("memory: {e}")),
    }
}

/// One proposal at a time: accept / reject / edit / skip, an answer a
/// line on stdin (a terminal or not), the question on stderr.
fn interactive(
    printer: &mut Printer,
    inbox: &Inbox,
    pending: Vec<Proposal>,
) -> anyhow::Result<Status> {
    let mut r = StdinReviewer {
        printer: &mut *printer,
        stdin: std::io::stdin(),
        failed: None,
    };
    let accepted = super::runtime()?.block_on(review_each(inbox, &pending, &mut r));
    if let Some(e) = r.failed {
        return Err(e);
    }
    if accepted? {
        cap_note(printer, inbox);
    }
    Ok(Status::Success)
}

/// The review loop on stdin and the printer.
struct StdinReviewer<'p> {
    printer: &'p mut Printer,
    stdin: std::io::Stdin,
    /// Output that could not be written (the first failure).
    failed: Option<anyhow::Error>,
}

impl Reviewer for StdinReviewer<'_> {
    fn info(&mut self, line: String) {
        self.printer.info(&line);
    }

    fn warn(&mut self, line: String) {
        self.printer.warn(&line);
    }

    fn reviewed(&mut self, r: Reviewed) {
        if let Err(e) = reviewed(self.printer, &r) {
            self.failed.get_or_insert(e);
        }
    }

    fn ask<'a>(&'a mut self, question: &'a str) -> BoxFuture<'a, Option<String>> {
        self.printer.err_raw(question);
        let mut line = String::new();
        let line = match self.stdin.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            // As `BufRead::lines` reads it: without its line ending.
            Ok(_) => {
                let end = line.strip_suffix('\n').unwrap_or(&line);
                Some(end.strip_suffix('\r').unwrap_or(end).to_owned())
            }
        };
        Box::pin(async move { line })
    }
}
