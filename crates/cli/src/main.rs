//! The `eonyx` binary: parse, dispatch, print. Everything else lives in the
//! library crates.

mod cli;
mod commands;
mod event;
mod exit;
mod printer;
mod stdin;

fn main() -> std::process::ExitCode {
    exit::run(|printer| match cli::parse(printer) {
        Ok(cli) => commands::dispatch(printer, cli),
        Err(status) => Ok(status),
    })
}
