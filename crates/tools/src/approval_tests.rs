//! Unit tests of `approval.rs`: the policy, labels and descriptions.

use super::super::test_support::*;
use super::*;

#[tokio::test]
async fn policy_approver_follows_spec_semantics() {
    let shell = ApprovalKind::Shell {
        command: "ls".into(),
    };
    let decide = |policy, allow_flag, ask: Option<std::sync::Arc<dyn Approver>>| {
        let a = PolicyApprover {
            ask,
            ..PolicyApprover::batch(
                policy,
                ShellPolicy::Deny,
                Permissions {
                    shell: allow_flag,
                    ..Permissions::NONE
                },
            )
        };
        let kind = shell.clone();
        async move { a.decide(&kind).await }
    };
    use std::sync::Arc;
    // batch/run: ask without a prompt denies; the flag or config allows.
    assert_eq!(decide(ShellPolicy::Ask, false, None).await, Decision::Deny);
    assert_eq!(decide(ShellPolicy::Ask, true, None).await, Decision::Allow);
    assert_eq!(
        decide(ShellPolicy::Allow, false, None).await,
        Decision::Allow
    );
    assert_eq!(
        decide(ShellPolicy::Deny, false, Some(Arc::new(AllowAll))).await,
        Decision::Deny
    );
    // REPL: ask delegates to the prompt.
    assert_eq!(
        decide(ShellPolicy::Ask, false, Some(Arc::new(AllowAll))).await,
        Decision::Allow
    );
    assert_eq!(
        decide(ShellPolicy::Ask, false, Some(Arc::new(DenyAll))).await,
        Decision::Deny
    );
}

#[tokio::test]
async fn write_policy_is_separate_from_shell_and_outside_needs_a_user() {
    use std::sync::Arc;
    let write = |outside| ApprovalKind::Write {
        tool: ToolName::WriteFile,
        path: "/p/a".into(),
        shown: "a".into(),
        diff: String::new(),
        outside,
        protected: false,
    };
    let p = |write_policy, allow_write, ask: Option<Arc<dyn Approver>>| PolicyApprover {
        ask,
        ..PolicyApprover::batch(
            ShellPolicy::Allow,
            write_policy,
            Permissions {
                shell: true,
                write: allow_write,
                mcp: false,
                web: false,
            },
        )
    };
    // --allow-shell does not allow writes.
    assert_eq!(
        p(ShellPolicy::Ask, false, None).decide(&write(false)).await,
        Decision::Deny
    );
    assert_eq!(
        p(ShellPolicy::Ask, true, None).decide(&write(false)).await,
        Decision::Allow
    );
    assert_eq!(
        p(ShellPolicy::Allow, false, None)
            .decide(&write(false))
            .await,
        Decision::Allow
    );
    // Outside: no user, no write, whatever the flags.
    assert_eq!(
        p(ShellPolicy::Allow, true, None).decide(&write(true)).await,
        Decision::Deny
    );
    let rec = Arc::new(Recorder::new(Decision::Allow));
    let allowed = p(ShellPolicy::Allow, true, Some(rec.clone()));
    assert_eq!(allowed.decide(&write(true)).await, Decision::Allow);
    assert_eq!(allowed.decide(&write(false)).await, Decision::Allow);
    assert_eq!(rec.asked().len(), 1, "only the outside write is asked");
    assert_eq!(
        p(ShellPolicy::Deny, false, Some(rec))
            .decide(&write(true))
            .await,
        Decision::Deny
    );
}

#[tokio::test]
async fn writes_to_git_or_eonyx_json_need_a_user_whatever_the_flags() {
    use std::sync::Arc;
    let protected = ApprovalKind::Write {
        tool: ToolName::EditFile,
        path: "/p/eonyx.json".into(),
        shown: "eonyx.json".into(),
        diff: String::new(),
        outside: false,
        protected: true,
    };
    assert_eq!(protected.class(), "write_protected");
    let p = |ask: Option<Arc<dyn Approver>>| PolicyApprover {
        ask,
        ..PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::ALL)
    };
    assert_eq!(p(None).decide(&protected).await, Decision::Deny);
    let rec = Arc::new(Recorder::new(Decision::Allow));
    assert_eq!(
        p(Some(rec.clone())).decide(&protected).await,
        Decision::Allow
    );
    assert_eq!(rec.asked(), vec![protected.clone()]);
    let deny = PolicyApprover {
        write: ShellPolicy::Deny,
        ..p(Some(rec))
    };
    assert_eq!(deny.decide(&protected).await, Decision::Deny);
}

