//! Exit codes (docs/cli.md#exit-codes): 0 success, 1 a turn or runtime failure, 2 usage or
//! config error, 130 interrupted. A closed stdout exits quietly.

use std::process::ExitCode;

use crate::printer::Printer;

/// `0.1.0 (abc1234)`: the version plus the short git commit when built from a
/// checkout (set by build.rs).
pub const VERSION: &str = env!("EONYX_VERSION");

/// How a command finished when it did not fail with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    /// A turn failed; the error was already reported.
    Failed,
    /// Usage or config problem already reported.
    Usage,
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Failed => 1,
            Status::Usage => 2,
            Status::Interrupted => 130,
        }
    }
}

/// An error that is the user's to fix by changing the command or config:
/// exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Build a usage error (exit 2).
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// A provider that cannot be built from the config (no key for a hosted
/// API, a bad base URL): exit code 2, class `config`.
#[derive(Debug)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// The `class` of a JSON `error` event for an error that ended a command.
pub fn class_for(err: &anyhow::Error) -> &'static str {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<eonyx_agent::AgentError>() {
            return e.class();
        }
        if cause.is::<UsageError>() || cause.is::<eonyx_core::SessionIdError>() {
            return "usage";
        }
        if cause.is::<eonyx_config::ConfigError>() || cause.is::<SetupError>() {
            return "config";
        }
        if let Some(e) = cause.downcast_ref::<eonyx_store::StoreError>() {
            return if e.is_usage() {
                "usage"
            } else if e.is_in_use() {
                "session_in_use"
            } else if e.is_not_found() {
                "not_found"
            } else {
                "store"
            };
        }
        if let Some(e) = cause.downcast_ref::<eonyx_core::ProviderError>() {
            return e.class();
        }
        if cause.is::<std::io::Error>() {
            return "io";
        }
    }
    "error"
}

/// Exit code for an error: 2 for usage and config errors, 130 for
/// interruption, 1 otherwise.
pub fn code_for(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<UsageError>()
            || cause.is::<SetupError>()
            || cause.is::<eonyx_config::ConfigError>()
            || cause.is::<eonyx_core::SessionIdError>()
        {
            return 2;
        }
        if cause
            .downcast_ref::<eonyx_store::StoreError>()
            .is_some_and(eonyx_store::StoreError::is_usage)
        {
            return 2;
        }
        if let Some(eonyx_core::ProviderError::Cancelled) =
            cause.downcast_ref::<eonyx_core::ProviderError>()
        {
            return 130;
        }
    }
    1
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
            if printer.json() && !printer.json_error_written() {
                let _ = printer.json_error(class_for(&err), &Printer::error_message(&err));
                let _ = printer.flush();
            }
            printer.error(&err);
            ExitCode::from(code_for(&err))
        }
    }
}
