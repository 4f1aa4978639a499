//! `eonyx hooks`: the configured hooks (docs/hooks.md) with their event,
//! matcher, command, timeout, file and whether they run here (an untrusted
//! project's do not); `--json` for scripts. The table is the one `/hooks`
//! shows.

use eonyx_agent::commands::text::lists;
use eonyx_config::HookDef;
use serde_json::json;

use crate::cli::{GlobalArgs, HooksArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    _args: &HooksArgs,
) -> anyhow::Result<Status> {
    let super::Setup { config, .. } = super::setup(printer, global)?;
    if printer.json() {
        let v: Vec<_> = config.hooks.hooks.iter().map(to_json).collect();
        printer.outln(&serde_json::to_string_pretty(&v)?)?;
    } else if config.hooks.hooks.is_empty() {
        printer.info(lists::NO_HOOKS);
    } else {
        for line in lists::hooks_table(&config) {
            printer.outln(&line)?;
        }
    }
    Ok(Status::Success)
}

fn to_json(h: &HookDef) -> serde_json::Value {
    json!({
        "event": h.event.as_str(),
        "matcher": h.matcher,
        "command": h.command,
        "timeout": h.timeout_secs,
        "file": h.file,
        "runs": h.runs,
    })
}
