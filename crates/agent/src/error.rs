use eonyx_core::{ErrorClass, ProviderError};
use eonyx_store::StoreError;
use eonyx_store::memory::MemoryError;

/// Why a turn or an agent operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Config(#[from] eonyx_config::ConfigError),
    /// A write failure says the turn stopped; a session that is missing,
    /// in use, unreadable or given a bad title is reported as it is.
    #[error("{}", store_message(.0))]
    Store(#[from] eonyx_store::StoreError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("compaction failed (nothing was deleted): {0}")]
    Compaction(String),
    #[error(
        "the request is too large for the model even after compaction: {what}. Start a new session (/new) or use a model with a larger context window"
    )]
    TooLarge { what: String },
    #[error("nothing to compact: the summary already covers every message that may be summarized")]
    NothingToCompact,
    #[error("interrupted")]
    Interrupted,
    /// Asked for something this session cannot do as asked: the user's to
    /// correct (class `usage`).
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error(transparent)]
    Memory(#[from] eonyx_store::memory::MemoryError),
    /// A server with `required = true` could not start (docs/mcp.md#startup).
    #[error(
        "MCP server `{server}` is required (required = true) but could not start: {why}; fix it, or set required = false under [mcp_servers.{server}] to go on without it"
    )]
    McpRequired { server: String, why: String },
    /// An `@path` or `--image` file that cannot be sent; nothing was sent.
    #[error(transparent)]
    Attach(#[from] crate::attach::AttachError),
    /// A hook the config names cannot be set up (a matcher that is no
    /// regex): class `config`, exit 2.
    #[error(transparent)]
    Hooks(#[from] eonyx_hooks::HookError),
    /// A hook blocked what was about to happen (docs/hooks.md#answers).
    #[error("a {event} hook blocked it: {reason}")]
    HookBlocked { event: &'static str, reason: String },
    /// The provider blocked or refused the model's reply; `reason` as it
    /// gave it (docs/providers.md#blocked-replies).
    #[error(
        "the provider blocked the model's reply (reason: {reason}); it is kept in the session. Rephrase the request, or try another model"
    )]
    ReplyBlocked { reason: String },
}

/// What the user asked that cannot be done as asked; each says what to do
/// instead.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// A command given without what it needs (`0`: its synopsis).
    #[error("usage: {0}")]
    Synopsis(&'static str),
    /// `/jobs stop N` for a job the session does not have, or without jobs.
    #[error("{0}")]
    Job(String),
    #[error(
        "{id} is a task session of {parent} (profile {profile}): /resume switches between your own sessions; run `eonyx -s {id}` to continue it directly, or ask for the task to be continued"
    )]
    ResumeTask {
        id: eonyx_core::SessionId,
        parent: String,
        profile: String,
    },
    #[error("no session to continue for project {project}; start one with `eonyx run PROMPT`")]
    NothingToContinue { project: camino::Utf8PathBuf },
    #[error(
        "compaction.model = {name:?} names no configured model; add [models.{name}] or leave it empty to use the session's model"
    )]
    UnknownCompactionModel { name: String },
    #[error(
        "memory is off (memory.enabled = false); turn it on in config.toml with [memory] enabled = true"
    )]
    MemoryOff,
    /// The user's `!command` could not be run.
    #[error(transparent)]
    Command(eonyx_tools::ToolError),
    #[error("unknown model {given:?} for /model; configured models: {keys}")]
    UnknownModel { given: String, keys: String },
    #[error(
        "unknown reasoning effort {given:?}; use one of none, minimal, low, medium, high, xhigh"
    )]
    UnknownEffort { given: String },
    #[error("nothing to fork yet: this session has no messages")]
    NothingToFork,
    #[error("a fork before the first turn would be empty: use /new for a new session")]
    EmptyFork,
    /// `/rewind 0`, `/fork 0` (`what`: the command).
    #[error("/{what} N: N is how many user turns to go back, at least 1")]
    NoTurns { what: &'static str },
    #[error("nothing to {what}: this session has no turns yet")]
    NoTurnsYet { what: &'static str },
    #[error("this session has only {have} user turn(s) to {what}")]
    TooFewTurns { what: &'static str, have: usize },
    /// Goals (docs/goals.md, section "Goals").
    #[error("a task's session has no goal; set it on the main session")]
    GoalInTask,
    #[error("a goal needs text: /goal TEXT (or /goal pause | resume | clear)")]
    GoalNeedsText,
    #[error("no goal is set; set one with /goal TEXT")]
    NoGoal,
    #[error("the goal is {status}, not active: nothing to pause")]
    GoalNotActive { status: &'static str },
    #[error(
        "the goal is {status}; only a paused, blocked or budget-limited goal resumes (set a new one with /goal TEXT)"
    )]
    GoalNotResumable { status: &'static str },
    /// `/pin`, `/unpin` (docs/compaction.md#pins).
    #[error(transparent)]
    Pin(crate::pins::PinError),
}

fn store_message(e: &eonyx_store::StoreError) -> String {
    use eonyx_store::StoreError as S;
    match e {
        S::Io { .. } | S::NotUtf8 { .. } => {
            format!("cannot save to the session file, so the turn was stopped: {e}")
        }
        _ => e.to_string(),
    }
}

impl AgentError {
    /// Its class: the name for JSON `error` events, whose fault, the exit
    /// code ([`class_of`] for any error in a chain).
    pub fn class(&self) -> ErrorClass {
        match self {
            AgentError::Config(_) | AgentError::Hooks(_) => ErrorClass::Config,
            AgentError::Store(e) => e.class(),
            AgentError::Provider(e) => e.class(),
            AgentError::Compaction(_) => ErrorClass::Compaction,
            AgentError::NothingToCompact => ErrorClass::NothingToCompact,
            AgentError::TooLarge { .. } => ErrorClass::ContextOverflow,
            AgentError::Interrupted => ErrorClass::Cancelled,
            AgentError::Usage(_) | AgentError::Attach(_) => ErrorClass::Usage,
            AgentError::Memory(e) => e.class(),
            AgentError::McpRequired { .. } => ErrorClass::Mcp,
            AgentError::HookBlocked { .. } => ErrorClass::Hook,
            AgentError::ReplyBlocked { .. } => ErrorClass::Blocked,
        }
    }

    /// How a command ends on this error.
    pub fn status(&self) -> Status {
        Status::of(self.class())
    }

    /// Whether the user's to correct: a command declines rather than fails
    /// ([`eonyx_core::Fault::User`]: a bad argument, nothing to do, an unknown id, a
    /// session in use).
    pub fn is_users(&self) -> bool {
        self.class().is_users()
    }

    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            AgentError::Interrupted | AgentError::Provider(ProviderError::Cancelled)
        )
    }
}

