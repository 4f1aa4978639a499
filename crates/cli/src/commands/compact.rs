//! `eonyx compact` (being built).

use crate::cli::{CompactArgs, GlobalArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _args: &CompactArgs,
) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx compact` is not implemented yet")
}
