//! `eonyx` with no subcommand: the REPL on a terminal, a batch run when
//! stdin is piped (being built).

use crate::cli::{GlobalArgs, SessionArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _session: &SessionArgs,
    _new: bool,
) -> anyhow::Result<Status> {
    anyhow::bail!("the REPL is not implemented yet")
}
