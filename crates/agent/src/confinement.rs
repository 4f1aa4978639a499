//! Whether the shell commands of a session run confined by the sandbox
//! (docs/tools.md#sandbox): what a frontend's mode needs to let them run
//! without a question (ACP's `auto`, docs/acp.md#modes).

use std::sync::Arc;

/// The sandbox of one session, asked whether a command run now would be
/// confined.
#[derive(Clone)]
pub struct Confinement(pub(crate) Arc<eonyx_sandbox::Sandbox>);

impl Confinement {
    /// Whether a shell command started now runs in the sandbox: a backend
    /// works and `tools.sandbox` is not `"off"`. (The backends are probed
    /// once per process; the first answer may wait for that probe.)
    pub async fn commands_confined(&self) -> bool {
        let sandbox = self.0.clone();
        tokio::task::spawn_blocking(move || {
            matches!(sandbox.plan(), eonyx_sandbox::Plan::Confined(_))
        })
        .await
        .unwrap_or(false)
    }
}
