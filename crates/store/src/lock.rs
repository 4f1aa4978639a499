//! One writer per session: an exclusive `flock`-style lock on
//! `<data dir>/locks/<id>.lock`, which holds the owner's pid. The lock is
//! released when the process ends, however it ends.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::SessionId;

use crate::StoreError;
use crate::fsutil::open_lock_file;

#[derive(Debug)]
pub(crate) struct SessionLock {
    file: File,
    path: Utf8PathBuf,
}

impl SessionLock {
    /// Take the lock or fail with [`StoreError::InUse`] naming the holder.
    pub fn acquire(locks_dir: &Utf8Path, id: &SessionId) -> Result<SessionLock, StoreError> {
        let path = locks_dir.join(format!("{id}.lock"));
        let mut file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut s = String::new();
                let _ = file.read_to_string(&mut s);
                return Err(StoreError::InUse {
                    id: id.clone(),
                    pid: s.trim().parse().ok(),
                });
            }
            Err(TryLockError::Error(e)) => {
                return Err(StoreError::io("lock", &path)(e));
            }
        }
        // Ours now: record who holds it (informational only).
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = file.write_all(format!("{}\n", std::process::id()).as_bytes());
        Ok(SessionLock { file, path })
    }

    /// Release the lock and remove the lock file (used when the session
    /// never reached the disk or was deleted).
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}