#[tokio::test]
async fn attaching_from_outside_the_root_needs_a_user_whatever_the_flags() {
    use std::sync::Arc;
    let kind = ApprovalKind::Attach {
        path: "/etc/hosts".into(),
    };
    let batch = PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::ALL);
    assert_eq!(batch.decide(&kind).await, Decision::Deny);
    let rec = Arc::new(Recorder::new(Decision::Allow));
    let repl = PolicyApprover {
        ask: Some(rec.clone()),
        ..PolicyApprover::batch(ShellPolicy::Ask, ShellPolicy::Ask, Permissions::NONE)
    };
    assert_eq!(repl.decide(&kind).await, Decision::Allow);
    assert_eq!(rec.asked(), vec![kind.clone()]);
    assert_eq!(kind.class(), "attach_outside_project");
    assert_eq!(
        kind.describe(),
        "send a file from outside the project: /etc/hosts"
    );
}

#[test]
fn approval_kinds_describe_themselves() {
    let k = ApprovalKind::OutsideProject {
        tool: ToolName::ReadFile,
        path: "/etc/passwd".into(),
    };
    assert_eq!(k.class(), "outside_project");
    assert_eq!(k.describe(), "read_file outside the project: /etc/passwd");
    let k = ApprovalKind::Shell {
        command: "cargo test".into(),
    };
    assert_eq!(k.class(), "shell");
    assert_eq!(k.describe(), "run shell command: cargo test");
    let m = ApprovalKind::Mcp {
        server: "git".into(),
        tool: "mcp__git__git_status".into(),
        arguments: r#"{"repo_path":"."}"#.into(),
    };
    assert_eq!(m.class(), "mcp:mcp__git__git_status");
    assert_eq!(
        m.describe(),
        r#"call mcp__git__git_status (MCP server `git`) with {"repo_path":"."}"#
    );
    let t = ApprovalKind::Task {
        task: "run the tests".into(),
        kind: Box::new(k.clone()),
    };
    assert_eq!(t.class(), "shell", "\"always\" covers the same kind");
    assert_eq!(
        t.describe(),
        "[task: run the tests] run shell command: cargo test"
    );
    assert_eq!(t.innermost(), &k);
}

#[tokio::test]
async fn mcp_calls_follow_each_servers_approval_and_the_flag() {
    use std::sync::Arc;
    let call = |server: &str| ApprovalKind::Mcp {
        server: server.into(),
        tool: format!("mcp__{server}__t"),
        arguments: "{}".into(),
    };
    let p = |allow: bool, ask: Option<Arc<dyn Approver>>| PolicyApprover {
        shell: ShellPolicy::Allow,
        write: ShellPolicy::Allow,
        allowed: Permissions {
            mcp: allow,
            ..Permissions::ALL
        },
        web: Default::default(),
        mcp: McpPolicy {
            servers: [
                ("open".to_owned(), McpApproval::Allow),
                ("closed".to_owned(), McpApproval::Deny),
            ]
            .into(),
        },
        ask,
        rules: Arc::default(),
    };
    // Batch / run: "ask" denies, whatever the shell and write flags.
    assert_eq!(p(false, None).decide(&call("other")).await, Decision::Deny);
    assert_eq!(p(true, None).decide(&call("other")).await, Decision::Allow);
    assert_eq!(p(false, None).decide(&call("open")).await, Decision::Allow);
    // "deny" wins over --allow-mcp and over a user.
    let yes: Arc<dyn Approver> = Arc::new(AllowAll);
    assert_eq!(
        p(true, Some(yes.clone())).decide(&call("closed")).await,
        Decision::Deny
    );
    // The REPL asks for "ask".
    let rec = Arc::new(Recorder::new(Decision::Allow));
    assert_eq!(
        p(false, Some(rec.clone())).decide(&call("other")).await,
        Decision::Allow
    );
    assert_eq!(rec.asked().len(), 1);
}

