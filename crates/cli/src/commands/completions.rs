//! `eonyx completions SHELL` (being built).

use crate::cli::CompletionsArgs;
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(_printer: &mut Printer, _args: &CompletionsArgs) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx completions` is not implemented yet")
}
