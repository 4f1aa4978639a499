//! `eonyx permissions`: every permission rule (docs/tools.md#permission-rules)
//! numbered, with its list, its file and whether it applies here (an
//! untrusted project's `allow` rules do not); `--json` for scripts.
//! `eonyx permissions forget N` removes a rule eonyx saved (`p` in the
//! REPL) and names the file to edit for the others.

use eonyx_config::Config;
use eonyx_core::permissions::{PermissionRule, RuleOrigin};
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
        Some(PermissionsAction::Forget { number }) => forget(printer, &config, *number),
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
            printer.info(NONE);
            Ok(Status::Success)
        }
        None => {
            for line in table(&config) {
                printer.outln(&line)?;
            }
            Ok(Status::Success)
        }
    }
}

pub const NONE: &str = "no permission rules; add them under [permissions] (allow, ask, deny) in \
     config.toml or a trusted eonyx.json, or answer `p` to an approval in the REPL \
     (docs/tools.md#permission-rules)";

fn origin(r: &PermissionRule) -> &'static str {
    match r.origin {
        RuleOrigin::Global => "config",
        RuleOrigin::Project => "project",
        RuleOrigin::Saved => "saved",
    }
}

fn to_json(n: usize, r: &PermissionRule) -> serde_json::Value {
    json!({
        "number": n,
        "list": r.list.as_str(),
        "rule": r.text,
        "file": r.file,
        "origin": origin(r),
        "applies": r.active,
    })
}

fn applies(r: &PermissionRule) -> &'static str {
    if r.active {
        "yes"
    } else {
        "no: project not trusted (eonyx trust)"
    }
}

/// One line per rule, numbered, columns aligned, with a header.
pub fn table(config: &Config) -> Vec<String> {
    let rows: Vec<[String; 5]> = config
        .tools
        .permissions
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            [
                (i + 1).to_string(),
                r.list.as_str().to_owned(),
                r.text.clone(),
                format!("{} ({})", r.file, origin(r)),
                applies(r).to_owned(),
            ]
        })
        .collect();
    let header = ["#", "LIST", "RULE", "FILE", "APPLIES"].map(str::to_owned);
    let mut widths = [0usize; 5];
    for r in std::iter::once(&header).chain(&rows) {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    std::iter::once(&header)
        .chain(&rows)
        .map(|r| {
            let mut line = String::new();
            for (i, (c, w)) in r.iter().zip(widths).enumerate() {
                if i + 1 == r.len() {
                    line.push_str(c);
                } else {
                    line.push_str(&format!("{c:<w$}  "));
                }
            }
            line
        })
        .collect()
}

fn forget(printer: &mut Printer, config: &Config, number: usize) -> anyhow::Result<Status> {
    let rules = &config.tools.permissions.rules;
    let Some(rule) = number.checked_sub(1).and_then(|i| rules.get(i)) else {
        return Err(usage(format!(
            "there is no permission rule {number}; `eonyx permissions` lists {} rule(s), numbered from 1",
            rules.len()
        )));
    };
    match rule.origin {
        RuleOrigin::Saved => {
            eonyx_config::permissions::forget_rule(&rule.file, rule.list, &rule.text)?;
            printer.info(&format!(
                "forgot rule {number}: {} `{}` (from {})",
                rule.list, rule.text, rule.file
            ));
            Ok(Status::Success)
        }
        RuleOrigin::Global | RuleOrigin::Project => Err(usage(format!(
            "rule {number} `{}` was not saved by eonyx: it is in the `permissions.{}` list of {}; edit that file to remove it",
            rule.text, rule.list, rule.file
        ))),
    }
}
