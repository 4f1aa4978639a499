//! Unit tests of the `web_fetch` decision: rules, the tool's setting, the
//! flag and the listed domains, and who is asked.

use std::sync::Arc;

use eonyx_core::config::{ToolsConfig, WebFetchConfig, WebFetchPolicy};
use eonyx_core::permissions::{PermissionRules, Rule, RuleList};

use super::super::*;
use super::{global_rule, project_rules};
use crate::test_support::Recorder;

fn web(policy: WebFetchPolicy, domains: &[&str]) -> WebFetchConfig {
    WebFetchConfig {
        policy,
        domains: domains.iter().map(|d| (*d).to_owned()).collect(),
        ..WebFetchConfig::default()
    }
}

/// Rules as `(list, host, active)`; inactive is an untrusted
/// project's `allow`.
fn rules(rules: &[(RuleList, &str, bool)]) -> PermissionRules {
    project_rules(
        rules
            .iter()
            .map(|(list, host, active)| {
                let rule = Rule::WebFetch {
                    host: (*host).into(),
                };
                global_rule(*list, rule, format!("web_fetch({host})"), *active)
            })
            .collect(),
    )
}

fn fetch(url: &str) -> ApprovalKind {
    let u = eonyx_web::parse_url(url).unwrap();
    ApprovalKind::WebFetch {
        host: u.host_str().unwrap().to_owned(),
        url: u.to_string(),
    }
}

#[test]
fn deny_wins_over_the_flag_and_the_domains() {
    let w = web(WebFetchPolicy::Deny, &["docs.rs"]);
    let none = RuleMatcher::default();
    assert_eq!(
        web_fetch_verdict(&w, &none, true, "docs.rs:443"),
        WebFetchVerdict::Deny { rule: None }
    );
}

#[test]
fn the_flag_allow_and_listed_domains_allow_and_the_rest_asks() {
    let none = RuleMatcher::default();
    let ask = web(WebFetchPolicy::Ask, &["docs.rs", "*.python.org"]);
    let v = |w: &WebFetchConfig, flag, host| web_fetch_verdict(w, &none, flag, host);
    assert_eq!(v(&ask, false, "docs.rs:443"), WebFetchVerdict::Allow);
    assert_eq!(v(&ask, false, "docs.python.org:80"), WebFetchVerdict::Allow);
    assert_eq!(
        v(&ask, false, "example.com:443"),
        WebFetchVerdict::Ask { rule: None }
    );
    assert_eq!(v(&ask, true, "example.com:443"), WebFetchVerdict::Allow);
    let allow = web(WebFetchPolicy::Allow, &[]);
    assert_eq!(v(&allow, false, "example.com:443"), WebFetchVerdict::Allow);
}

#[test]
fn rules_go_first_deny_then_ask_then_allow() {
    let m = RuleMatcher::new(&rules(&[
        (RuleList::Deny, "evil.example", true),
        (RuleList::Ask, "*.example.com", true),
        (RuleList::Allow, "docs.rs", true),
        (RuleList::Allow, "a.example.com", true),
        (RuleList::Allow, "127.0.0.1:8080", true),
    ]));
    let open = web(WebFetchPolicy::Allow, &["evil.example"]);
    // A deny rule beats `allow`, the domains and the flag.
    assert!(matches!(
        web_fetch_verdict(&open, &m, true, "evil.example:443"),
        WebFetchVerdict::Deny { rule: Some(r) } if r.text == "web_fetch(evil.example)"
    ));
    // An ask rule beats an allow rule, `allow` and the flag.
    assert!(matches!(
        web_fetch_verdict(&open, &m, true, "a.example.com:443"),
        WebFetchVerdict::Ask { rule: Some(_) }
    ));
    // An allow rule beats `ask` with no flag; a port in a rule is
    // that port only.
    let strict = web(WebFetchPolicy::Ask, &[]);
    assert_eq!(
        web_fetch_verdict(&strict, &m, false, "docs.rs:443"),
        WebFetchVerdict::Allow
    );
    assert_eq!(
        web_fetch_verdict(&strict, &m, false, "127.0.0.1:8080"),
        WebFetchVerdict::Allow
    );
    assert_eq!(
        web_fetch_verdict(&strict, &m, false, "127.0.0.1:8081"),
        WebFetchVerdict::Ask { rule: None }
    );
    // Rules come before the tool's setting, as for shell: an allow
    // rule is the user's own, more specific word.
    let deny = web(WebFetchPolicy::Deny, &[]);
    assert_eq!(
        web_fetch_verdict(&deny, &m, false, "docs.rs:443"),
        WebFetchVerdict::Allow
    );
}

