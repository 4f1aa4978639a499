//! The `eonyx` binary: parse, dispatch, print. Everything else lives in the
//! library crates.

mod cli;
mod commands;
mod event;
mod exit;
mod printer;
mod stdin;

fn main() -> std::process::ExitCode {
    // A background job's keeper (docs/tools.md#jobs): no config, no printer
    // but for its one error.
    if let Some(code) = commands::job_keeper() {
        return code;
    }
    exit::run(|printer| match cli::parse(printer) {
        Ok(cli) => commands::dispatch(printer, cli),
        Err(status) => Ok(status),
    })
}
