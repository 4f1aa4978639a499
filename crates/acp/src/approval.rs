//! Approvals as `session/request_permission` and the session modes
//! (`session/set_mode`, docs/acp.md#modes).
//!
//! The agent's policy (config and flags) decides first; what it would ask
//! the user goes to the client with four options: allow once, allow
//! always, reject once, reject always. "Always" lasts for the session, per
//! approval class (`ApprovalKind::class`: all shell commands, writes
//! inside the project, one MCP tool…).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId as AcpSessionId, SessionMode, SessionModeId, SessionModeState, ToolCallContent,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use eonyx_agent::Approvers;
use eonyx_agent::confinement::Confinement;
use eonyx_agent::tools::{
    ApprovalKind, Approver, Decision, McpPolicy, Permissions, PolicyApprover,
};
use eonyx_config::{Config, ShellPolicy};
use eonyx_core::provider::BoxFuture;

use crate::lock;

/// What the agent may do without asking (docs/acp.md#modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Config and flags as for the REPL; the rest is asked.
    Ask,
    /// Writes inside the project without asking; commands asked.
    AcceptEdits,
    /// Writes inside the project and sandboxed shell commands without
    /// asking; the rest asked.
    Auto,
    /// No writes and no commands; nothing is asked, it is refused.
    ReadOnly,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Ask, Mode::AcceptEdits, Mode::Auto, Mode::ReadOnly];

    pub fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept-edits",
            Mode::Auto => "auto",
            Mode::ReadOnly => "read-only",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
            Mode::Auto => "Auto",
            Mode::ReadOnly => "Read-only",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Ask => "ask before writing files and running commands (unless config allows)",
            Mode::AcceptEdits => "write files in the project without asking; ask for commands",
            Mode::Auto => {
                "write files in the project and run sandboxed commands without asking; ask for the rest"
            }
            Mode::ReadOnly => "read and search only: writes and commands are refused",
        }
    }

    /// The one place a mode answers for the user: what it decides by
    /// itself on a question the policy (config, flags, a hook) left to
    /// the user; `None`: the client is asked. `confined` says whether a
    /// shell command would run in the sandbox now (asked only for a
    /// command in `auto`). A `deny` in config never reaches here, so it
    /// keeps its force in every mode; so does anything outside the
    /// project, `.git/` and `eonyx.json`, which only `read-only` answers
    /// (with no).
    async fn decides(
        self,
        kind: &ApprovalKind,
        confined: impl std::future::Future<Output = bool>,
    ) -> Option<Decision> {
        let inside_write = matches!(
            kind.innermost(),
            ApprovalKind::Write {
                outside: false,
                protected: false,
                ..
            }
        );
        match self {
            Mode::ReadOnly => Some(Decision::Deny),
            Mode::AcceptEdits | Mode::Auto if inside_write => Some(Decision::Allow),
            Mode::Auto if matches!(kind.innermost(), ApprovalKind::Shell { .. }) => {
                confined.await.then_some(Decision::Allow)
            }
            Mode::Ask | Mode::AcceptEdits | Mode::Auto => None,
        }
    }

    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    pub fn state(self) -> SessionModeState {
        SessionModeState::new(
            SessionModeId::new(self.id()),
            Mode::ALL
                .iter()
                .map(|m| SessionMode::new(m.id(), m.name()).description(m.description()))
                .collect(),
        )
    }
}

/// The tool call a question is about (the one the agent announced last).
pub type CurrentCall = Arc<Mutex<Option<String>>>;

/// Asks the client (`session/request_permission`); remembers the
/// "always" answers of the session.
pub struct Asker {
    pub cx: ConnectionTo<Client>,
    /// Known once the agent opened its session.
    pub session: Mutex<Option<AcpSessionId>>,
    pub mode: Arc<Mutex<Mode>>,
    pub current: CurrentCall,
    /// Whether the session's commands run in the sandbox; known once the
    /// agent opened its session (until then `auto` asks for commands).
    pub confinement: Mutex<Option<Confinement>>,
    always: Mutex<HashMap<String, Decision>>,
    asked: Mutex<u64>,
}

