//! The handlers: one per [`Kind`], each parsing and checking its argument,
//! doing the work through the agent and reporting through the frontend.

use camino::Utf8Path;
use eonyx_core::SessionId;
use eonyx_core::fs::{AtomicWrite, write_atomic};
use eonyx_export::{Format, Release};

use super::args::{self, GoalArgs, MEMORY_USAGE, REMEMBER_USAGE, RENAME_USAGE};
use super::frontend::{Exported, Frontend, Outcome, Shown, show_sent, showing};
use super::goal::{continue_goal, run_goal};
use super::table::{Invocation, Kind};
use crate::hooks::StartSource;
use crate::mining::review::{ReviewFlags, Reviewed};
use crate::mining::review_loop::{Reviewer, review_each};
use crate::mining::{Inbox, MineError};
use crate::permission_rules;
use crate::{Agent, AgentError, GoalChange};
use eonyx_core::provider::BoxFuture;

/// Run `inv` through `fe`.
pub async fn run(agent: &mut Agent, fe: &mut dyn Frontend, inv: &Invocation<'_>) -> Outcome {
    let arg = inv.arg();
    if inv.command.args.is_empty() && arg.is_some() {
        return Outcome::Declined(format!(
            "usage: {} (it takes no argument; /help lists the commands)",
            inv.command.name
        ));
    }
    match inv.command.kind {
        Kind::Exit => Outcome::Exit,
        Kind::Help => show(fe, agent, Shown::Help),
        Kind::Compact => compact(agent, fe, args::text(inv.args).as_deref()).await,
        Kind::Rewind => rewind(agent, fe, inv.args).await,
        Kind::Fork => fork(agent, fe, inv.args),
        Kind::Goal => goal(agent, fe, inv.args).await,
        Kind::Plan => show(fe, agent, Shown::Plan),
        Kind::Pin => super::pins::pin(agent, fe, args::text(inv.args).as_deref()),
        Kind::Pins => super::pins::list(agent, fe),
        Kind::Unpin => super::pins::unpin(agent, fe, inv.args),
        Kind::Jobs => jobs(agent, fe, inv.args).await,
        Kind::Export => export(agent, fe, args::text(inv.args).as_deref()),
        Kind::New => {
            super::session::session_end_hooks(agent, fe, "clear").await;
            let switch = agent.new_session();
            switched(agent, fe, switch, StartSource::Clear).await
        }
        Kind::Resume => {
            let id = match args::resume(inv.args).map(|id| SessionId::parse(&id)) {
                Ok(Ok(id)) => id,
                Ok(Err(e)) => return Outcome::Declined(e.to_string()),
                Err(why) => return Outcome::Declined(why),
            };
            let switch = agent.resume(&id);
            switched(agent, fe, switch, StartSource::Resume).await
        }
        Kind::Rename => {
            let Some(title) = args::text(inv.args) else {
                return Outcome::Declined(RENAME_USAGE.to_owned());
            };
            match agent.rename(&title) {
                Ok(()) => show(fe, agent, Shown::Renamed(title.into_owned())),
                Err(e) => Outcome::of_error(e),
            }
        }
        Kind::Sessions => match agent.store().list() {
            // Task sessions are listed under their parent's count, as
            // `eonyx sessions` does (`--all` there lists them).
            Ok(list) => {
                let top = list
                    .into_iter()
                    .filter(|s| s.parent.is_none())
                    .take(20)
                    .collect();
                show(fe, agent, Shown::Sessions(top))
            }
            Err(e) => Outcome::Failed(e.into()),
        },
        Kind::Context => show(fe, agent, Shown::Context),
        Kind::Memory => memory(agent, fe, inv.args).await,
        Kind::Remember => {
            let Some(text) = args::text(inv.args) else {
                return Outcome::Declined(REMEMBER_USAGE.to_owned());
            };
            match agent.remember(&text) {
                Ok(entry) => show(fe, agent, Shown::Remembered(entry)),
                Err(e) => Outcome::of_error(e),
            }
        }
        Kind::Skills => show(fe, agent, Shown::Skills),
        Kind::Hooks => show(fe, agent, Shown::Hooks),
        Kind::Permissions => permissions(agent, fe, inv.args),
        Kind::Status => match agent.status() {
            Ok(st) => show(fe, agent, Shown::Status(Box::new(st))),
            Err(e) => Outcome::of_error(e),
        },
        Kind::Model => model(agent, fe, inv.args).await,
    }
}

