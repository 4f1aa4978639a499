//! The one error type of the store.

use camino::Utf8PathBuf;
use eonyx_core::{ErrorClass, SessionId};

/// What went wrong in the store. The cli tells the variants apart:
/// [`StoreError::NotFound`] and [`StoreError::InUse`] are the user's to act
/// on, [`StoreError::Io`] is a disk problem.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no session {id}; run `eonyx sessions` to list sessions")]
    NotFound { id: SessionId },

    #[error(
        "session {id} is in use by {}; close that eonyx first or continue in a new session",
        holder(*.pid)
    )]
    InUse { id: SessionId, pid: Option<u32> },

    #[error("invalid session title {title:?}: {reason}")]
    InvalidTitle { title: String, reason: &'static str },

    #[error(
        "session {id} cannot be opened: {reason}; run `eonyx sessions doctor` to check the file"
    )]
    Unreadable { id: SessionId, reason: String },

    #[error(transparent)]
    Io(#[from] IoFailure),

    #[error(
        "cannot rewind session {id} to #{to_seq}: its last record is #{last_seq}; give a seq from `eonyx sessions show {id}`"
    )]
    InvalidRewind {
        id: SessionId,
        to_seq: u64,
        last_seq: u64,
    },

    #[error(
        "cannot fork session {id} at #{at}: {reason}; give a seq from `eonyx sessions show {id}`"
    )]
    InvalidFork {
        id: SessionId,
        at: u64,
        reason: &'static str,
    },

    #[error("{0:?} is not a file-history name (64 lowercase hex digits of a sha256)")]
    BadHash(String),

    #[error("{path} is not a valid UTF-8 path; eonyx needs UTF-8 paths")]
    NotUtf8 { path: String },
}

/// A file operation that failed: what was being done, to which path, and
/// the system's error. The store's and the memory files' errors carry it.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {path}: {source}")]
pub struct IoFailure {
    pub action: &'static str,
    pub path: Utf8PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl IoFailure {
    /// For `map_err`: the failure of `action` on `path`, as the error `E`
    /// that carries it.
    pub(crate) fn of<E: From<IoFailure>>(
        action: &'static str,
        path: impl Into<Utf8PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> E {
        let path = path.into();
        move |source| {
            E::from(IoFailure {
                action,
                path,
                source,
            })
        }
    }
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_owned(),
    }
}

impl StoreError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<Utf8PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        IoFailure::of(action, path)
    }

    /// Its class (the JSON `class`, whose fault, the exit code): a rewind
    /// or fork point that does not exist is the user's to correct, as are
    /// a session in use and one that does not exist; the rest is a failure
    /// of the store.
    pub fn class(&self) -> ErrorClass {
        match self {
            StoreError::InvalidRewind { .. } | StoreError::InvalidFork { .. } => ErrorClass::Usage,
            StoreError::InUse { .. } => ErrorClass::SessionInUse,
            StoreError::NotFound { .. } => ErrorClass::NotFound,
            _ => ErrorClass::Store,
        }
    }

    /// True for [`StoreError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound { .. })
    }

    /// True for [`StoreError::InUse`].
    pub fn is_in_use(&self) -> bool {
        matches!(self, StoreError::InUse { .. })
    }
}
