//! Slash commands shared by the REPL and batch runs.

use eonyx_agent::hooks::StartSource;
use eonyx_agent::{Agent, AgentError, AgentEvent};
use eonyx_core::SessionId;

use super::outcome::{Slash, ended, own_reason};
use super::{Interrupts, View};

/// One slash command as `/help` lists it and Tab completes it.
pub struct Command {
    pub name: &'static str,
    /// Argument synopsis, `""` for none.
    pub args: &'static str,
    pub help: &'static str,
}

/// Every slash command. To add one: a row here (for `/help` and Tab) and an
/// arm in [`slash`].
pub const COMMANDS: &[Command] = &[
    Command {
        name: "/compact",
        args: "[focus]",
        help: "compact the conversation now (optionally focused)",
    },
    Command {
        name: "/summarize",
        args: "",
        help: "same as /compact",
    },
    Command {
        name: "/new",
        args: "",
        help: "start a new session",
    },
    Command {
        name: "/sessions",
        args: "",
        help: "list sessions",
    },
    Command {
        name: "/resume",
        args: "ID",
        help: "switch to another session",
    },
    Command {
        name: "/rename",
        args: "TITLE",
        help: "rename this session",
    },
    Command {
        name: "/rewind",
        args: "[N] [--keep-files]",
        help: "go back N user turns (default 1), restoring the files they changed",
    },
    Command {
        name: "/fork",
        args: "[N]",
        help: "continue in a copy of this session (before the last N turns)",
    },
    Command {
        name: "/goal",
        args: "[TEXT|pause|resume|clear]",
        help: "set the goal eonyx works on until it is achieved; alone: its status and budget",
    },
    Command {
        name: "/plan",
        args: "",
        help: "show the current plan",
    },
    Command {
        name: "/export",
        args: "[FILE]",
        help: "write this session as Markdown (HTML for a .html FILE; default <id>.md here)",
    },
    Command {
        name: "/context",
        args: "",
        help: "show the context files and the {ctx} estimate",
    },
    Command {
        name: "/memory",
        args: "[review]",
        help: "list memory entries; `review`: the memories proposed from earlier sessions",
    },
    Command {
        name: "/remember",
        args: "TEXT",
        help: "remember TEXT in this project's memory (sent from the next session on)",
    },
    Command {
        name: "/skills",
        args: "",
        help: "list the skills the model can load",
    },
    Command {
        name: "/hooks",
        args: "",
        help: "list the hooks, their file, and whether they run here",
    },
    Command {
        name: "/status",
        args: "",
        help: "model, window, {ctx}, this session's tokens and cache hits, compactions",
    },
    Command {
        name: "/model",
        args: "[KEY] [EFFORT]",
        help: "show or switch the model and reasoning effort for the rest of the session",
    },
    Command {
        name: "/help",
        args: "",
        help: "this help",
    },
    Command {
        name: "/exit",
        args: "",
        help: "leave",
    },
];

