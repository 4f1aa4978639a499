//! Deciding a shell command against the permission rules
//! (docs/tools.md#permission-rules): a four-command line (`cd src && cargo
//! test -q 2>&1 | tail -n 5; git status`) split and matched by the
//! session's policy against 200 rules (prefix, exact, write and read
//! globs, deny and ask rules, as config parses them), against the same
//! decision with one rule, in one run. Goal: under 1 ms per decision.
//! `EONYX_BENCH_SCALE` multiplies the time budget.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Duration;

use eonyx_config::permissions::{PermissionsFile, rules_of};
use eonyx_core::config::ToolsConfig;
use eonyx_core::permissions::{PermissionRules, RuleOrigin};
use eonyx_tests::bench;
use eonyx_tools::{ApprovalKind, McpPolicy, Permissions, PolicyApprover};

const LINE: &str = "cd src && cargo test -q 2>&1 | tail -n 5; git status";

/// A policy with `n` rules; the ones that cover [`LINE`] come last, so
/// every other rule is tried first.
fn policy(n: usize) -> PolicyApprover {
    let mut allow: Vec<String> = Vec::new();
    let mut ask = Vec::new();
    let mut deny = Vec::new();
    let filler = n.saturating_sub(4);
    for i in 0..filler {
        match i % 10 {
            0 => deny.push(format!("shell(rm{i}:*)")),
            1 => ask.push(format!("shell(git push{i}:*)")),
            2 => allow.push(format!("write(src/dir{i}/**)")),
            3 => allow.push(format!("read(~/notes{i}/**)")),
            4 => allow.push(format!("shell(make target{i})")),
            _ => allow.push(format!("shell(tool{i} sub:*)")),
        }
    }
    allow.extend(
        [
            "shell(cd:*)",
            "shell(cargo test:*)",
            "shell(tail:*)",
            "shell(git status)",
        ]
        .into_iter()
        .take(n)
        .map(str::to_owned),
    );
    let file = PermissionsFile {
        allow: Some(allow),
        ask: Some(ask),
        deny: Some(deny),
    };
    let rules = rules_of(&file, "/bench/config.toml".into(), RuleOrigin::Global, true);
    let tools = ToolsConfig {
        permissions: PermissionRules {
            rules,
            project_root: "/bench/project".into(),
            home: Some("/bench/home".into()),
        },
        ..ToolsConfig::default()
    };
    PolicyApprover::new(&tools, Permissions::NONE, McpPolicy::default(), None)
}

fn main() {
    let budget = Duration::from_millis(300) * u32::try_from(bench::scale()).unwrap_or(1);
    let kind = ApprovalKind::Shell {
        command: LINE.to_owned(),
    };
    let many = policy(200);
    let one = policy(1);
    assert_eq!(many.rules_len(), 200);
    assert_eq!(
        many.verdict(&kind),
        eonyx_tools::permissions::Verdict::Allow,
        "the 200 rules cover the line"
    );
    let ours = bench::median_within(budget, || many.verdict(&kind));
    let baseline = bench::median_within(budget, || one.verdict(&kind));
    println!(
        "{}",
        bench::Line::timed(
            "deciding a 4-command shell line against 200 permission rules (vs against 1 rule)",
            ours,
            baseline,
            "< 1 ms",
        )
    );
}
