//! Command-line definition (README, section "Commands") and parsing;
//! `commands::dispatch` runs what was parsed.

use camino::Utf8PathBuf;
use clap::{Args, Parser, Subcommand};

use crate::printer::Printer;

/// eonyx: a terminal LLM agent whose memory is done right.
#[derive(Debug, Parser)]
#[command(name = "eonyx", version = crate::exit::VERSION, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(flatten)]
    pub session: SessionArgs,

    /// Start a fresh session instead of resuming the most recent one (REPL).
    #[arg(long, conflicts_with_all = ["continue_", "session"])]
    pub new: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags every command accepts.
#[derive(Debug, Clone, Args, Default)]
pub struct GlobalArgs {
    /// Model key from the config (`[models.KEY]`).
    #[arg(long, global = true, value_name = "KEY")]
    pub model: Option<String>,
    /// Profile from the config (`[profiles.NAME]`).
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Machine-readable output: JSONL events for `run` and batch, JSON elsewhere.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub allow: AllowFlags,
}

/// `--allow-shell`, `--allow-write`, `--allow-mcp`, `--allow-web`: what the model may do
/// without asking ([`AllowFlags::permissions`]).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct AllowFlags {
    /// Let the model run shell commands without asking.
    #[arg(long, global = true)]
    pub allow_shell: bool,
    /// Let the model write and edit files in the project without asking.
    #[arg(long, global = true)]
    pub allow_write: bool,
    /// Let the model call tools of MCP servers (approval = "ask") without asking.
    #[arg(long, global = true)]
    pub allow_mcp: bool,
    /// Let the model fetch web pages (web_fetch) without asking.
    #[arg(long, global = true)]
    pub allow_web: bool,
}

impl AllowFlags {
    /// The flags as the agent takes them.
    pub fn permissions(self) -> eonyx_agent::tools::Permissions {
        eonyx_agent::tools::Permissions {
            shell: self.allow_shell,
            write: self.allow_write,
            mcp: self.allow_mcp,
            web: self.allow_web,
        }
    }
}