/// The `/help` text: one line per command, the help texts aligned.
pub fn help() -> String {
    let usage = |c: &Command| {
        if c.args.is_empty() {
            c.name.to_owned()
        } else {
            format!("{} {}", c.name, c.args)
        }
    };
    let w = COMMANDS
        .iter()
        .map(|c| usage(c).chars().count())
        .max()
        .unwrap_or(0);
    COMMANDS
        .iter()
        .map(|c| format!("{:<w$}  {}", usage(c), c.help))
        .collect::<Vec<_>>()
        .join("\n")
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
            view.printer.info(&help());
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
                Err(e) if own_reason(&e) => ended(e),
                Err(e) => {
                    view.failed(&e);
                    Slash::Failed(e.into())
                }
            }
        }
        "/rewind" => super::rewind::rewind(agent, view, rest).await,
        "/goal" => super::goal::goal_command(agent, view, interrupts, rest).await,
        "/plan" => super::goal::plan_command(agent, view),
        "/fork" => super::rewind::fork(agent, view, rest),
        "/export" => export(agent, view, arg),
        "/new" => {
            super::session_end_hooks(agent, view, "clear").await;
            let switch = agent.new_session();
            let ok = switch.is_ok();
            let slash = switched(view, agent, switch);
            if ok {
                super::session_start_hooks(agent, view, StartSource::Clear).await;
            }
            slash
        }
        "/resume" => {
            let Some(id) = arg else {
                return Slash::Declined("usage: /resume ID (see /sessions)".to_owned());
            };
            let id = match SessionId::parse(id) {
                Ok(id) => id,
                Err(e) => return Slash::Declined(e.to_string()),
            };
            let switch = agent.resume(&id);
            let ok = switch.is_ok();
            let slash = switched(view, agent, switch);
            if ok {
                super::session_start_hooks(agent, view, StartSource::Resume).await;
            }
            slash
        }
        "/rename" => {
            let Some(title) = arg else {
                return Slash::Declined("usage: /rename TITLE".to_owned());
            };
            match agent.rename(title) {
                Ok(()) => {
                    view.printer.info(&format!("renamed to {title}"));
                    Slash::Continue
                }
                Err(e) => ended(e),
            }
        }
        "/sessions" => match agent.store().list() {
            Ok(list) => {
                // Task sessions are listed under their parent's count, as
                // `eonyx sessions` does (`--all` there lists them).
                for s in list.iter().filter(|s| s.parent.is_none()).take(20) {
                    let marker = if &s.id == agent.session_id() {
                        "*"
                    } else {
                        " "
                    };
                    let tasks = match s.children {
                        0 => String::new(),
                        n => format!("  ({n} task{})", if n == 1 { "" } else { "s" }),
                    };
                    view.printer.info(&format!(
                        "{marker} {}  {}  {:>5}  {}{tasks}",
                        s.id, s.last_activity, s.message_count, s.title
                    ));
                }
                Slash::Continue
            }
            Err(e) => Slash::Failed(e.into()),
        },
        "/context" => {
            let report = agent.prompt_report();
            crate::commands::context::print_table(
                view.printer,
                &report,
                std::env::var("HOME").ok().as_deref(),
            );
            if !report.skills.is_empty() {
                view.printer
                    .info(&crate::commands::skills::section_line(&report.skills));
            }
            crate::commands::context::print_memory_line(view.printer, &report);
            if !agent.mcp_catalog().is_empty() {
                view.printer
                    .info(&crate::commands::mcp::catalog_line(agent.mcp_catalog()));
            }
            let st = agent.context_status();
            view.printer.info(&format!(
                "context: ~{} of {} tokens ({:.0}%), compaction at {}{}",
                st.estimate,
                st.window,
                st.percent,
                agent
                    .trigger()
                    .tokens
                    .map_or("off".to_owned(), |t| format!("~{t} tokens")),
                match (agent.trigger().ahead, st.summary_ready) {
                    (_, true) => "; a summary written ahead is ready".to_owned(),
                    (Some(a), false) => format!("; summaries written ahead from ~{a} tokens"),
                    (None, false) => String::new(),
                }
            ));
            if let Some(s) = agent.summary() {
                view.printer
                    .info(&format!("summary: {} characters", s.chars().count()));
            }
            Slash::Continue
        }
        "/memory" if arg == Some("review") => memory_review(agent, view).await,
        "/memory" => match agent.memory_entries() {
            Ok(entries) => {
                let entries = crate::commands::memory::newest_last(entries);
                if entries.is_empty() {
                    view.printer
                        .info("no memory entries yet; add one with /remember TEXT");
                }
                for row in crate::commands::memory::rows(&entries) {
                    view.printer.info(&row);
                }
                Slash::Continue
            }
            Err(e) => ended(e),
        },
        "/remember" => {
            let Some(text) = arg else {
                return Slash::Declined("usage: /remember TEXT".to_owned());
            };
            match agent.remember(text) {
                Ok(entry) => {
                    view.memory_changed("add", &entry);
                    Slash::Continue
                }
                Err(e) => ended(e),
            }
        }
        "/status" => match agent.status() {
            Ok(st) => {
                super::status::show(view, &st, std::env::var("HOME").ok().as_deref());
                Slash::Continue
            }
            Err(e) => ended(e),
        },
        "/model" => super::model::model(agent, view, rest).await,
        "/hooks" => {
            crate::commands::hooks::print_for_repl(view.printer, agent.config());
            Slash::Continue
        }
        "/skills" => {
            crate::commands::skills::print_for_repl(
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

/// `/export [FILE]`: the session as Markdown, or as the format FILE's
/// extension names (`.html`, `.jsonl`), to FILE or `<id>.md` in the
/// working directory.
fn export(agent: &Agent, view: &mut View<'_>, file: Option<&str>) -> Slash {
    let id = agent.session_id().clone();
    if !agent.store().session_path(&id).exists() {
        view.printer
            .info("nothing to export yet: the session is saved with its first message");
        return Slash::Continue;
    }
    let path = file.map_or_else(|| format!("{id}.md"), str::to_owned);
    let format = eonyx_export::Format::for_path(&path);
    match crate::commands::export::export(
        view.printer,
        agent.store(),
        Some(agent.config()),
        &id,
        format,
        Some(camino::Utf8Path::new(&path)),
        eonyx_export::Release::Free,
    ) {
        Ok(()) => Slash::Continue,
        // The session is untouched: a file that cannot be written is this
        // command's own reason, and a batch goes on.
        Err(e) => Slash::Declined(format!("{e:#}")),
    }
}

/// After `/new` or `/resume`: the session line and the notices of opening it
/// (memory and skill warnings).
fn switched(view: &mut View<'_>, agent: &mut Agent, result: Result<(), AgentError>) -> Slash {
    match result {
        Ok(()) => {
            view.session(agent);
            for n in agent.take_startup_notices() {
                view.printer.warn(&n);
            }
            Slash::Continue
        }
        Err(e) => ended(e),
    }
}

/// `/memory review` (docs/memory.md#review): each proposal asked in the
/// line editor; without one (a batch run) the list, and the command that
/// reviews it.
async fn memory_review(agent: &Agent, view: &mut View<'_>) -> Slash {
    struct ViaAsker<'v>(&'v dyn super::view::Ask);
    impl crate::commands::mining::Answers for ViaAsker<'_> {
        fn next<'a>(
            &'a mut self,
            _printer: &'a crate::printer::Printer,
            question: &'a str,
        ) -> eonyx_core::provider::BoxFuture<'a, Option<String>> {
            self.0.ask(question)
        }
    }
    let config = agent.config().clone();
    let result = match view.asker.as_deref() {
        Some(asker) => {
            let mut answers = ViaAsker(asker);
            crate::commands::mining::review_in_repl(view.printer, &config, &mut answers).await
        }
        None => {
            let mut answers = NoAnswers;
            crate::commands::mining::review_in_repl(view.printer, &config, &mut answers).await
        }
    };
    match result {
        Ok(()) => Slash::Continue,
        Err(e) => Slash::Declined(format!("{e:#}")),
    }
}

