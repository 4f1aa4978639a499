//! The table of slash commands: every command once, with its synopsis,
//! help line and the frontends that offer it; parsing a line against it.

/// A frontend that offers commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// The line-mode REPL on a terminal.
    Repl,
    /// Batch input (stdin not a terminal).
    Batch,
    /// An ACP session (`eonyx acp`).
    Acp,
}

/// Where a command is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// The REPL, batch input and ACP.
    Everywhere,
    /// The REPL and batch input: it switches the session a client owns,
    /// or ends the process.
    Terminal,
}

impl Offer {
    pub fn includes(self, surface: Surface) -> bool {
        match self {
            Offer::Everywhere => true,
            Offer::Terminal => surface != Surface::Acp,
        }
    }
}

/// What a command does: the handler [`super::run`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Compact,
    New,
    Sessions,
    Resume,
    Rename,
    Rewind,
    Fork,
    Goal,
    Plan,
    Pin,
    Pins,
    Unpin,
    Jobs,
    Export,
    Context,
    Memory,
    Remember,
    Skills,
    Hooks,
    Permissions,
    Status,
    Model,
    Help,
    Exit,
}

/// What Tab completes in a command's argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgCompletion {
    Nothing,
    /// A session id (`/resume ID`).
    SessionId,
}

/// One slash command.
#[derive(Debug)]
pub struct Command {
    /// `/name`.
    pub name: &'static str,
    /// Other names that run it, not listed (`/quit`).
    pub aliases: &'static [&'static str],
    /// Argument synopsis, `""` for none.
    pub args: &'static str,
    pub help: &'static str,
    /// The argument's hint for ACP clients (`None`: no argument).
    pub hint: Option<&'static str>,
    pub offer: Offer,
    pub kind: Kind,
    pub completion: ArgCompletion,
}

impl Command {
    /// The name without its `/`.
    pub fn bare(&self) -> &'static str {
        self.name.trim_start_matches('/')
    }

    /// `name args`, as `/help` shows it.
    pub fn usage(&self) -> String {
        if self.args.is_empty() {
            self.name.to_owned()
        } else {
            format!("{} {}", self.name, self.args)
        }
    }
}

const fn cmd(
    name: &'static str,
    args: &'static str,
    help: &'static str,
    hint: Option<&'static str>,
    offer: Offer,
    kind: Kind,
) -> Command {
    Command {
        name,
        aliases: &[],
        args,
        help,
        hint,
        offer,
        kind,
        completion: ArgCompletion::Nothing,
    }
}

use Kind as K;
use Offer::{Everywhere as ALL, Terminal as TERM};

