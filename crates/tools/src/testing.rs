//! Test doubles that other crates' tests share with these (the `testing`
//! feature, which only dev-dependencies turn on).

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_core::ToolName;
use eonyx_core::provider::BoxFuture;

use crate::permissions::RuleMatcher;
use crate::{ApprovalKind, Approver, Decision};

/// An approver that answers each method differently, and differently per
/// kind ([`scripted_answer`]), so a wrapper that answers by itself instead
/// of forwarding is caught.
#[derive(Default)]
pub struct Scripted {
    /// What `read_rules` returns.
    pub rules: Arc<RuleMatcher>,
}

/// What [`Scripted`] answers to method `method` (0 `decide`, 1
/// `decide_asked`, 2 `decide_read`) for `kind`.
pub fn scripted_answer(method: usize, kind: &ApprovalKind) -> Decision {
    if (kind.innermost().class().len() + method).is_multiple_of(2) {
        Decision::Allow
    } else {
        Decision::Deny
    }
}

impl Approver for Scripted {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move { scripted_answer(0, kind) })
    }
    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move { scripted_answer(1, kind) })
    }
    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        Some(format!("denial of {}", kind.innermost().class()))
    }
    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async move { scripted_answer(2, kind) })
    }
    fn read_rules(&self) -> Option<Arc<RuleMatcher>> {
        Some(self.rules.clone())
    }
}

/// One approval of each kind.
pub fn every_kind() -> Vec<ApprovalKind> {
    let path = Utf8PathBuf::from("/p/src/a.rs");
    vec![
        ApprovalKind::Read {
            tool: ToolName::ReadFile,
            path: path.clone(),
        },
        ApprovalKind::Read {
            tool: ToolName::Grep,
            path: path.clone(),
        },
        ApprovalKind::Write {
            tool: ToolName::WriteFile,
            path: path.clone(),
            shown: "src/a.rs".into(),
            diff: String::new(),
            outside: false,
            protected: false,
        },
        ApprovalKind::Shell {
            command: "git push".into(),
        },
        ApprovalKind::WebFetch {
            host: "docs.rs".into(),
            url: "https://docs.rs/".into(),
        },
        ApprovalKind::Mcp {
            server: "files".into(),
            tool: "mcp__files__read".into(),
            arguments: "{}".into(),
        },
        ApprovalKind::OutsideProject {
            tool: ToolName::ReadFile,
            path: "/etc/passwd".into(),
        },
        ApprovalKind::Attach { path },
    ]
}
