//! The change journal: every append, rename and delete adds `<id>\n` to
//! `<data dir>/journal` (after the session file itself is written), so that
//! listing refreshes only the sessions that changed instead of checking
//! every file. Writers append under a shared lock; a lister rotates the
//! journal under an exclusive lock, starting a new epoch. An index whose
//! epoch does not match the journal's falls back to checking every file.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::SessionId;

use crate::fsutil::private_options;

/// Rotate once the journal is bigger than this.
pub(crate) const ROTATE_BYTES: u64 = 1024 * 1024;

pub(crate) struct JournalRead {
    /// Epoch from the journal's header line (empty when it has none).
    pub epoch: String,
    pub changed: BTreeSet<SessionId>,
    /// Journal length read up to.
    pub end: u64,
    /// Whether `from` was a valid position in this journal.
    pub offset_ok: bool,
}

pub(crate) fn path(data_dir: &Utf8Path) -> Utf8PathBuf {
    data_dir.join("journal")
}

/// Open the journal for appending (created if missing).
pub(crate) fn open_append(data_dir: &Utf8Path) -> std::io::Result<File> {
    private_options()
        .create(true)
        .append(true)
        .open(path(data_dir))
}

/// Record that `id` changed. Best effort by design: the session file is
/// already durable; a lost note only delays listing until the next change
/// or `doctor`.
pub(crate) fn note(file: &File, id: &SessionId) {
    if file.lock_shared().is_ok() {
        let mut f = file;
        let _ = f.write_all(format!("{id}\n").as_bytes());
        let _ = file.unlock();
    }
}

fn header_line(epoch: &str) -> String {
    format!("eonyx-journal {epoch}\n")
}

fn parse_header(bytes: &[u8]) -> Option<(String, u64)> {
    let nl = memchr::memchr(b'\n', bytes)?;
    let line = std::str::from_utf8(&bytes[..nl]).ok()?;
    let epoch = line.strip_prefix("eonyx-journal ")?;
    Some((epoch.to_owned(), nl as u64 + 1))
}

/// Read the ids noted since `from`.
pub(crate) fn read(data_dir: &Utf8Path, from: u64) -> std::io::Result<JournalRead> {
    let mut file = match File::open(path(data_dir)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(JournalRead {
                epoch: String::new(),
                changed: BTreeSet::new(),
                end: 0,
                offset_ok: false,
            });
        }
        Err(e) => return Err(e),
    };
    file.lock_shared()?;
    let result = (|| {
        let len = file.metadata()?.len();
        let mut head = vec![0u8; 128.min(len as usize)];
        file.read_exact(&mut head)?;
        let (epoch, body) = parse_header(&head).unwrap_or_default();
        let offset_ok = !epoch.is_empty() && from >= body && from <= len;
        let mut changed = BTreeSet::new();
        if offset_ok {
            file.seek(SeekFrom::Start(from))?;
            let mut rest = Vec::with_capacity((len - from) as usize);
            (&mut file).take(len - from).read_to_end(&mut rest)?;
            for line in rest.split(|b| *b == b'\n') {
                if let Some(id) = std::str::from_utf8(line)
                    .ok()
                    .and_then(|s| SessionId::parse(s).ok())
                {
                    changed.insert(id);
                }
            }
        }
        Ok(JournalRead {
            epoch,
            changed,
            end: len,
            offset_ok,
        })
    })();
    let _ = file.unlock();
    result
}

/// Start a new epoch if the journal still has exactly `expected_len` bytes
/// (nobody noted anything since it was read). Returns the new epoch and the
/// offset of its first entry.
pub(crate) fn rotate(data_dir: &Utf8Path, expected_len: u64) -> Option<(String, u64)> {
    let file = private_options()
        .create(true)
        .append(true)
        .read(true)
        .open(path(data_dir))
        .ok()?;
    file.lock().ok()?;
    let result = (|| {
        if file.metadata().ok()?.len() != expected_len {
            return None;
        }
        let epoch = format!(
            "{:x}-{:x}",
            jiff::Timestamp::now().as_nanosecond(),
            std::process::id()
        );
        file.set_len(0).ok()?;
        let head = header_line(&epoch);
        (&file).write_all(head.as_bytes()).ok()?;
        Some((epoch, head.len() as u64))
    })();
    let _ = file.unlock();
    result
}
