//! `eonyx config` and `eonyx trust` (being built).

use crate::cli::{ConfigArgs, GlobalArgs, TrustArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _args: &ConfigArgs,
) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx config` is not implemented yet")
}

pub fn trust(
    _printer: &mut Printer,
    _global: &GlobalArgs,
    _args: &TrustArgs,
) -> anyhow::Result<Status> {
    anyhow::bail!("`eonyx trust` is not implemented yet")
}
