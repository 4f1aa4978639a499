use eonyx_core::ProviderError;

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
    #[error("{0}")]
    Usage(String),
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
    /// A hook blocked what was about to happen (docs/hooks.md#answers).
    #[error("a {event} hook blocked it: {reason}")]
    HookBlocked { event: &'static str, reason: String },
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
    /// Stable class name for JSON `error` events.
    pub fn class(&self) -> &'static str {
        match self {
            AgentError::Config(_) => "config",
            AgentError::Store(e) if e.is_usage() => "usage",
            AgentError::Store(e) if e.is_in_use() => "session_in_use",
            AgentError::Store(e) if e.is_not_found() => "not_found",
            AgentError::Store(_) => "store",
            AgentError::Provider(e) => e.class(),
            AgentError::Compaction(_) | AgentError::NothingToCompact => "compaction",
            AgentError::TooLarge { .. } => "context_overflow",
            AgentError::Interrupted => "cancelled",
            AgentError::Usage(_) | AgentError::Attach(_) => "usage",
            AgentError::Memory(_) => "memory",
            AgentError::McpRequired { .. } => "mcp",
            AgentError::HookBlocked { .. } => "hook",
        }
    }

    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            AgentError::Interrupted | AgentError::Provider(ProviderError::Cancelled)
        )
    }
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
        assert_eq!(in_use.class(), "session_in_use");
        let missing = AgentError::from(StoreError::NotFound { id });
        assert!(missing.to_string().starts_with("no session "), "{missing}");
        assert_eq!(missing.class(), "not_found");
        let io = AgentError::from(StoreError::Io {
            action: "append to",
            path: "/d/s.jsonl".into(),
            source: std::io::Error::other("disk full"),
        });
        assert!(
            io.to_string()
                .starts_with("cannot save to the session file, so the turn was stopped: "),
            "{io}"
        );
    }
}
