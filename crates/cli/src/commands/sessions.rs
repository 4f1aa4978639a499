//! `eonyx sessions` (being built).

use crate::cli::{GlobalArgs, SessionsArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _args: &SessionsArgs,
) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx sessions` is not implemented yet")
}
