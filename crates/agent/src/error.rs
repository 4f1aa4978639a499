use eonyx_core::ProviderError;

/// Why a turn or an agent operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Config(#[from] eonyx_core::ConfigError),
    #[error("cannot save to the session file, so the turn was stopped: {0}")]
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
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Memory(#[from] eonyx_store::memory::MemoryError),
}

impl AgentError {
    /// Stable class name for JSON `error` events.
    pub fn class(&self) -> &'static str {
        match self {
            AgentError::Config(_) => "config",
            AgentError::Store(_) => "store",
            AgentError::Provider(e) => e.class(),
            AgentError::Compaction(_) | AgentError::NothingToCompact => "compaction",
            AgentError::TooLarge { .. } => "context_overflow",
            AgentError::Interrupted => "cancelled",
            AgentError::Usage(_) => "usage",
            AgentError::Memory(_) => "memory",
        }
    }

    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            AgentError::Interrupted | AgentError::Provider(ProviderError::Cancelled)
        )
    }
}