/// A batch run has no one to ask: the proposals are listed, none answered.
struct NoAnswers;

impl crate::commands::mining::Answers for NoAnswers {
    fn next<'a>(
        &'a mut self,
        printer: &'a crate::printer::Printer,
        _question: &'a str,
    ) -> eonyx_core::provider::BoxFuture<'a, Option<String>> {
        printer.info("review them with `eonyx memory review`");
        Box::pin(async { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_once_aligned() {
        assert_eq!(
            help(),
            "\
/compact [focus]                 compact the conversation now (optionally focused)
/summarize                       same as /compact
/new                             start a new session
/sessions                        list sessions
/resume ID                       switch to another session
/rename TITLE                    rename this session
/rewind [N] [--keep-files]       go back N user turns (default 1), restoring the files they changed
/fork [N]                        continue in a copy of this session (before the last N turns)
/goal [TEXT|pause|resume|clear]  set the goal eonyx works on until it is achieved; alone: its status and budget
/plan                            show the current plan
/export [FILE]                   write this session as Markdown (HTML for a .html FILE; default <id>.md here)
/context                         show the context files and the {ctx} estimate
/memory [review]                 list memory entries; `review`: the memories proposed from earlier sessions
/remember TEXT                   remember TEXT in this project's memory (sent from the next session on)
/skills                          list the skills the model can load
/hooks                           list the hooks, their file, and whether they run here
/status                          model, window, {ctx}, this session's tokens and cache hits, compactions
/model [KEY] [EFFORT]            show or switch the model and reasoning effort for the rest of the session
/help                            this help
/exit                            leave"
        );
    }
}