#[tokio::test]
async fn rules_go_before_flags_and_settings() {
    use eonyx_core::permissions::{Rule, RuleList, ShellRule};
    use std::sync::Arc;
    let rule = |list, shell, text: &str| global_rule(list, Rule::Shell { shell }, text, true);
    let tools = eonyx_core::config::ToolsConfig {
        permissions: project_rules(vec![
            rule(
                RuleList::Allow,
                ShellRule::Prefix("cargo test".into()),
                "shell(cargo test:*)",
            ),
            rule(
                RuleList::Ask,
                ShellRule::Prefix("git push".into()),
                "shell(git push:*)",
            ),
            rule(
                RuleList::Deny,
                ShellRule::Prefix("rm".into()),
                "shell(rm:*)",
            ),
        ]),
        ..Default::default()
    };
    let sh = |c: &str| ApprovalKind::Shell { command: c.into() };
    // Batch without flags: the allowed prefix runs, nothing else.
    let batch = PolicyApprover::new(&tools, Permissions::NONE, McpPolicy::default(), None);
    assert_eq!(batch.decide(&sh("cargo test -q")).await, Decision::Allow);
    assert_eq!(batch.decide(&sh("cargo test && ls")).await, Decision::Deny);
    // --allow-shell: deny and ask rules still hold (ask denies in batch).
    let flags = PolicyApprover::new(&tools, Permissions::ALL, McpPolicy::default(), None);
    assert_eq!(flags.decide(&sh("ls")).await, Decision::Allow);
    assert_eq!(flags.decide(&sh("rm -rf x")).await, Decision::Deny);
    assert_eq!(flags.decide(&sh("git push")).await, Decision::Deny);
    let why = flags.rule_denial(&sh("rm x")).unwrap();
    assert!(
        why.contains("`shell(rm:*)`") && why.contains("/c/config.toml"),
        "{why}"
    );
    let why = flags.rule_denial(&sh("git push")).unwrap();
    assert!(
        why.contains("`shell(git push:*)`") && why.contains("no one to ask"),
        "{why}"
    );
    assert_eq!(flags.rule_denial(&sh("ls")), None);
    // The REPL asks an ask rule even with the flag; a user's yes never
    // passes a deny rule (a hook's allow is such a yes).
    let rec = Arc::new(Recorder::new(Decision::Allow));
    let repl = PolicyApprover::new(
        &tools,
        Permissions::ALL,
        McpPolicy::default(),
        Some(rec.clone()),
    );
    assert_eq!(repl.decide(&sh("git push")).await, Decision::Allow);
    assert_eq!(rec.asked().len(), 1);
    assert_eq!(repl.decide(&sh("rm x")).await, Decision::Deny);
    assert_eq!(rec.asked().len(), 1);
}

#[tokio::test]
async fn reads_inside_the_project_are_stopped_only_by_rules() {
    use eonyx_core::permissions::{Rule, RuleList};
    use std::sync::Arc;
    let rule = |list, glob: &str| {
        global_rule(
            list,
            Rule::Read { glob: glob.into() },
            format!("read({glob})"),
            true,
        )
    };
    let tools = eonyx_core::config::ToolsConfig {
        permissions: project_rules(vec![
            rule(RuleList::Deny, "secret/**"),
            rule(RuleList::Ask, "notes/**"),
        ]),
        ..Default::default()
    };
    let read = |p: &str| ApprovalKind::Read {
        tool: ToolName::ReadFile,
        path: p.into(),
    };
    let yes = Arc::new(Recorder::new(Decision::Allow));
    let policy = PolicyApprover::new(
        &tools,
        Permissions::ALL,
        McpPolicy::default(),
        Some(yes.clone()),
    );
    assert_eq!(
        policy.decide_read(&read("/p/secret/k")).await,
        Decision::Deny
    );
    assert_eq!(
        policy.decide_read(&read("/p/src/lib.rs")).await,
        Decision::Allow
    );
    assert!(yes.asked().is_empty(), "nothing asked for a free read");
    // An ask rule asks (the user said yes), and only then.
    assert_eq!(
        policy.decide_read(&read("/p/notes/a")).await,
        Decision::Allow
    );
    assert_eq!(yes.asked(), vec![read("/p/notes/a")]);
    assert!(
        policy
            .rule_denial(&read("/p/secret/k"))
            .unwrap()
            .contains("read(secret/**)")
    );
    // No one to ask: denied. An approver that denies everything denies
    // reads too (no method defaults to allow).
    let batch = PolicyApprover::new(&tools, Permissions::ALL, McpPolicy::default(), None);
    assert_eq!(batch.decide_read(&read("/p/notes/a")).await, Decision::Deny);
    assert_eq!(
        DenyAll.decide_read(&read("/p/secret/k")).await,
        Decision::Deny
    );
    assert!(batch.read_rules().is_some());
}

/// One rule as the global config file `/c/config.toml` gives it (an
/// inactive one is an untrusted project's `allow`).
fn global_rule(
    list: eonyx_core::permissions::RuleList,
    rule: eonyx_core::permissions::Rule,
    text: impl Into<String>,
    active: bool,
) -> eonyx_core::permissions::PermissionRule {
    eonyx_core::permissions::PermissionRule {
        list,
        rule,
        text: text.into(),
        file: "/c/config.toml".into(),
        origin: eonyx_core::permissions::RuleOrigin::Global,
        active,
    }
}

/// `rules` for the project at `/p`.
fn project_rules(
    rules: Vec<eonyx_core::permissions::PermissionRule>,
) -> eonyx_core::permissions::PermissionRules {
    eonyx_core::permissions::PermissionRules {
        rules,
        project_root: "/p".into(),
        home: None,
    }
}

#[path = "approval/web_fetch_tests.rs"]
mod web_fetch;
