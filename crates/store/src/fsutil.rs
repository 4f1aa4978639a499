//! Small filesystem helpers: private directories and files, atomic replace.

use std::fs::{File, OpenOptions};

use camino::Utf8Path;

use crate::{IoFailure, StoreError};

/// `mkdir -p`, 0700 (unix). See [`eonyx_core::fs::create_private_dir`].
pub fn create_private_dir(path: &Utf8Path) -> Result<(), StoreError> {
    eonyx_core::fs::create_private_dir(path).map_err(StoreError::io("create directory", path))
}

/// Open options for a file that only the user may read (0600 on unix).
pub fn private_options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o
}

/// Open the lock file `path` (0600, created when missing, never
/// truncated); the lock is taken on the file and held until it is dropped.
pub(crate) fn open_lock_file(path: &Utf8Path) -> Result<File, IoFailure> {
    private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(IoFailure::of("open the lock file", path))
}

/// The lock file `path`, locked exclusive (for changes) or shared (for
/// reading), waiting for other holders; released when the file is dropped.
pub(crate) fn lock_file(path: &Utf8Path, exclusive: bool) -> Result<File, IoFailure> {
    let file = open_lock_file(path)?;
    if exclusive {
        file.lock().map_err(IoFailure::of("lock", path))?;
    } else {
        file.lock_shared().map_err(IoFailure::of("lock", path))?;
    }
    Ok(file)
}

/// The lock file `path` locked exclusive if no one holds it now; `None`
/// when someone does.
pub(crate) fn try_lock_file(path: &Utf8Path) -> Result<Option<File>, IoFailure> {
    let file = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(IoFailure::of("lock", path)(e)),
    }
}

/// Replace `path` atomically with `bytes` (a new file is 0600); `durable`
/// also fsyncs the file. See [`eonyx_core::fs::write_atomic`].
pub(crate) fn atomic_write(path: &Utf8Path, bytes: &[u8], durable: bool) -> Result<(), StoreError> {
    let how = eonyx_core::fs::AtomicWrite {
        durable,
        private: true,
    };
    eonyx_core::fs::write_atomic(path, bytes, how).map_err(StoreError::io("replace", path))
}

/// fsync a directory so a created or removed entry survives a crash.
/// Best effort: not every platform can open a directory for syncing.
pub(crate) fn sync_dir(path: &Utf8Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(path) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}
