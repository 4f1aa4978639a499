//! `eonyx run` (being built).

use crate::cli::{GlobalArgs, RunArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _args: &RunArgs,
) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx run` is not implemented yet")
}
