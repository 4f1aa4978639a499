//! `doctor`: check every session file, repair torn tails, rebuild the index.

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::SessionId;

use crate::lock::SessionLock;
use crate::{SessionLog, Store, StoreError, fsutil};

/// Outcome for one file in [`Store::doctor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoctorStatus {
    Ok,
    /// A torn last line was cut off.
    Repaired {
        torn_bytes: u64,
    },
    /// The file held no complete line (a crash before the first message
    /// was durable) and was removed.
    RemovedEmpty,
    /// Another process is writing it; not checked.
    InUse {
        pid: Option<u32>,
    },
    /// The file cannot be used as a session.
    Unreadable {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctorFile {
    pub path: Utf8PathBuf,
    pub id: SessionId,
    pub status: DoctorStatus,
    pub bad_lines: u64,
    pub unknown_lines: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DoctorReport {
    pub files: Vec<DoctorFile>,
    /// Files in `sessions/` whose names are not `<id>.jsonl`; left alone.
    pub ignored: Vec<Utf8PathBuf>,
}

impl DoctorReport {
    /// True when every session can be read now.
    pub fn all_readable(&self) -> bool {
        !self
            .files
            .iter()
            .any(|f| matches!(f.status, DoctorStatus::Unreadable { .. }))
    }
}

impl Store {
    /// Check every session file: cut torn tails, remove files that never
    /// got a complete line, count skipped lines, rebuild the index.
    pub fn doctor(&self) -> Result<DoctorReport, StoreError> {
        let mut report = DoctorReport::default();
        let (ids, ignored) = self.scan_sessions_dir()?;
        report.ignored = ignored;
        for id in ids {
            let path = self.session_path(&id);
            let mut f = DoctorFile {
                path: path.clone(),
                id: id.clone(),
                status: DoctorStatus::Ok,
                bad_lines: 0,
                unknown_lines: 0,
            };
            let lock = match SessionLock::acquire(&self.dirs.locks, &id) {
                Ok(l) => l,
                Err(StoreError::InUse { pid, .. }) => {
                    f.status = DoctorStatus::InUse { pid };
                    report.files.push(f);
                    continue;
                }
                Err(e) => return Err(e),
            };
            f.status = match self.read_all(&id) {
                Err(StoreError::NotFound { .. }) => continue,
                Err(e) => DoctorStatus::Unreadable {
                    reason: e.to_string(),
                },
                Ok(log) => {
                    f.bad_lines = log.stats.bad_lines;
                    f.unknown_lines = log.stats.unknown_lines;
                    self.doctor_file(&path, &log)?
                }
            };
            if f.status == DoctorStatus::RemovedEmpty {
                lock.remove();
            }
            report.files.push(f);
        }
        self.refresh_all(true)?;
        Ok(report)
    }

    fn doctor_file(&self, path: &Utf8Path, log: &SessionLog) -> Result<DoctorStatus, StoreError> {
        let torn = log.stats.torn_tail_bytes;
        let complete_lines =
            log.records.len() as u64 + log.stats.bad_lines + log.stats.unknown_lines;
        if complete_lines == 0 {
            std::fs::remove_file(path)
                .map_err(StoreError::io("remove empty session file", path))?;
            fsutil::sync_dir(&self.dirs.sessions);
            return Ok(DoctorStatus::RemovedEmpty);
        }
        if torn > 0 {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(StoreError::io("open session file", path))?;
            let len = file
                .metadata()
                .map_err(StoreError::io("read the size of", path))?
                .len();
            file.set_len(len.saturating_sub(torn))
                .and_then(|()| file.sync_data())
                .map_err(StoreError::io("repair the torn end of", path))?;
        }
        if log.header.is_none() {
            return Ok(DoctorStatus::Unreadable {
                reason: "the first line is not a session header".into(),
            });
        }
        Ok(if torn > 0 {
            DoctorStatus::Repaired { torn_bytes: torn }
        } else {
            DoctorStatus::Ok
        })
    }
}