/// `/jobs`: the session's background jobs; `/jobs stop N` stops one (the
/// model hears of it as of any exit it did not see; docs/tools.md#jobs).
async fn jobs(agent: &mut Agent, fe: &mut dyn Frontend, arg: &str) -> Outcome {
    let stop = match args::jobs(arg) {
        Ok(stop) => stop,
        Err(why) => return Outcome::Declined(why),
    };
    let Some(id) = stop else {
        let list = agent.jobs().list();
        let text = if list.is_empty() {
            "no background jobs in this session".to_owned()
        } else {
            list.iter()
                .map(|j| {
                    format!(
                        "job {}  {}  {} s  {}  {}",
                        j.id, j.state, j.secs, j.command, j.log
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        return show(fe, agent, Shown::Note(text));
    };
    let events = agent.events();
    let result = showing(fe, &events, agent.jobs().stop(id)).await;
    match result {
        Ok(_) => Outcome::Done,
        Err(e) => Outcome::of_error(e),
    }
}

fn show(fe: &mut dyn Frontend, agent: &Agent, shown: Shown) -> Outcome {
    fe.show(agent, shown);
    Outcome::Done
}

async fn compact(agent: &mut Agent, fe: &mut dyn Frontend, focus: Option<&str>) -> Outcome {
    let cancel = fe.interruptible();
    let events = agent.events();
    let result = showing(fe, &events, agent.compact_now(focus, &cancel)).await;
    fe.settled();
    match result {
        Ok(_) => Outcome::Done,
        Err(e) if e.is_users() => Outcome::Declined(e.to_string()),
        Err(e) => {
            fe.failed(&e);
            Outcome::Failed(e)
        }
    }
}

/// After `/new` or `/resume`: the session with the notices of opening it,
/// then its `SessionStart` hooks.
async fn switched(
    agent: &mut Agent,
    fe: &mut dyn Frontend,
    result: Result<(), AgentError>,
    source: StartSource,
) -> Outcome {
    if let Err(e) = result {
        return Outcome::of_error(e);
    }
    let notices = agent.take_startup_notices();
    fe.show(agent, Shown::Session { notices });
    let events = agent.events();
    showing(fe, &events, agent.hooks().session_start(source)).await;
    Outcome::Switched
}

async fn rewind(agent: &mut Agent, fe: &mut dyn Frontend, args: &str) -> Outcome {
    let opts = match args::rewind(args) {
        Ok(o) => o,
        Err(e) => return Outcome::Declined(e),
    };
    let plan = match agent.plan_rewind(opts) {
        Ok(p) => p,
        Err(e) => return Outcome::of_error(e),
    };
    // Where someone can be asked (the REPL), they see the plan and say
    // yes; elsewhere the command is the user's say-so.
    if fe.can_ask() {
        fe.show(agent, Shown::Note(super::text::rewind_plan(&plan)));
        if !yes_or_no(fe, "rewind? [y]es / [n]o: ").await {
            fe.show(agent, Shown::Note("nothing rewound".to_owned()));
            return Outcome::Done;
        }
    }
    match agent.rewind(&plan) {
        Ok(report) => show(fe, agent, Shown::Rewound(report)),
        Err(e) => Outcome::of_error(e),
    }
}

/// Ask `question` until the answer reads as yes or no (an empty answer
/// is no); no answer at all (Ctrl-C, Ctrl-D) is no.
async fn yes_or_no(fe: &mut dyn Frontend, question: &str) -> bool {
    loop {
        match fe.ask(question).await {
            Some(a) => match a.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return true,
                "n" | "no" | "" => return false,
                _ => continue,
            },
            None => return false,
        }
    }
}

fn fork(agent: &mut Agent, fe: &mut dyn Frontend, args: &str) -> Outcome {
    let turns = match args::fork(args) {
        Ok(n) => n,
        Err(e) => return Outcome::Declined(e),
    };
    let original = agent.session_id().clone();
    match agent.fork(turns) {
        Ok(forked) => {
            let notices = agent.take_startup_notices();
            fe.show(
                agent,
                Shown::Forked {
                    original,
                    forked,
                    notices,
                },
            );
            Outcome::Switched
        }
        Err(e) => Outcome::of_error(e),
    }
}

/// `/goal [TEXT | pause | resume | clear]`: a new goal runs its first turn
/// (its text) and continues; `resume` continues.
async fn goal(agent: &mut Agent, fe: &mut dyn Frontend, arg: &str) -> Outcome {
    let wanted = args::goal(arg);
    let changed = match &wanted {
        GoalArgs::Show => return show(fe, agent, Shown::Goal),
        GoalArgs::Change(c) => agent.goals().change(*c),
        GoalArgs::Set(text) => agent.goals().set(text, None),
    };
    show_sent(fe, agent);
    let goal = match changed {
        Ok(g) => g,
        Err(e) => return Outcome::of_error(e),
    };
    match wanted {
        // A new goal: its text is the first message.
        GoalArgs::Set(_) | GoalArgs::Show => {
            let input = match agent.prepare_input(&goal.text).await {
                Ok(i) => i,
                Err(e) => return Outcome::of_error(e),
            };
            Outcome::Turns(run_goal(agent, fe, &input).await)
        }
        GoalArgs::Change(GoalChange::Resume) => {
            Outcome::Turns(continue_goal(agent, fe, Some(crate::TurnOutcome::default())).await)
        }
        GoalArgs::Change(_) => show(fe, agent, Shown::GoalChanged(goal)),
    }
}

/// `/memory [review …]`: the entries, or the review of what mining
/// proposed (docs/memory.md#review).
async fn memory(agent: &Agent, fe: &mut dyn Frontend, line: &str) -> Outcome {
    match args::memory(line) {
        Ok(None) => match agent.memory_entries() {
            Ok(entries) => show(fe, agent, Shown::Memory(entries)),
            Err(e) => Outcome::of_error(e),
        },
        Ok(Some(flags)) => {
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            review(agent, fe, &flags).await
        }
        Err(why) => Outcome::Declined(why),
    }
}

/// `/memory review`: with flags, they are applied; without, each proposal
/// is asked about where someone can answer (the REPL), and listed with
/// the flags that answer them where nobody can (a batch, ACP).
async fn review(agent: &Agent, fe: &mut dyn Frontend, words: &[&str]) -> Outcome {
    let flags = match ReviewFlags::parse(words) {
        Ok(f) => f,
        Err(why) => return Outcome::Declined(format!("{why}; {MEMORY_USAGE}")),
    };
    let inbox = Inbox::at(
        agent.config(),
        agent.store().data_dir(),
        agent.project_root(),
        agent.secret_values(),
    );
    if flags.any() {
        let done = inbox.apply(&flags);
        return match done {
            Ok(done) => {
                let accepted = done.iter().any(|r| matches!(r, Reviewed::Accepted { .. }));
                for r in done {
                    fe.show(agent, Shown::Reviewed(r));
                }
                if accepted {
                    left_out(agent, fe, &inbox);
                }
                Outcome::Done
            }
            Err(e) => mine_error(e),
        };
    }
    let (pending, costs) = match (inbox.pending(), inbox.costs()) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(e), _) | (_, Err(e)) => return mine_error(e),
    };
    if pending.is_empty() || !fe.can_ask() {
        return show(fe, agent, Shown::Proposals { pending, costs });
    }
    let accepted = {
        let mut r = Asked {
            agent,
            fe: &mut *fe,
        };
        match review_each(&inbox, &pending, &mut r).await {
            Ok(accepted) => accepted,
            Err(e) => return mine_error(e),
        }
    };
    if accepted {
        left_out(agent, fe, &inbox);
    }
    Outcome::Done
}

/// The review loop asking through a frontend that can ask (the REPL).
struct Asked<'a> {
    agent: &'a Agent,
    fe: &'a mut dyn Frontend,
}