/// Every slash command, in `/help`'s order. To add one: a row here and its
/// handler in [`super::run`] (module docs of [`super`]).
pub const COMMANDS: &[Command] = &[
    cmd(
        "/compact",
        "[focus]",
        "compact the conversation now (optionally focused)",
        Some("focus"),
        ALL,
        K::Compact,
    ),
    cmd("/summarize", "", "same as /compact", None, TERM, K::Compact),
    cmd("/new", "", "start a new session", None, TERM, K::New),
    cmd("/sessions", "", "list sessions", None, ALL, K::Sessions),
    Command {
        completion: ArgCompletion::SessionId,
        ..cmd(
            "/resume",
            "ID",
            "switch to another session",
            Some("session id"),
            TERM,
            K::Resume,
        )
    },
    cmd(
        "/rename",
        "TITLE",
        "rename this session",
        Some("title"),
        ALL,
        K::Rename,
    ),
    cmd(
        "/rewind",
        "[N] [--keep-files]",
        "go back N user turns (default 1), restoring the files they changed",
        Some("N --keep-files"),
        ALL,
        K::Rewind,
    ),
    cmd(
        "/fork",
        "[N]",
        "continue in a copy of this session (before the last N turns)",
        Some("N"),
        ALL,
        K::Fork,
    ),
    cmd(
        "/goal",
        "[TEXT|pause|resume|clear]",
        "set the goal eonyx works on until it is achieved; alone: its status and budget",
        Some("text | pause | resume | clear"),
        ALL,
        K::Goal,
    ),
    cmd("/plan", "", "show the current plan", None, ALL, K::Plan),
    cmd(
        "/pin",
        "TEXT",
        "pin a note eonyx keeps verbatim through every compaction",
        Some("note to pin"),
        ALL,
        K::Pin,
    ),
    cmd("/pins", "", "list the pins, numbered", None, ALL, K::Pins),
    cmd(
        "/unpin",
        "N",
        "remove pin N (it leaves at the next compaction)",
        Some("N"),
        ALL,
        K::Unpin,
    ),
    cmd(
        "/jobs",
        "[stop N]",
        "list the background jobs (id, state, runtime, command, log), or stop job N",
        None,
        TERM,
        K::Jobs,
    ),
    cmd(
        "/export",
        "[FILE]",
        "write this session as Markdown (HTML for a .html FILE; default <id>.md here)",
        Some("file"),
        ALL,
        K::Export,
    ),
    cmd(
        "/context",
        "",
        "show the context files and the {ctx} estimate",
        None,
        ALL,
        K::Context,
    ),
    cmd(
        "/memory",
        "[review]",
        "list memory entries; review: accept / reject / edit / skip what mining proposed",
        Some("review --accept-all | --accept ID | --reject ID"),
        ALL,
        K::Memory,
    ),
    cmd(
        "/remember",
        "TEXT",
        "remember TEXT in this project's memory (sent from the next session on)",
        Some("text to remember"),
        ALL,
        K::Remember,
    ),
    cmd(
        "/skills",
        "",
        "list the skills the model can load",
        None,
        ALL,
        K::Skills,
    ),
    cmd(
        "/hooks",
        "",
        "list the hooks, their file, and whether they run here",
        None,
        ALL,
        K::Hooks,
    ),
    cmd(
        "/permissions",
        "[forget N]",
        "list the permission rules, numbered, with their file; forget N removes one eonyx saved",
        Some("forget N"),
        ALL,
        K::Permissions,
    ),
    cmd(
        "/status",
        "",
        "model, window, {ctx}, this session's tokens and cache hits, compactions",
        None,
        ALL,
        K::Status,
    ),
    cmd(
        "/model",
        "[KEY] [EFFORT]",
        "show or switch the model and reasoning effort for the rest of the session",
        Some("key effort"),
        ALL,
        K::Model,
    ),
    cmd("/help", "", "this help", None, ALL, K::Help),
    Command {
        aliases: &["/quit"],
        ..cmd("/exit", "", "leave", None, TERM, K::Exit)
    },
];

/// The commands `surface` offers, in the table's order.
pub fn offered(surface: Surface) -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().filter(move |c| c.offer.includes(surface))
}

/// The command `name` (`/name`, or an alias) if `surface` offers it.
pub fn find(name: &str, surface: Surface) -> Option<&'static Command> {
    offered(surface).find(|c| c.name == name || c.aliases.contains(&name))
}

/// The `/help` text for `surface`: one line per command, the help texts
/// aligned.
pub fn help(surface: Surface) -> String {
    let w = offered(surface)
        .map(|c| c.usage().chars().count())
        .max()
        .unwrap_or(0);
    offered(surface)
        .map(|c| format!("{:<w$}  {}", c.usage(), c.help))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A slash command with its argument, as typed.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'l> {
    pub command: &'static Command,
    /// The rest of the line, trimmed (`""`: none).
    pub args: &'l str,
}

impl<'l> Invocation<'l> {
    /// The argument, `None` when empty.
    pub fn arg(&self) -> Option<&'l str> {
        (!self.args.is_empty()).then_some(self.args)
    }

    /// What a summary being written ahead should do before this command
    /// runs (docs/compaction.md#ahead-of-time-summaries).
    pub fn drafting(&self) -> Drafting {
        match self.command.kind {
            Kind::New | Kind::Resume => Drafting::Cancel,
            // A goal set or resumed sends requests at once.
            Kind::Goal => Drafting::InputArrives,
            // A focused compaction writes its own summary.
            Kind::Compact if self.arg().is_some() => Drafting::Cancel,
            Kind::Compact => Drafting::Await,
            _ => Drafting::GoesOn,
        }
    }
}

/// See [`Invocation::drafting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drafting {
    /// The command sends no request: the summary goes on.
    GoesOn,
    /// The session changes or a summary of its own is written: cancel it.
    Cancel,
    /// `/compact` applies it: wait for it first.
    Await,
    /// Requests follow at once, as after user input.
    InputArrives,
}

