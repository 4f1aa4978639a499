//! File history (docs/session-format.md#file-history): the content a file
//! had before `write_file` / `edit_file` changed it, kept as
//! `<data dir>/file-history/<session id>/<sha256>` so that `/rewind` can put
//! it back; and the note of a rewind whose file restore has begun.
//!
//! Invariants:
//! - A name is the lowercase hex sha256 of the content; anything else is
//!   refused, so a damaged session file cannot name a path outside the
//!   directory. A kept file is never rewritten (same name, same content).
//! - Directories are 0700, files 0600, written atomically and fsynced
//!   before the change they undo is made.
//! - The directory goes with its session: deleted with it, and a fork gets
//!   the kept contents its copied records name.
//! - No content holding a configured API key value is kept: the agent
//!   checks before calling [`FileHistory::keep`] and marks such a change
//!   as not undoable instead.

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::SessionId;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::{Store, StoreError, fsutil};

/// The name of the note of a rewind in progress.
const PENDING: &str = "rewind.pending";

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

fn valid_hash(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A rewind whose file restore began and whose record may not be written
/// yet: what a resumed session needs to finish it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRewind {
    /// The rewind's target.
    pub to_seq: u64,
    /// The seq the rewind record takes: when the session's next seq is
    /// past it, the record was written.
    pub at_seq: u64,
}

/// One session's kept file contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHistory {
    dir: Utf8PathBuf,
}

impl Store {
    /// The file history of a session (its directory appears with the
    /// first content kept).
    pub fn file_history(&self, id: &SessionId) -> FileHistory {
        FileHistory {
            dir: self.dirs.data.join("file-history").join(id.as_str()),
        }
    }
}

impl FileHistory {
    pub fn dir(&self) -> &Utf8Path {
        &self.dir
    }

    fn path_of(&self, sha: &str) -> Result<Utf8PathBuf, StoreError> {
        if !valid_hash(sha) {
            return Err(StoreError::BadHash(sha.to_owned()));
        }
        Ok(self.dir.join(sha))
    }

    /// Keep `bytes`; returns their sha256. Durable when it returns.
    pub fn keep(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let sha = sha256_hex(bytes);
        let path = self.path_of(&sha)?;
        if path.exists() {
            return Ok(sha);
        }
        fsutil::create_private_dir(&self.dir)?;
        fsutil::atomic_write(&path, bytes, true)?;
        fsutil::sync_dir(&self.dir);
        Ok(sha)
    }

    /// The content kept under `sha`; `None` when it is not there.
    pub fn get(&self, sha: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path_of(sha)?;
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("read the kept content", path)(e)),
        }
    }

    /// Give `other` the contents named by `hashes` that this history
    /// holds (hard links where the file system allows, else copies).
    pub fn copy_to<'a>(
        &self,
        other: &FileHistory,
        hashes: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), StoreError> {
        for sha in hashes {
            let (from, to) = (self.path_of(sha)?, other.path_of(sha)?);
            if !from.exists() || to.exists() {
                continue;
            }
            fsutil::create_private_dir(&other.dir)?;
            if std::fs::hard_link(&from, &to).is_err() {
                let bytes =
                    std::fs::read(&from).map_err(StoreError::io("read the kept content", &from))?;
                fsutil::atomic_write(&to, &bytes, true)?;
            }
        }
        fsutil::sync_dir(&other.dir);
        Ok(())
    }

    /// Note that a rewind's file restore begins (replaced atomically).
    pub fn set_pending(&self, pending: &PendingRewind) -> Result<(), StoreError> {
        fsutil::create_private_dir(&self.dir)?;
        let text = serde_json::to_string(pending).unwrap_or_default();
        fsutil::atomic_write(&self.dir.join(PENDING), text.as_bytes(), true)?;
        fsutil::sync_dir(&self.dir);
        Ok(())
    }

    /// The rewind noted by [`FileHistory::set_pending`] and not cleared;
    /// a damaged note reads as none.
    pub fn pending(&self) -> Option<PendingRewind> {
        let text = std::fs::read(self.dir.join(PENDING)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The rewind is complete (its record is written).
    pub fn clear_pending(&self) -> Result<(), StoreError> {
        let path = self.dir.join(PENDING);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                fsutil::sync_dir(&self.dir);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove", path)(e)),
        }
    }

    /// Remove the whole history (the session is deleted).
    pub(crate) fn remove(&self) -> Result<(), StoreError> {
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove the file history", &self.dir)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_lowercase_hex_of_the_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(valid_hash(&sha256_hex(b"")));
        assert!(!valid_hash("../../etc/passwd"));
        assert!(!valid_hash(&sha256_hex(b"x").to_uppercase()));
    }

    #[test]
    fn kept_contents_are_private_read_back_copied_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(dir.path().to_path_buf()).unwrap();
        let store = Store::open(&root.join("data")).unwrap();
        let a = SessionId::parse("20260101T000000-0000000a").unwrap();
        let b = SessionId::parse("20260101T000000-0000000b").unwrap();
        let h = store.file_history(&a);
        assert_eq!(h.get(&sha256_hex(b"v1")).unwrap(), None);
        let sha = h.keep(b"v1\n").unwrap();
        assert_eq!(sha, h.keep(b"v1\n").unwrap(), "kept once");
        assert_eq!(h.get(&sha).unwrap().as_deref(), Some(&b"v1\n"[..]));
        assert!(matches!(h.get("../x"), Err(StoreError::BadHash(_))));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Utf8Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(h.dir()), 0o700);
            assert_eq!(mode(&h.dir().join(&sha)), 0o600);
        }
        let other = store.file_history(&b);
        h.copy_to(&other, [sha.as_str(), &sha256_hex(b"never kept")])
            .unwrap();
        assert_eq!(other.get(&sha).unwrap().as_deref(), Some(&b"v1\n"[..]));

        let p = PendingRewind {
            to_seq: 4,
            at_seq: 9,
        };
        assert_eq!(h.pending(), None);
        h.set_pending(&p).unwrap();
        assert_eq!(h.pending(), Some(p));
        h.clear_pending().unwrap();
        assert_eq!(h.pending(), None);
        h.remove().unwrap();
        assert!(!h.dir().exists());
        assert!(other.dir().exists());
    }
}