impl Reviewer for Asked<'_> {
    fn info(&mut self, line: String) {
        self.fe.show(self.agent, Shown::Note(line));
    }

    fn warn(&mut self, line: String) {
        self.fe.show(self.agent, Shown::Warning(line));
    }

    fn reviewed(&mut self, r: Reviewed) {
        self.fe.show(self.agent, Shown::Reviewed(r));
    }

    fn ask<'q>(&'q mut self, question: &'q str) -> BoxFuture<'q, Option<String>> {
        self.fe.ask(question)
    }
}

/// Say what `memory.max_bytes` now leaves out of the `# Memory` section.
fn left_out(agent: &Agent, fe: &mut dyn Frontend, inbox: &Inbox) {
    match inbox.left_out() {
        Ok(out) if !out.is_empty() => fe.show(agent, Shown::LeftOut(out)),
        Ok(_) => {}
        Err(e) => fe.show(agent, Shown::Note(format!("memory: {e}"))),
    }
}

fn mine_error(e: MineError) -> Outcome {
    match e {
        e if e.class().is_users() => Outcome::Declined(e.to_string()),
        MineError::Memory(m) => Outcome::of_error(m.into()),
        MineError::Store(s) => Outcome::of_error(s.into()),
        MineError::Config(c) => Outcome::Failed(c.into()),
        e => Outcome::Declined(e.to_string()),
    }
}

