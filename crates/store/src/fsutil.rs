//! Small filesystem helpers: private directories and files, atomic replace.

use std::fs::{File, OpenOptions};

use camino::Utf8Path;

use crate::StoreError;

/// `mkdir -p` with mode 0700 for every directory it creates (unix).
pub(crate) fn create_private_dir(path: &Utf8Path) -> Result<(), StoreError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(path)
        .map_err(StoreError::io("create directory", path))
}

/// Open options for a file that only the user may read (0600 on unix).
pub(crate) fn private_options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o
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