impl Asker {
    pub fn new(cx: ConnectionTo<Client>, mode: Arc<Mutex<Mode>>, current: CurrentCall) -> Self {
        Self {
            cx,
            session: Mutex::new(None),
            mode,
            current,
            confinement: Mutex::new(None),
            always: Mutex::new(HashMap::new()),
            asked: Mutex::new(0),
        }
    }

    /// Asks the client about `kind`, unless the mode answers for the
    /// user. `Asked::MustAsk` (a permission rule or a `PreToolUse` hook
    /// said "ask"): only `read-only` answers (no); every other mode asks
    /// the client, so an ask rule or hook keeps its force in `auto` too.
    async fn ask(&self, kind: &ApprovalKind, asked: Asked) -> Decision {
        let mode = *lock(&self.mode);
        let confinement = lock(&self.confinement).clone();
        let confined = async move {
            match confinement {
                Some(c) => c.commands_confined().await,
                None => false,
            }
        };
        let answer = match (asked, mode) {
            (Asked::ByPolicy, _) | (Asked::MustAsk, Mode::ReadOnly) => {
                mode.decides(kind, confined).await
            }
            (Asked::MustAsk, _) => None,
        };
        if let Some(d) = answer {
            return d;
        }
        let class = kind.class().into_owned();
        // An ask rule or hook is asked every time: no "always" answers it, and
        // none is offered.
        if asked == Asked::ByPolicy
            && let Some(d) = lock(&self.always).get(&class)
        {
            return *d;
        }
        let Some(session) = lock(&self.session).clone() else {
            return Decision::Deny;
        };
        let call_id = lock(&self.current).clone().unwrap_or_else(|| {
            let mut n = lock(&self.asked);
            *n += 1;
            format!("approval-{n}")
        });
        let mut fields = ToolCallUpdateFields::new().title(kind.describe());
        if let ApprovalKind::Write { diff, .. } = kind.innermost() {
            fields = fields
                .kind(ToolKind::Edit)
                .content(vec![ToolCallContent::from(diff.clone())]);
        }
        let mut options = vec![
            PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "allow_always",
                "Allow always (this session)",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                "reject_always",
                "Reject always (this session)",
                PermissionOptionKind::RejectAlways,
            ),
        ];
        if asked == Asked::MustAsk {
            options.retain(|o| {
                matches!(
                    o.kind,
                    PermissionOptionKind::AllowOnce | PermissionOptionKind::RejectOnce
                )
            });
        }
        let request =
            RequestPermissionRequest::new(session, ToolCallUpdate::new(call_id, fields), options);
        let answer = match self.cx.send_request(request).block_task().await {
            Ok(r) => r.outcome,
            Err(e) => {
                crate::diag(&format!(
                    "the client did not answer a permission request ({}): denied",
                    e.message
                ));
                return Decision::Deny;
            }
        };
        let RequestPermissionOutcome::Selected(selected) = answer else {
            return Decision::Deny;
        };
        let (decision, always) = match &*selected.option_id.0 {
            "allow_once" => (Decision::Allow, false),
            "allow_always" => (Decision::Allow, true),
            "reject_always" => (Decision::Deny, true),
            _ => (Decision::Deny, false),
        };
        if always && asked == Asked::ByPolicy {
            lock(&self.always).insert(class, decision);
        }
        decision
    }
}

/// Why the client is about to be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// The mode's policy (config, flags) left the question to the user.
    ByPolicy,
    /// A permission rule in the `ask` list matched, or a `PreToolUse`
    /// hook answered `ask`.
    MustAsk,
}

impl Approver for Asker {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(self.ask(kind, Asked::ByPolicy))
    }

    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(self.ask(kind, Asked::MustAsk))
    }

    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }

    /// Reads reach the client only when a rule asks them; as a question
    /// that must be asked.
    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        Box::pin(self.ask(kind, Asked::MustAsk))
    }

    fn read_rules(&self) -> Option<Arc<eonyx_agent::tools::permissions::RuleMatcher>> {
        None
    }
}

/// The agent's approver in an ACP session: the policy of the current mode,
/// asking the client where it says "ask".
pub struct ModeApprover {
    mode: Arc<Mutex<Mode>>,
    ask: PolicyApprover,
    accept_edits: PolicyApprover,
    read_only: PolicyApprover,
}