#[tokio::test]
async fn an_untrusted_allow_rule_is_ignored_and_its_deny_applied() {
    let tools = ToolsConfig {
        permissions: rules(&[
            (RuleList::Allow, "docs.rs", false),
            (RuleList::Deny, "evil.example", true),
        ]),
        ..ToolsConfig::default()
    };
    let batch = PolicyApprover::new(&tools, Permissions::NONE, McpPolicy::default(), None);
    assert_eq!(
        batch.decide(&fetch("https://docs.rs/x")).await,
        Decision::Deny
    );
    assert_eq!(batch.rule_denial(&fetch("https://docs.rs/x")), None);
    let flag = PolicyApprover::new(
        &tools,
        Permissions {
            web: true,
            ..Permissions::NONE
        },
        McpPolicy::default(),
        None,
    );
    assert_eq!(
        flag.decide(&fetch("https://docs.rs/x")).await,
        Decision::Allow
    );
    let evil = fetch("https://evil.example/");
    assert_eq!(flag.decide(&evil).await, Decision::Deny);
    let why = flag.rule_denial(&evil).unwrap();
    assert!(why.contains("`web_fetch(evil.example)`"), "{why}");
}

/// Counts how a question reached it: `decide` (the policy asked) or
/// `decide_asked` (an ask rule did; ACP's `auto` must ask the client).
#[derive(Default)]
struct HowAsked(std::sync::Mutex<Vec<&'static str>>);

impl Approver for HowAsked {
    fn decide<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.0.lock().unwrap().push("policy");
        Box::pin(async { Decision::Allow })
    }
    fn decide_asked<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.0.lock().unwrap().push("rule");
        Box::pin(async { Decision::Allow })
    }
    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }
    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.decide_asked(kind)
    }
    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        None
    }
}

#[tokio::test]
async fn an_ask_rule_is_asked_as_a_rule_even_with_the_flag() {
    let tools = ToolsConfig {
        permissions: rules(&[(RuleList::Ask, "*.example.com", true)]),
        ..ToolsConfig::default()
    };
    let how = Arc::new(HowAsked::default());
    let repl = PolicyApprover::new(
        &tools,
        Permissions::ALL,
        McpPolicy::default(),
        Some(how.clone()),
    );
    assert_eq!(
        repl.decide(&fetch("https://a.example.com/")).await,
        Decision::Allow
    );
    // Not named by the rule: the flag allows, no one is asked.
    assert_eq!(
        repl.decide(&fetch("https://docs.rs/")).await,
        Decision::Allow
    );
    assert_eq!(*how.0.lock().unwrap(), vec!["rule"]);
    // Without anyone to ask, the ask rule denies, naming itself.
    let batch = PolicyApprover::new(&tools, Permissions::ALL, McpPolicy::default(), None);
    let kind = fetch("https://a.example.com/");
    assert_eq!(batch.decide(&kind).await, Decision::Deny);
    assert!(batch.rule_denial(&kind).unwrap().contains("no one to ask"));
}

#[tokio::test]
async fn the_user_is_asked_per_host_and_batch_denies() {
    let kind = ApprovalKind::WebFetch {
        host: "example.com".into(),
        url: "https://example.com/a".into(),
    };
    assert_eq!(kind.class(), "web_fetch:example.com");
    let batch = PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::NONE);
    assert_eq!(batch.decide(&kind).await, Decision::Deny);
    let user = Arc::new(Recorder::new(Decision::Allow));
    let repl = PolicyApprover {
        ask: Some(user.clone()),
        ..PolicyApprover::batch(ShellPolicy::Ask, ShellPolicy::Ask, Permissions::NONE)
    };
    assert_eq!(repl.decide(&kind).await, Decision::Allow);
    assert_eq!(user.asked(), vec![kind]);
}