/// How a line reads.
#[derive(Debug, Clone, Copy)]
pub enum Parsed<'l> {
    /// A command `surface` offers.
    Command(Invocation<'l>),
    /// `/name` that `surface` does not offer (the REPL warns; ACP sends it
    /// on as a prompt, where it may name a skill).
    Unknown(&'l str),
    /// Not a slash command.
    Text,
}

/// Read `line` as `surface` does.
pub fn parse(line: &str, surface: Surface) -> Parsed<'_> {
    let line = line.trim();
    if !line.starts_with('/') {
        return Parsed::Text;
    }
    let (name, rest) = match line.split_once(char::is_whitespace) {
        Some((c, r)) => (c, r.trim()),
        None => (line, ""),
    };
    match find(name, surface) {
        Some(command) => Parsed::Command(Invocation {
            command,
            args: rest,
        }),
        None => Parsed::Unknown(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_once_aligned() {
        let terminal = "\
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
/pin TEXT                        pin a note eonyx keeps verbatim through every compaction
/pins                            list the pins, numbered
/unpin N                         remove pin N (it leaves at the next compaction)
/jobs [stop N]                   list the background jobs (id, state, runtime, command, log), or stop job N
/export [FILE]                   write this session as Markdown (HTML for a .html FILE; default <id>.md here)
/context                         show the context files and the {ctx} estimate
/memory [review]                 list memory entries; review: accept / reject / edit / skip what mining proposed
/remember TEXT                   remember TEXT in this project's memory (sent from the next session on)
/skills                          list the skills the model can load
/hooks                           list the hooks, their file, and whether they run here
/permissions [forget N]          list the permission rules, numbered, with their file; forget N removes one eonyx saved
/status                          model, window, {ctx}, this session's tokens and cache hits, compactions
/model [KEY] [EFFORT]            show or switch the model and reasoning effort for the rest of the session
/help                            this help
/exit                            leave";
        assert_eq!(help(Surface::Repl), terminal);
        assert_eq!(help(Surface::Batch), terminal);
    }

    #[test]
    fn acp_offers_every_command_but_session_switches_and_exit() {
        let acp: Vec<&str> = offered(Surface::Acp).map(|c| c.name).collect();
        assert_eq!(
            acp,
            [
                "/compact",
                "/sessions",
                "/rename",
                "/rewind",
                "/fork",
                "/goal",
                "/plan",
                "/pin",
                "/pins",
                "/unpin",
                "/export",
                "/context",
                "/memory",
                "/remember",
                "/skills",
                "/hooks",
                "/permissions",
                "/status",
                "/model",
                "/help"
            ]
        );
    }

    #[test]
    fn names_are_unique_and_aliases_run_their_command() {
        let mut names: Vec<&str> = COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a name twice: {names:?}");
        assert!(matches!(
            parse("/quit", Surface::Repl),
            Parsed::Command(Invocation { command, .. }) if command.kind == Kind::Exit
        ));
        assert!(matches!(
            parse("/quit", Surface::Acp),
            Parsed::Unknown("/quit")
        ));
        assert!(matches!(
            parse("hello /status", Surface::Repl),
            Parsed::Text
        ));
    }

    #[test]
    fn a_line_is_its_command_and_its_trimmed_argument() {
        let Parsed::Command(inv) = parse("  /rename   my  title  ", Surface::Batch) else {
            panic!("not a command");
        };
        assert_eq!(inv.command.kind, Kind::Rename);
        assert_eq!(inv.args, "my  title");
        let Parsed::Command(inv) = parse("/status", Surface::Acp) else {
            panic!("not a command");
        };
        assert_eq!(inv.arg(), None);
    }

    #[test]
    fn drafting_follows_the_command() {
        let d = |line| match parse(line, Surface::Repl) {
            Parsed::Command(inv) => inv.drafting(),
            _ => panic!("{line}"),
        };
        assert_eq!(d("/new"), Drafting::Cancel);
        assert_eq!(d("/resume x"), Drafting::Cancel);
        assert_eq!(d("/compact"), Drafting::Await);
        assert_eq!(d("/summarize"), Drafting::Await);
        assert_eq!(d("/compact the api"), Drafting::Cancel);
        assert_eq!(d("/goal resume"), Drafting::InputArrives);
        assert_eq!(d("/status"), Drafting::GoesOn);
    }
}
