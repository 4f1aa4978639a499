//! Arbitrary lines through the shell grammar of the permission rules
//! (`eonyx_tools::cmdline`, docs/tools.md#permission-rules) and the rule
//! matcher, in both dialects: never a panic of eonyx's own, and a line not
//! understood (or holding an opaque command) is never allowed by a prefix
//! rule, whatever its words. A panic inside brush-parser is caught by
//! `split_as`, which leaves the line not understood: that is checked like
//! any other line instead of ending the run (docs/fuzzing.md).
#![no_main]

use eonyx_core::permissions::{PermissionRule, PermissionRules, Rule, RuleList, RuleOrigin, ShellRule};
use eonyx_tools::permissions::{RuleMatcher, Verdict};
use eonyx_tools::cmdline::{Dialect, split_as};
use libfuzzer_sys::fuzz_target;

/// libFuzzer's panic hook aborts on every panic, caught or not; panics of
/// the parser go on to `split_as`'s boundary instead.
fn let_parser_panics_unwind() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser = info
                .location()
                .is_some_and(|l| l.file().contains("brush-parser"));
            if !in_parser {
                abort(info);
            }
        }));
    });
}

fuzz_target!(|data: &[u8]| {
    let_parser_panics_unwind();
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
