//! `eonyx hooks`: the configured hooks (docs/hooks.md) with their event,
//! matcher, command, timeout, file and whether they run here (an untrusted
//! project's do not); `--json` for scripts. Also the REPL's `/hooks`.

use eonyx_config::{Config, HookDef};
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
        printer.info(NONE);
    } else {
        for line in table(&config) {
            printer.outln(&line)?;
        }
    }
    Ok(Status::Success)
}

pub const NONE: &str = "no hooks configured; add them under `hooks` in config.toml or a trusted eonyx.json (docs/hooks.md)";

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

fn runs(h: &HookDef) -> &'static str {
    if h.runs {
        "yes"
    } else {
        "no: project not trusted (eonyx trust)"
    }
}

/// One line per hook, columns aligned, with a header.
pub fn table(config: &Config) -> Vec<String> {
    let rows: Vec<[String; 6]> = config
        .hooks
        .hooks
        .iter()
        .map(|h| {
            [
                h.event.as_str().to_owned(),
                if h.matcher.is_empty() {
                    "*".to_owned()
                } else {
                    h.matcher.clone()
                },
                eonyx_core::text::ellipsize(&h.command, 60),
                format!("{}s", h.timeout_secs),
                h.file.to_string(),
                runs(h).to_owned(),
            ]
        })
        .collect();
    eonyx_core::text::columns(
        ["EVENT", "MATCHER", "COMMAND", "TIMEOUT", "FILE", "RUNS"],
        &rows,
    )
}

/// `/hooks`: the same table on stderr.
pub fn print_for_repl(printer: &Printer, config: &Config) {
    if config.hooks.hooks.is_empty() {
        printer.info(NONE);
        return;
    }
    for line in table(config) {
        printer.info(&line);
    }
}