/// `/permissions [forget N]`: the rules as `eonyx permissions` numbers
/// them, or rule N forgotten (only a rule eonyx saved; for the others it
/// names the file to edit).
fn permissions(agent: &Agent, fe: &mut dyn Frontend, line: &str) -> Outcome {
    let number = match args::permissions(line) {
        Ok(n) => n,
        Err(why) => return Outcome::Declined(why),
    };
    let rules = match permission_rules::current(agent.config()) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e.into()),
    };
    let Some(number) = number else {
        return show(fe, agent, Shown::Permissions(rules));
    };
    match permission_rules::forget(&rules, number) {
        Ok(rule) => show(fe, agent, Shown::PermissionForgotten { number, rule }),
        Err(permission_rules::ForgetError::Config(e)) => Outcome::Failed(e.into()),
        Err(e) => Outcome::Declined(e.to_string()),
    }
}

/// `/model [KEY] [EFFORT]`: the model and its effort, or a switch for the
/// rest of the session (recorded in the session file).
async fn model(agent: &mut Agent, fe: &mut dyn Frontend, line: &str) -> Outcome {
    let words = match args::model(line) {
        Ok(w) => w,
        Err(why) => return Outcome::Declined(why),
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let switch = match agent.parse_model_args(&words) {
        Ok(s) => s,
        Err(e) => return Outcome::Declined(e.to_string()),
    };
    if switch.key.is_none() && switch.effort.is_none() {
        let info = agent.model_info();
        return show(fe, agent, Shown::Model(info));
    }
    match agent.switch_model(&switch).await {
        Ok(info) => {
            let notices = agent.take_startup_notices();
            show(fe, agent, Shown::ModelSwitched { info, notices })
        }
        Err(e) => Outcome::of_error(e),
    }
}

/// `/export [FILE]`: the session as Markdown, or as the format FILE's
/// extension names (`.html`, `.jsonl`), to FILE or `<id>.md` in the
/// session's working directory. The session is untouched: a file that cannot be
/// written is this command's own reason.
fn export(agent: &Agent, fe: &mut dyn Frontend, file: Option<&str>) -> Outcome {
    let id = agent.session_id().clone();
    if !agent.store().session_path(&id).exists() {
        return show(
            fe,
            agent,
            Shown::Note(
                "nothing to export yet: the session is saved with its first message".to_owned(),
            ),
        );
    }
    let path = file.map_or_else(|| format!("{id}.md"), str::to_owned);
    let format = Format::for_path(&path);
    match export_to(agent, &id, format, &path) {
        Ok(skipped) => show(
            fe,
            agent,
            Shown::Exported(Exported {
                id,
                format,
                path,
                skipped,
            }),
        ),
        Err(why) => Outcome::Declined(why),
    }
}

/// Render session `id` as `format` and write it to `path` (atomically).
fn export_to(
    agent: &Agent,
    id: &SessionId,
    format: Format,
    path: &str,
) -> Result<eonyx_export::Skipped, String> {
    let store = agent.store();
    let config = agent.config();
    let opts = |h: &eonyx_core::SessionHeader| crate::cost::export_options(store, config, h);
    let mut bytes = Vec::new();
    let skipped = eonyx_export::export(store, id, format, &opts, &mut bytes, Release::Free)
        .map_err(|e| chain(&e))?;
    // Relative to the session's directory (an ACP session's need not be
    // the process's).
    let full = agent.cwd().join(Utf8Path::new(path));
    write_atomic(
        &full,
        &bytes,
        AtomicWrite {
            durable: true,
            private: true,
        },
    )
    .map_err(|e| format!("could not write the export of {id} to {path}: {e}"))?;
    Ok(skipped)
}

/// An error and its sources, joined with `: `.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.ends_with(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}
