//! `eonyx context` (being built).

use crate::cli::{ContextArgs, GlobalArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _args: &ContextArgs,
) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx context` is not implemented yet")
}
