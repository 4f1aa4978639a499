use std::sync::Arc;

use eonyx_core::ToolName;

use super::*;
use crate::testing::{Scripted, every_kind, scripted_answer as answer};

/// Every decision of every kind through every wrapper: the wrapped answer
/// is the inner one (`MustAsk` turns `decide` into `decide_asked`, as
/// documented).
#[tokio::test]
async fn every_wrapper_forwards_every_decision() {
    let inner = Arc::new(Scripted::default());
    let task = TaskLabel {
        task: "t".into(),
        inner: inner.clone(),
    };
    let must = MustAsk(inner.clone());
    let wrappers: [(&str, &dyn Approver, usize); 2] = [("task", &task, 0), ("must_ask", &must, 1)];
    for kind in every_kind() {
        for (name, w, decide_method) in wrappers {
            let what = format!("{name} {}", kind.class());
            assert_eq!(
                w.decide(&kind).await,
                answer(decide_method, &kind),
                "{what}"
            );
            assert_eq!(w.decide_asked(&kind).await, answer(1, &kind), "{what}");
            assert_eq!(w.decide_read(&kind).await, answer(2, &kind), "{what}");
            assert_eq!(w.rule_denial(&kind), inner.rule_denial(&kind), "{what}");
            let rules = w.read_rules().expect(&what);
            assert!(Arc::ptr_eq(&rules, &inner.rules), "{what}");
        }
    }
}

/// The leaf approvers answer every method alike: `AllowAll` allows,
/// `DenyAll` denies, reads included.
#[tokio::test]
async fn leaf_approvers_answer_every_method_alike() {
    for kind in every_kind() {
        assert_eq!(DenyAll.decide_read(&kind).await, Decision::Deny);
        assert_eq!(DenyAll.decide_asked(&kind).await, Decision::Deny);
        assert_eq!(AllowAll.decide_read(&kind).await, Decision::Allow);
    }
}

#[tokio::test]
async fn a_task_label_reaches_the_user_and_the_policy_still_decides_first() {
    let rec = Arc::new(crate::test_support::Recorder::new(Decision::Allow));
    let child = super::super::PolicyApprover {
        shell: eonyx_core::config::ShellPolicy::Ask,
        write: eonyx_core::config::ShellPolicy::Deny,
        allowed: super::super::Permissions::NONE,
        mcp: super::super::McpPolicy::default(),
        web: Default::default(),
        ask: Some(Arc::new(TaskLabel {
            task: "explore".into(),
            inner: rec.clone(),
        })),
        rules: Arc::default(),
    };
    let shell = ApprovalKind::Shell {
        command: "ls".into(),
    };
    assert_eq!(child.decide(&shell).await, Decision::Allow);
    let write = ApprovalKind::Write {
        tool: ToolName::WriteFile,
        path: "/p/a".into(),
        shown: "a".into(),
        diff: String::new(),
        outside: false,
        protected: false,
    };
    assert_eq!(child.decide(&write).await, Decision::Deny, "never asked");
    let asked = rec.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].describe(), "[task: explore] run shell command: ls");
}
