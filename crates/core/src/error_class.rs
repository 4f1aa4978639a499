//! An error's class as data (docs/cli.md#exit-codes): its stable name (the
//! `class` of JSON `error` events), whose fault it is, whether retrying may
//! succeed and the exit code a command ends with. Each error type gives its
//! class when asked (`class()`); nothing finds a class by matching text.

/// Whose fault an error is, which decides how a frontend treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The user asked for something that cannot be done as asked (a bad
    /// argument, nothing to do, an unknown id, a session in use): a command
    /// declines with a notice and a batch goes on.
    User,
    /// The configuration is the user's to fix.
    Config,
    /// The user interrupted it.
    Cancelled,
    /// What runs the command failed (disk, provider, compaction).
    Failure,
}

/// Every class an error can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// `usage`: a request refused as given.
    Usage,
    /// `config`: the configuration (or a hook it names) cannot be used.
    Config,
    /// `cancelled`: interrupted (Ctrl-C, `session/cancel`).
    Cancelled,
    /// `not_found`: a session that does not exist.
    NotFound,
    /// `session_in_use`: another process has the session open.
    SessionInUse,
    /// `compaction`, the user's: the summary already covers everything.
    NothingToCompact,
    /// `compaction`: writing the summary failed.
    Compaction,
    /// `context_overflow`: too large for the model even after compaction.
    ContextOverflow,
    /// `store`: the session file cannot be read or written.
    Store,
    /// `memory`: a memory file cannot be read or written.
    Memory,
    /// `mcp`: a required MCP server could not start.
    Mcp,
    /// `hook`: a hook blocked it.
    Hook,
    /// `blocked`: the provider blocked the model's reply.
    Blocked,
    /// `io`: any other I/O failure.
    Io,
    /// `auth`: the provider refused the credentials.
    Auth,
    /// `rate_limited`: the provider asked to slow down.
    RateLimited,
    /// `transient`: the provider or the network failed for now.
    Transient,
    /// `bad_response`: the provider answered with something unreadable.
    BadResponse,
    /// `rejected`: the provider refused the request.
    Rejected,
    /// `error`: none of the above.
    Other,
}

impl ErrorClass {
    /// The stable name, as JSON `error` events and docs/cli.md show it.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorClass::Usage => "usage",
            ErrorClass::Config => "config",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::NotFound => "not_found",
            ErrorClass::SessionInUse => "session_in_use",
            ErrorClass::NothingToCompact | ErrorClass::Compaction => "compaction",
            ErrorClass::ContextOverflow => "context_overflow",
            ErrorClass::Store => "store",
            ErrorClass::Memory => "memory",
            ErrorClass::Mcp => "mcp",
            ErrorClass::Hook => "hook",
            ErrorClass::Blocked => "blocked",
            ErrorClass::Io => "io",
            ErrorClass::Auth => "auth",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Transient => "transient",
            ErrorClass::BadResponse => "bad_response",
            ErrorClass::Rejected => "rejected",
            ErrorClass::Other => "error",
        }
    }

    /// Whose fault it is.
    pub const fn fault(self) -> Fault {
        match self {
            ErrorClass::Usage
            | ErrorClass::NotFound
            | ErrorClass::SessionInUse
            | ErrorClass::NothingToCompact => Fault::User,
            ErrorClass::Config => Fault::Config,
            ErrorClass::Cancelled => Fault::Cancelled,
            _ => Fault::Failure,
        }
    }

    /// Whether the user's to correct (a command declines rather than
    /// fails; [`Fault::User`]).
    pub const fn is_users(self) -> bool {
        matches!(self.fault(), Fault::User)
    }

    /// Whether retrying the same request may succeed.
    pub const fn retryable(self) -> bool {
        matches!(self, ErrorClass::RateLimited | ErrorClass::Transient)
    }

    /// The exit code a command ends with on an error of this class: 2 for
    /// usage and config, 130 when interrupted, 1 otherwise.
    pub const fn exit_code(self) -> u8 {
        match self {
            ErrorClass::Usage | ErrorClass::Config => 2,
            ErrorClass::Cancelled => 130,
            _ => 1,
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_documented_table() {
        // docs/cli.md#exit-codes: 2 usage or config, 130 interrupted, 1 the rest.
        assert_eq!(ErrorClass::Usage.exit_code(), 2);
        assert_eq!(ErrorClass::Config.exit_code(), 2);
        assert_eq!(ErrorClass::Cancelled.exit_code(), 130);
        for c in [
            ErrorClass::NotFound,
            ErrorClass::SessionInUse,
            ErrorClass::NothingToCompact,
            ErrorClass::Store,
            ErrorClass::Transient,
            ErrorClass::Other,
        ] {
            assert_eq!(c.exit_code(), 1, "{c}");
        }
    }

    #[test]
    fn the_users_classes_decline_and_only_provider_hiccups_retry() {
        assert!(ErrorClass::NothingToCompact.is_users());
        assert_eq!(ErrorClass::NothingToCompact.name(), "compaction");
        assert!(!ErrorClass::Compaction.is_users());
        assert!(!ErrorClass::Config.is_users());
        assert!(ErrorClass::Transient.retryable());
        assert!(ErrorClass::RateLimited.retryable());
        assert!(!ErrorClass::Auth.retryable());
    }
}
