//! One module per command. Each takes the parsed arguments and the printer.

pub mod compact;
pub mod completions;
pub mod config;
pub mod context;
pub mod cost;
pub mod doctor;
pub mod export;
pub mod hooks;
pub mod interactive;
pub mod mcp;
pub mod memory;
pub mod mining;
pub mod permissions;
pub mod reasoning;
pub mod repl;
pub mod run;
pub mod sessions;
pub mod skills;
pub mod ui;

use anyhow::Context as _;
use camino::Utf8PathBuf;
use eonyx_config::{Config, LoadOptions};
use eonyx_core::paths::{self, Env};

use crate::cli::{Cli, Command, GlobalArgs};
use crate::printer::Printer;

/// What a command that needs no model starts from: the working directory,
/// the process environment and the config loaded for them.
pub struct Setup {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    pub config: Config,
}

/// Load the config for the working directory with `--model`/`--profile`,
/// printing its warnings.
pub fn setup(printer: &mut Printer, global: &GlobalArgs) -> anyhow::Result<Setup> {
    let cwd = paths::current_dir().context("cannot determine the current directory")?;
    let env = Env::from_process();
    let config = eonyx_config::load(&LoadOptions {
        cwd: cwd.clone(),
        env: env.clone(),
        model: global.model.clone(),
        profile: global.profile.clone(),
    })?;
    for w in &config.warnings {
        printer.warn(w);
    }
    Ok(Setup { cwd, env, config })
}

/// [`setup`]'s config for a command that works without one (listing,
/// showing, exporting): a config that does not load is a warning saying
/// what is left out (`without`), not an error.
pub fn lenient_config(printer: &mut Printer, global: &GlobalArgs, without: &str) -> Option<Config> {
    match setup(printer, global) {
        Ok(s) => Some(s.config),
        Err(e) => {
            printer.warn(&format!("{e:#}; {without}"));
            None
        }
    }
}

/// The store of the data dir (`EONYX_DATA_DIR`, else the XDG location).
pub fn open_store() -> anyhow::Result<eonyx_store::Store> {
    let dir = eonyx_config::paths::data_dir(&Env::from_process())?;
    eonyx_store::Store::open(&dir).with_context(|| format!("cannot open the data dir {dir}"))
}

/// `eonyx sandbox-exec -- SPEC -- COMMAND…`: the Landlock helper. It only
/// returns when it could not confine or run the command (or, with
/// `--probe`, with what it enforced, for the parent to read on stdout).
pub fn sandbox_exec(
    printer: &mut Printer,
    args: crate::cli::SandboxExecArgs,
) -> anyhow::Result<crate::exit::Status> {
    let enforced = eonyx_sandbox::run_helper(args.args)?;
    printer.outln(&enforced)?;
    Ok(crate::exit::Status::Success)
}

/// `eonyx sandbox-net -- hold`: make the session's network namespace,
/// print its id for the parent, and hold it until stdin closes; `eonyx
/// sandbox-net -- join PID ID -- COMMAND…`: run the command in it (returns
/// only when it could not).
pub fn sandbox_net(
    printer: &mut Printer,
    args: crate::cli::SandboxExecArgs,
) -> anyhow::Result<crate::exit::Status> {
    match eonyx_sandbox::netns::run_net(args.args)? {
        eonyx_sandbox::netns::NetStep::Held(id) => {
            printer.outln(&id)?;
            printer.flush()?;
            eonyx_sandbox::netns::hold_until_eof();
        }
    }
    Ok(crate::exit::Status::Success)
}

/// `eonyx job-keeper [--session] -- COMMAND…`, when that is how eonyx was
/// started: the keeper of one background job
/// (`eonyx_tools::jobs::run_keeper`); `None` otherwise.
pub fn job_keeper() -> Option<std::process::ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != eonyx_agent::tools::jobs::KEEPER_SUBCOMMAND {
        return None;
    }
    match eonyx_agent::tools::jobs::run_keeper(args.collect()) {
        Ok(code) => Some(std::process::ExitCode::from(code)),
        Err(e) => {
            let mut printer = Printer::new();
            printer.error(&anyhow::Error::new(e));
            let _ = printer.flush();
            Some(std::process::ExitCode::from(127))
        }
    }
}

/// Run the command `cli` names.
pub fn dispatch(printer: &mut Printer, cli: Cli) -> anyhow::Result<crate::exit::Status> {
    match cli.command {
        None => interactive::run(printer, &cli.global, &cli.session, cli.new),
        Some(Command::Run(args)) => run::run(printer, &cli.global, &args),
        Some(Command::Sessions(args)) => sessions::run(printer, &cli.global, &args),
        Some(Command::Context(args)) => context::run(printer, &cli.global, &args),
        Some(Command::Compact(args)) => compact::run(printer, &cli.global, &args),
        Some(Command::Skills(args)) => skills::run(printer, &cli.global, &args),
        Some(Command::Mcp(args)) => mcp::run(printer, &cli.global, &args),
        Some(Command::Hooks(args)) => hooks::run(printer, &cli.global, &args),
        Some(Command::Permissions(args)) => permissions::run(printer, &cli.global, &args),
        Some(Command::Config(args)) => config::run(printer, &cli.global, &args),
        Some(Command::Memory(args)) => memory::run(printer, &cli.global, &args),
        Some(Command::Trust(args)) => config::trust(printer, &cli.global, &args),
        Some(Command::Completions(args)) => completions::run(printer, &args),
        Some(Command::Manpage) => completions::manpage(printer),
        Some(Command::SandboxExec(args)) => sandbox_exec(printer, args),
        Some(Command::SandboxNet(args)) => sandbox_net(printer, args),
        Some(Command::Acp) => acp(&cli.global),
    }
}

/// The async runtime a command runs the agent in.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `eonyx acp`: the Agent Client Protocol on stdin/stdout (docs/acp.md);
/// everything else is `eonyx-acp`'s.
pub fn acp(global: &GlobalArgs) -> anyhow::Result<crate::exit::Status> {
    eonyx_acp::serve(eonyx_acp::AcpOptions {
        model: global.model.clone(),
        profile: global.profile.clone(),
        permissions: global.allow.permissions(),
        sandbox_helper: std::env::current_exe().ok(),
    })?;
    Ok(crate::exit::Status::Success)
}

pub use eonyx_agent::commands::text::column_widths;
