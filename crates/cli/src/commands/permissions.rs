//! `eonyx permissions`: every permission rule (docs/tools.md#permission-rules)
//! numbered, with its list, its file and whether it applies here (an
//! untrusted project's `allow` rules do not); `--json` for scripts.
//! `eonyx permissions forget N` removes a rule eonyx saved (`p` in the
//! REPL) and names the file to edit for the others. `eonyx permissions
//! check -- COMMAND` renders what `eonyx_tools::check` decides.

use eonyx_agent::permission_rules::{self, ForgetError};
use eonyx_core::permissions::PermissionRule;
use serde_json::json;

use crate::cli::{GlobalArgs, PermissionsAction, PermissionsArgs};
use crate::exit::{Status, usage};
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &PermissionsArgs,
) -> anyhow::Result<Status> {
    let super::Setup { config, .. } = super::setup(printer, global)?;
    let rules = &config.tools.permissions.rules;
    match &args.action {
        Some(PermissionsAction::Forget { number }) => forget(printer, rules, *number),
        Some(PermissionsAction::Check { command }) => {
            let report = eonyx_agent::tools::check::check_shell(&config.tools, &command.join(" "));
            if printer.json() {
                printer.outln(&serde_json::to_string_pretty(&report)?)?;
            } else {
                for line in report.lines() {
                    printer.outln(&line)?;
                }
            }
            Ok(Status::Success)
        }
        None if printer.json() => {
            let v: Vec<_> = rules
                .iter()
                .enumerate()
                .map(|(i, r)| to_json(i + 1, r))
                .collect();
            printer.outln(&serde_json::to_string_pretty(&v)?)?;
            Ok(Status::Success)
        }
        None if rules.is_empty() => {
            printer.info(permission_rules::NONE);
            Ok(Status::Success)
        }
        None => {
            for line in permission_rules::table(rules) {
                printer.outln(&line)?;
            }
            Ok(Status::Success)
        }
    }
}

fn to_json(n: usize, r: &PermissionRule) -> serde_json::Value {
    json!({
        "number": n,
        "list": r.list.as_str(),
        "rule": r.text,
        "file": r.file,
        "origin": permission_rules::origin(r),
        "applies": r.active,
    })
}

fn forget(
    printer: &mut Printer,
    rules: &[PermissionRule],
    number: usize,
) -> anyhow::Result<Status> {
    match permission_rules::forget(rules, number) {
        Ok(rule) => {
            printer.info(&permission_rules::forgotten(number, &rule));
            Ok(Status::Success)
        }
        Err(ForgetError::Config(e)) => Err(e.into()),
        Err(e) => Err(usage(e.to_string())),
    }
}
