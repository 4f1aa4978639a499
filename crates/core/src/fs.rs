//! The one atomic file write of eonyx: a temporary file in the same
//! directory, then a rename over the target. A crash leaves the old file or
//! the new one, never half of either.
//!
//! Invariant: every file eonyx replaces (session index, limits cache,
//! `config.toml` on `eonyx trust`, files the editing tools write) goes
//! through [`write_atomic`].

use std::io::{self, Write};

use camino::Utf8Path;

/// How [`write_atomic`] treats the new file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtomicWrite {
    /// fsync the file before the rename (a crash right after still finds
    /// the new content).
    pub durable: bool,
    /// A file that did not exist is created readable only by the user
    /// (0600 on unix); otherwise with the usual mode (0666 less the umask).
    /// An existing file always keeps its mode.
    pub private: bool,
}

/// Replace (or create) `path` with exactly `bytes`. The directory must
/// exist. The error is the underlying I/O error; callers name the path.
pub fn write_atomic(path: &Utf8Path, bytes: &[u8], how: AtomicWrite) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_str().is_empty() => d,
        _ => Utf8Path::new("."),
    };
    let existing = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut builder = tempfile::Builder::new();
    builder.prefix(".eonyx-tmp-");
    #[cfg(unix)]
    if existing.is_none() && !how.private {
        use std::os::unix::fs::PermissionsExt;
        // Subject to the umask, like any newly created file.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some(perms) = existing {
        tmp.as_file().set_permissions(perms)?;
    }
    if how.durable {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, camino::Utf8PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let p = camino::Utf8PathBuf::from_path_buf(t.path().to_path_buf()).unwrap();
        (t, p)
    }

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let (_t, d) = dir();
        let p = d.join("a.txt");
        write_atomic(&p, b"one", AtomicWrite::default()).unwrap();
        write_atomic(
            &p,
            b"two\r\n",
            AtomicWrite {
                durable: true,
                private: false,
            },
        )
        .unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two\r\n");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn keeps_the_mode_of_an_existing_file_and_picks_one_for_new_files() {
        use std::os::unix::fs::PermissionsExt;
        let (_t, d) = dir();
        let mode = |p: &Utf8Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let script = d.join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic(&script, b"new", AtomicWrite::default()).unwrap();
        assert_eq!(mode(&script), 0o751);

        let private = d.join("secret");
        write_atomic(
            &private,
            b"x",
            AtomicWrite {
                durable: false,
                private: true,
            },
        )
        .unwrap();
        assert_eq!(mode(&private), 0o600);

        let public = d.join("public");
        write_atomic(&public, b"x", AtomicWrite::default()).unwrap();
        // 0666 less the umask, like any new file.
        let umask = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let l = s.lines().find(|l| l.starts_with("Umask:"))?;
                u32::from_str_radix(l["Umask:".len()..].trim(), 8).ok()
            })
            .unwrap_or(0o022);
        assert_eq!(mode(&public), 0o666 & !umask);
    }
}
