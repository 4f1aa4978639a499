//! Fixtures for the tools' unit tests: a project in a temporary directory,
//! and an approver that records what it was asked.

use std::time::Duration;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::ToolCall;
use eonyx_core::provider::{BoxFuture, CancellationToken};
use serde_json::Value;

use super::{
    AllowAll, ApprovalKind, Approver, Decision, NoAgentTools, ToolContext, ToolOutput, execute,
};

pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub ctx: ToolContext,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(dir.path().join("project")).unwrap();
        std::fs::create_dir(&root).unwrap();
        let mut ctx = ToolContext::new(root, Duration::from_secs(10));
        // Unconfined unless a test says otherwise (shell.rs's sandbox tests).
        ctx.sandbox = std::sync::Arc::new(eonyx_sandbox::Sandbox::off(&ctx.project_root));
        Self { dir, ctx }
    }

    /// Confine `shell` as `config` says (no Landlock helper here).
    pub fn sandboxed(mut self, config: eonyx_core::config::SandboxConfig) -> Self {
        self.ctx.sandbox = std::sync::Arc::new(eonyx_sandbox::Sandbox::new(
            config,
            &self.ctx.project_root,
            &eonyx_core::paths::Env::default(),
            None,
        ));
        self
    }

    pub fn root(&self) -> &Utf8Path {
        &self.ctx.project_root
    }

    /// A directory next to the project (outside it).
    pub fn outside(&self) -> Utf8PathBuf {
        Utf8PathBuf::from_path_buf(self.dir.path().to_path_buf()).unwrap()
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    pub async fn run(&self, name: &str, args: Value) -> ToolOutput {
        self.run_with(name, args, &AllowAll).await
    }

    pub async fn run_with(&self, name: &str, args: Value, approver: &dyn Approver) -> ToolOutput {
        let call = ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: args,
        };
        execute(
            &call,
            &self.ctx,
            approver,
            &mut NoAgentTools,
            &CancellationToken::new(),
        )
        .await
    }
}

/// Records what it was asked, answers `answer`.
pub(crate) struct Recorder {
    pub answer: Decision,
    pub asked: std::sync::Mutex<Vec<ApprovalKind>>,
}

impl Recorder {
    pub fn new(answer: Decision) -> Self {
        Self {
            answer,
            asked: Default::default(),
        }
    }

    pub fn asked(&self) -> Vec<ApprovalKind> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for Recorder {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.asked.lock().unwrap().push(kind.clone());
        Box::pin(async move { self.answer })
    }

    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.decide(kind)
    }

    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }

    /// As a policy without rules: a read inside the project is no
    /// question (nothing recorded), and allowed.
    fn decide_read<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }

    fn read_rules(&self) -> Option<std::sync::Arc<crate::permissions::RuleMatcher>> {
        None
    }
}