/// The user's yes, as a `PreToolUse` hook's `allow` gives it
/// (docs/hooks.md#answers): what the mode's policy would ask is allowed,
/// except in `read-only`, where nothing is asked and so nothing allowed.
struct HookYes {
    mode: Arc<Mutex<Mode>>,
}

impl Approver for HookYes {
    fn decide<'a>(&'a self, _kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        let decision = match *lock(&self.mode) {
            Mode::ReadOnly => Decision::Deny,
            Mode::Ask | Mode::AcceptEdits | Mode::Auto => Decision::Allow,
        };
        Box::pin(async move { decision })
    }

    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.decide(kind)
    }

    fn rule_denial(&self, _kind: &ApprovalKind) -> Option<String> {
        None
    }

    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.decide(kind)
    }

    fn read_rules(&self) -> Option<Arc<eonyx_agent::tools::permissions::RuleMatcher>> {
        None
    }
}

/// The session's approvers: the mode's policy asking the client, and the
/// same policy for a call a hook allowed (the client is not asked; the
/// mode's denials still hold).
pub fn approvers(config: &Config, flags: Permissions, asker: Arc<Asker>) -> Approvers {
    let mode = asker.mode.clone();
    let yes = Arc::new(HookYes { mode: mode.clone() });
    Approvers {
        ask: Arc::new(ModeApprover::new(config, flags, mode.clone(), asker)),
        hook_allowed: Arc::new(ModeApprover::new(config, flags, mode, yes)),
    }
}

impl ModeApprover {
    /// The policies of the three modes, from the config and the `--allow-*`
    /// flags `eonyx acp` was started with; what they would ask goes to
    /// `asker`.
    fn new(
        config: &Config,
        flags: Permissions,
        mode: Arc<Mutex<Mode>>,
        asker: Arc<dyn Approver>,
    ) -> Self {
        let mcp = || McpPolicy {
            servers: config
                .mcp
                .servers
                .values()
                .map(|s| (s.name.clone(), s.approval))
                .collect(),
        };
        let ask = || Some(asker.clone());
        // Read-only: the config's tool settings with writes and commands
        // denied, through the same constructor as every policy.
        let mut denied = config.tools.clone();
        denied.shell = ShellPolicy::Deny;
        denied.write = ShellPolicy::Deny;
        // Permission rules may still deny or ask there, never allow.
        denied.permissions = denied.permissions.without_allow();
        Self {
            mode,
            ask: PolicyApprover::new(&config.tools, flags, mcp(), ask()),
            accept_edits: PolicyApprover::new(
                &config.tools,
                Permissions {
                    write: true,
                    ..flags
                },
                mcp(),
                ask(),
            ),
            read_only: PolicyApprover::new(&denied, Permissions::NONE, mcp(), ask()),
        }
    }
}

impl ModeApprover {
    fn current(&self) -> &PolicyApprover {
        match *lock(&self.mode) {
            // `auto` is `ask`'s policy; what it lets through without the
            // client is decided where the client would be asked
            // (`Mode::decides`).
            Mode::Ask | Mode::Auto => &self.ask,
            Mode::AcceptEdits => &self.accept_edits,
            Mode::ReadOnly => &self.read_only,
        }
    }
}

impl Approver for ModeApprover {
    fn decide<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.current().decide(kind)
    }

    /// A `PreToolUse` hook's `ask`: what the config and flags leave to
    /// the user is asked of the client in every mode but `read-only`
    /// (`accept-edits`' own yes to project writes included).
    fn decide_asked<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        match *lock(&self.mode) {
            Mode::Ask | Mode::AcceptEdits | Mode::Auto => self.ask.decide_asked(kind),
            Mode::ReadOnly => self.read_only.decide_asked(kind),
        }
    }

    fn rule_denial(&self, kind: &ApprovalKind) -> Option<String> {
        self.current().rule_denial(kind)
    }

    fn decide_read<'a>(&'a self, kind: &'a ApprovalKind) -> BoxFuture<'a, Decision> {
        self.current().decide_read(kind)
    }

    fn read_rules(&self) -> Option<Arc<eonyx_agent::tools::permissions::RuleMatcher>> {
        self.current().read_rules()
    }
}
