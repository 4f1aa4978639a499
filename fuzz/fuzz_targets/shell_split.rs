//! Arbitrary lines through the shell grammar of the permission rules
//! (`eonyx_tools::cmdline`, docs/tools.md#permission-rules) and the rule
//! matcher, in both dialects: never a panic, and a line not understood (or
//! holding an opaque command) is never allowed by a prefix rule, whatever
//! its words.
#![no_main]

use eonyx_core::permissions::{PermissionRule, PermissionRules, Rule, RuleList, RuleOrigin, ShellRule};
use eonyx_tools::permissions::{RuleMatcher, Verdict};
use eonyx_tools::cmdline::{Dialect, split_as};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    for dialect in [Dialect::Bash, Dialect::Sh] {
        check(&line, dialect);
    }
});

fn check(line: &str, dialect: Dialect) {
    let parsed = split_as(line, dialect);
    // A prefix rule for the first words of every command: allowed only
    // when the line parsed and no command is opaque.
    let rules: Vec<PermissionRule> = parsed
        .commands
        .iter()
        .filter_map(|c| c.words.first())
        .filter(|w| !w.trim().is_empty())
        .map(|w| PermissionRule {
            list: RuleList::Allow,
            rule: Rule::Shell {
                shell: ShellRule::Prefix(w.clone()),
            },
            text: format!("shell({w}:*)"),
            file: "/fuzz/config.toml".into(),
            origin: RuleOrigin::Global,
            active: true,
        })
        .collect();
    let matcher = RuleMatcher::new(&PermissionRules {
        rules,
        project_root: "/fuzz".into(),
        home: None,
    });
    if matcher.shell_split(line, &parsed) == Verdict::Allow {
        assert!(parsed.parsed, "an unparsed line was allowed: {line:?}");
        assert!(
            parsed.commands.iter().all(|c| !c.opaque),
            "an opaque command was allowed by a prefix: {line:?}"
        );
    }
}
