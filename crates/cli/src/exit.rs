//! Exit codes (docs/cli.md#exit-codes): 0 success, 1 a turn or runtime failure, 2 usage or
//! config error, 130 interrupted. A closed stdout exits quietly.

use std::process::ExitCode;

use crate::printer::Printer;

/// `0.1.0 (abc1234)`: the version plus the short git commit when built from a
/// checkout (set by build.rs).
pub const VERSION: &str = env!("EONYX_VERSION");

/// How a command finished; the exit code of an error is its class's
/// (`eonyx_core::ErrorClass::exit_code`).
pub use eonyx_agent::Status;

/// Build a usage error (exit 2): a request the CLI refuses as given.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(eonyx_agent::InvalidRequest(msg.into()))
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

pub fn run(f: impl FnOnce(&mut Printer) -> anyhow::Result<Status>) -> ExitCode {
    let mut printer = Printer::new();
    let result = f(&mut printer);
    let _ = printer.flush();
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // `--json`: a failure before (or outside) the event stream is an
            // event too, unless the view already reported it.
            let class = eonyx_agent::class_of(err.chain());
            if printer.json() && !printer.json_error_written() {
                let _ = printer.json_error(class.name(), &Printer::error_message(&err));
                let _ = printer.flush();
            }
            printer.error(&err);
            ExitCode::from(class.exit_code())
        }
    }
}
