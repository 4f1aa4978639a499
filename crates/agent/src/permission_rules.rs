//! The permission rules as the user sees and edits them
//! (docs/tools.md#permission-rules): numbered in one order everywhere
//! (`eonyx permissions`, `/permissions` in the REPL, a batch and ACP),
//! listed as one table, and `forget N` for the rules eonyx saved (`p` in
//! the REPL). Matching them is `eonyx_tools::permissions`'; parsing and
//! the saved file are `eonyx_config::permissions`'.

use camino::Utf8PathBuf;
use eonyx_config::{Config, ConfigError};
use eonyx_core::permissions::{PermissionRule, RuleList, RuleOrigin};

/// What the list says when there are no rules.
pub const NONE: &str = "no permission rules; add them under [permissions] (allow, ask, deny) in \
     config.toml or a trusted eonyx.json, or answer `p` to an approval in the REPL \
     (docs/tools.md#permission-rules)";

/// The rules as they stand now: `config`'s from `config.toml` and
/// `eonyx.json`, and the project's saved rule file read again (a rule `p`
/// saved since `config` was loaded is listed, one forgotten is not), in
/// the order `eonyx permissions` numbers them.
pub fn current(config: &Config) -> Result<Vec<PermissionRule>, ConfigError> {
    let mut rules: Vec<PermissionRule> = config
        .tools
        .permissions
        .rules
        .iter()
        .filter(|r| r.origin != RuleOrigin::Saved)
        .cloned()
        .collect();
    if let Some(saved) = &config.permissions_file {
        rules.extend(eonyx_config::permissions::saved_rules(saved)?);
    }
    Ok(rules)
}

/// `config`, `project` or `saved`: where a rule came from, in a word.
pub fn origin(r: &PermissionRule) -> &'static str {
    match r.origin {
        RuleOrigin::Global => "config",
        RuleOrigin::Project => "project",
        RuleOrigin::Saved => "saved",
    }
}

/// Whether a rule applies here, in words.
pub fn applies(r: &PermissionRule) -> &'static str {
    if r.active {
        "yes"
    } else {
        "no: project not trusted (eonyx trust)"
    }
}

/// One line per rule, numbered from 1, columns aligned, under a header
/// (`#  LIST  RULE  FILE  APPLIES`).
pub fn table(rules: &[PermissionRule]) -> Vec<String> {
    let rows: Vec<[String; 5]> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            [
                (i + 1).to_string(),
                r.list.as_str().to_owned(),
                eonyx_core::text::escape_controls(&r.text, true).into_owned(),
                format!("{} ({})", r.file, origin(r)),
                applies(r).to_owned(),
            ]
        })
        .collect();
    eonyx_core::text::columns(["#", "LIST", "RULE", "FILE", "APPLIES"], &rows)
}

/// Why `forget N` removed nothing.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error(
        "there is no permission rule {number}; the list has {count} rule(s), numbered from 1 (`eonyx permissions` or /permissions shows them)"
    )]
    NoSuchRule { number: usize, count: usize },
    #[error(
        "rule {number} `{text}` was not saved by eonyx: it is in the `permissions.{list}` list of {file}; edit that file to remove it"
    )]
    NotSaved {
        number: usize,
        text: String,
        list: RuleList,
        file: Utf8PathBuf,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Removes rule `number` of `rules` (as [`table`] numbers them) from the
/// saved rule file, if eonyx saved it; the rule removed.
pub fn forget(rules: &[PermissionRule], number: usize) -> Result<PermissionRule, ForgetError> {
    let Some(rule) = number.checked_sub(1).and_then(|i| rules.get(i)) else {
        return Err(ForgetError::NoSuchRule {
            number,
            count: rules.len(),
        });
    };
    match rule.origin {
        RuleOrigin::Saved => {
            eonyx_config::permissions::forget_rule(&rule.file, rule.list, &rule.text)?;
            Ok(rule.clone())
        }
        RuleOrigin::Global | RuleOrigin::Project => Err(ForgetError::NotSaved {
            number,
            text: rule.text.clone(),
            list: rule.list,
            file: rule.file.clone(),
        }),
    }
}

/// What a frontend says once rule `number` was forgotten.
pub fn forgotten(number: usize, rule: &PermissionRule) -> String {
    format!(
        "forgot rule {number}: {} `{}` (from {}); sessions started from now on no longer follow it",
        rule.list, rule.text, rule.file
    )
}