/// How a command ended, as the user sees it: the exit code
/// (docs/cli.md#exit-codes) and, for a turn, what the frontend shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    /// A turn or a runtime operation failed (exit 1).
    Failed,
    /// The command or the config is the user's to fix (exit 2).
    Usage,
    /// The user interrupted it (exit 130).
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Failed => 1,
            Status::Usage => 2,
            Status::Interrupted => 130,
        }
    }

    /// How a command ends on an error of `class` (its exit code).
    pub fn of(class: ErrorClass) -> Status {
        match class.exit_code() {
            2 => Status::Usage,
            130 => Status::Interrupted,
            _ => Status::Failed,
        }
    }
}

/// A request the frontend refuses as given (a malformed argument, a slash
/// command without what it needs): class `usage`, exit 2. Its text says
/// what to type instead.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRequest(pub String);

/// The class of an error that ended a command, from the first cause in
/// `chain` (an error and its sources, outermost first) that eonyx knows;
/// [`ErrorClass::Other`] when none is.
pub fn class_of<'a>(
    chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> ErrorClass {
    for cause in chain {
        if let Some(e) = cause.downcast_ref::<AgentError>() {
            return e.class();
        }
        if cause.is::<InvalidRequest>()
            || cause.is::<eonyx_core::SessionIdError>()
            || cause.is::<crate::attach::AttachError>()
        {
            return ErrorClass::Usage;
        }
        if cause.is::<eonyx_config::ConfigError>() {
            return ErrorClass::Config;
        }
        if let Some(e) = cause.downcast_ref::<crate::mining::MineError>() {
            return e.class();
        }
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return e.class();
        }
        if let Some(e) = cause.downcast_ref::<MemoryError>() {
            return e.class();
        }
        if let Some(e) = cause.downcast_ref::<ProviderError>() {
            return e.class();
        }
        if cause.is::<std::io::Error>() {
            return ErrorClass::Io;
        }
    }
    ErrorClass::Other
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::SessionId;
    use eonyx_store::StoreError;

    #[test]
    fn open_errors_are_not_called_save_failures() {
        let id = SessionId::parse("20260705T091500-1a2b3c4d").unwrap();
        let in_use = AgentError::from(StoreError::InUse {
            id: id.clone(),
            pid: Some(42),
        });
        assert_eq!(
            in_use.to_string(),
            "session 20260705T091500-1a2b3c4d is in use by process 42; close that eonyx first or continue in a new session"
        );
        assert_eq!(in_use.class().name(), "session_in_use");
        let missing = AgentError::from(StoreError::NotFound { id });
        assert!(missing.to_string().starts_with("no session "), "{missing}");
        assert_eq!(missing.class().name(), "not_found");
        let io = AgentError::from(StoreError::Io(eonyx_store::IoFailure {
            action: "append to",
            path: "/d/s.jsonl".into(),
            source: std::io::Error::other("disk full"),
        }));
        assert!(
            io.to_string()
                .starts_with("cannot save to the session file, so the turn was stopped: "),
            "{io}"
        );
    }

    #[test]
    fn one_table_gives_the_same_status_for_an_error_wherever_it_is_met() {
        let bad_rewind = || StoreError::InvalidRewind {
            id: SessionId::parse("20260705T091500-1a2b3c4d").unwrap(),
            to_seq: 9,
            last_seq: 3,
        };
        // A store usage error alone, inside an AgentError, and behind a
        // context (anyhow's chain) all end the command the same way.
        let alone = bad_rewind();
        let wrapped = AgentError::from(bad_rewind());
        assert_eq!(
            class_of([&alone as &(dyn std::error::Error + 'static)]).name(),
            "usage"
        );
        assert_eq!(wrapped.class().name(), "usage");
        assert_eq!(wrapped.status(), Status::Usage);
        assert_eq!(Status::of(ErrorClass::Usage).code(), 2);
        assert_eq!(Status::of(ErrorClass::Config).code(), 2);
        assert_eq!(Status::of(ErrorClass::Cancelled).code(), 130);
        assert_eq!(Status::of(ErrorClass::Store).code(), 1);
        assert_eq!(AgentError::Interrupted.status(), Status::Interrupted);
        assert_eq!(
            AgentError::from(MemoryError::Secret {
                kind: eonyx_store::secret::SecretKind::Jwt
            })
            .status(),
            Status::Usage
        );
        let invalid = InvalidRequest("usage: /rename TITLE".into());
        assert_eq!(
            class_of([&invalid as &(dyn std::error::Error + 'static)]).name(),
            "usage"
        );
        let io = std::io::Error::other("boom");
        assert_eq!(
            class_of([&io as &(dyn std::error::Error + 'static)]).name(),
            "io"
        );
    }

    #[test]
    fn one_predicate_says_whose_fault_for_agent_and_mining_errors_alike() {
        use crate::mining::MineError;
        use eonyx_store::mining::MiningError;
        let secret = || MemoryError::Secret {
            kind: eonyx_store::secret::SecretKind::GitHubToken,
        };
        let io = || {
            MemoryError::Io(eonyx_store::IoFailure {
                action: "write",
                path: "/m/memory.md".into(),
                source: std::io::Error::other("disk full"),
            })
        };
        assert!(AgentError::from(secret()).is_users());
        assert!(MineError::Memory(secret()).class().is_users());
        assert!(
            MineError::State(MiningError::Memory(MemoryError::Empty))
                .class()
                .is_users()
        );
        assert!(
            MineError::State(MiningError::UnknownIds {
                ids: vec!["x".into()]
            })
            .class()
            .is_users()
        );
        assert!(!AgentError::from(io()).is_users());
        assert!(!MineError::Memory(io()).class().is_users());
        assert_eq!(MineError::Memory(io()).class().name(), "memory");
        assert!(!AgentError::Compaction("boom".into()).is_users());
        assert!(AgentError::NothingToCompact.is_users());
        assert_eq!(AgentError::NothingToCompact.class().name(), "compaction");
        assert_eq!(AgentError::NothingToCompact.status(), Status::Failed);
    }

    #[test]
    fn a_mining_error_in_a_chain_is_classed_by_its_own_class() {
        use crate::mining::MineError;
        let id = SessionId::parse("20260705T091500-1a2b3c4d").unwrap();
        let class = |e: &MineError| class_of([e as &(dyn std::error::Error + 'static)]);
        let missing = MineError::NoSession { id: id.clone() };
        assert_eq!(class(&missing), ErrorClass::NotFound);
        let open = MineError::Open { id, pid: Some(7) };
        assert_eq!(class(&open), ErrorClass::SessionInUse);
        let model = MineError::UnknownModel { key: "m".into() };
        assert_eq!(class(&model).exit_code(), 2, "a config error, as anywhere");
        let state = MineError::State(eonyx_store::mining::MiningError::Damaged {
            path: "/d/mining/state.json".into(),
            reason: "bad".into(),
        });
        assert_eq!(class(&state).name(), "store");
    }
}