/// Which session to continue.
#[derive(Debug, Clone, Args, Default)]
pub struct SessionArgs {
    /// Continue the most recent session of this project.
    #[arg(short = 'c', long = "continue", id = "continue_")]
    pub continue_: bool,
    /// Continue the session with this id.
    #[arg(
        short = 's',
        long = "session",
        value_name = "ID",
        conflicts_with = "continue_"
    )]
    pub session: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one turn and print the answer.
    Run(RunArgs),
    /// List, search and manage sessions.
    Sessions(SessionsArgs),
    /// Print the assembled system prompt exactly as sent.
    Context(ContextArgs),
    /// Compact a session now.
    Compact(CompactArgs),
    /// List the skills the model can load: name, scope, path, description.
    Skills(SkillsArgs),
    /// Start the MCP servers and list their state, tools and the tokens they add to every request.
    Mcp(McpArgs),
    /// List the hooks: event, matcher, command, timeout, file, and whether they run here.
    Hooks(HooksArgs),
    /// List the permission rules (allow, ask, deny) numbered with their file; `forget N` removes a saved one.
    Permissions(PermissionsArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim) and acpx.
    Acp,
    /// Show the effective configuration and where each value came from.
    Config(ConfigArgs),
    /// List, add, forget and edit memory kept across sessions.
    Memory(MemoryArgs),
    /// Trust a project: let its eonyx.json set any key (provider, base_url, api_key_env, models, tool permissions).
    Trust(TrustArgs),
    /// Print shell completions.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    #[command(hide = true)]
    Manpage,
    /// The Landlock sandbox helper: confine this process, then run the
    /// command (eonyx runs it itself; docs/using-tools.md, section "Sandbox").
    #[command(hide = true, name = eonyx_sandbox::HELPER_SUBCOMMAND)]
    SandboxExec(SandboxExecArgs),
    /// The session's network namespace: its holder, or joining it before
    /// bubblewrap runs (eonyx runs it itself; docs/tools.md#one-network-per-session).
    #[command(hide = true, name = eonyx_sandbox::NET_SUBCOMMAND)]
    SandboxNet(SandboxExecArgs),
}

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// The helper's spec and command, after `--`.
    #[arg(raw = true)]
    pub args: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// The prompt; read from stdin when absent or `-`.
    pub prompt: Option<String>,
    /// Attach an image (png, jpeg, gif, webp) to the prompt; repeatable.
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<Utf8PathBuf>,
    /// Work on TEXT until it is achieved: eonyx continues by itself after
    /// each turn (exit 0 achieved, 1 blocked or out of budget, 130
    /// interrupted); without a prompt TEXT is the first message.
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,
    /// The goal's budget of continuation turns (default `goals.max_turns`).
    #[arg(long, value_name = "N", requires = "goal", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Only sessions whose title or text contains TEXT (case-insensitive).
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// Show at most N sessions.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// List the child sessions of tasks too.
    #[arg(long)]
    pub all: bool,
    #[command(subcommand)]
    pub command: Option<SessionsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Delete sessions (and their tasks' child sessions).
    Delete {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Rename a session.
    Rename { id: String, title: String },
    /// Print a session's transcript.
    Show {
        id: String,
        /// Show the request the model is sent next: system prompt (context
        /// files, date, summary) and retained messages, for the session's
        /// project; with --json, the exact request body.
        #[arg(long)]
        effective: bool,
    },
    /// Write a session as JSONL (the file, byte for byte), Markdown or one self-contained HTML page.
    Export {
        id: String,
        /// `jsonl` (default), `markdown` or `html`.
        #[arg(long, value_name = "FORMAT", default_value = "jsonl")]
        format: String,
        /// Write to FILE instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<String>,
    },
    /// Copy a session's history into a new session (the original is untouched).
    Fork {
        id: String,
        /// Copy the history as of this seq (see `sessions show`; default: all of it).
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
    },
    /// Check every session file and repair torn tails.
    Doctor,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Include the summary of this session.
    #[arg(short = 's', long = "session", value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Session to compact (default: the most recent of this project).
    #[arg(short = 's', long = "session", value_name = "ID")]
    pub session: Option<String>,
    /// What the summary should focus on.
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Forget the detected and learned context windows and refused parameters.
    #[arg(long)]
    pub reset_limits: bool,
}

#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub command: Option<MemoryCommand>,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Add an entry to this project's memory (or the global one).
    Add {
        /// Add to the global memory (every project).
        #[arg(long)]
        global: bool,
        /// The entry; several words are joined with spaces.
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Remove entries by id.
    Forget {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Open this project's memory file (or the global one) in $VISUAL or $EDITOR.
    Edit {
        /// Edit the global memory file.
        #[arg(long)]
        global: bool,
    },
    /// Print where the memory files are (global, then this project's).
    Path,
    /// Mine past sessions for memories now, in the foreground (by default
    /// the sessions a start would mine).
    Mine {
        /// Mine this session, however recent or short.
        #[arg(long, value_name = "ID", conflicts_with = "all")]
        session: Option<String>,
        /// Mine every eligible session of this project.
        #[arg(long)]
        all: bool,
    },
    /// Review the memories proposed from earlier sessions: accept, reject,
    /// edit or skip each (off a terminal, one answer a line on stdin:
    /// `a`, `r`, `e TEXT`, `s`).
    Review {
        #[command(flatten)]
        flags: eonyx_agent::mining::review::ReviewFlags,
    },
}

#[derive(Debug, Args)]
pub struct SkillsArgs {}

#[derive(Debug, Args)]
pub struct McpArgs {}

#[derive(Debug, Args)]
pub struct HooksArgs {}

#[derive(Debug, Args)]
pub struct PermissionsArgs {
    #[command(subcommand)]
    pub action: Option<PermissionsAction>,
}

#[derive(Debug, Subcommand)]
pub enum PermissionsAction {
    /// Remove rule N (as `eonyx permissions` numbers it), if eonyx saved it.
    Forget {
        /// The rule's number in `eonyx permissions`.
        number: usize,
    },
    /// What the rules decide about a shell command (allow, ask or deny),
    /// the rule and file that decided it, and the simple commands they
    /// looked at: `eonyx permissions check -- git -C . push`.
    Check {
        /// The command line, after `--` (its words are joined by spaces;
        /// quote it as one argument to keep its own quoting).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Project root to trust (default: the current project).
    pub path: Option<Utf8PathBuf>,
    /// Remove the trust instead.
    #[arg(long)]
    pub remove: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The command line, or how to exit when clap rejected it (already
/// reported).
pub fn parse(printer: &mut Printer) -> Result<Cli, crate::exit::Status> {
    let cli = Cli::try_parse().map_err(|e| usage_error(printer, &e))?;
    printer.set_json(cli.global.json);
    Ok(cli)
}

/// A command line clap rejects. Without `--json` clap reports it as
/// usual (help and `--version` included); with `--json` an `error` event
/// goes to stdout too, and the exit code is still 2.
fn usage_error(printer: &mut Printer, e: &clap::Error) -> crate::exit::Status {
    let wants_json = std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if !e.use_stderr() || !wants_json {
        e.exit();
    }
    let text = e.render().to_string();
    let first = text.split("\n\n").next().unwrap_or(&text).trim();
    let message = first.strip_prefix("error: ").unwrap_or(first);
    let _ = printer.json_error("usage", message);
    printer.err_raw(&text);
    crate::exit::Status::Usage
}
