//! File access for context discovery, behind a trait so tests can inject
//! failures (unreadable files and directories) that root would not see.

use std::io::{self, Read};

use camino::Utf8Path;

/// What reading one context file produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// The first bytes of the file, at most the limit asked for.
    pub bytes: Vec<u8>,
    /// The whole file's size in bytes (at least `bytes.len()`).
    pub size: u64,
}

/// How the loader reaches the filesystem.
///
/// Errors are never fatal to the loader: `NotFound` is skipped silently
/// (the file or directory vanished between listing and reading), every
/// other error is skipped with a warning.
pub trait ContextReader: Send + Sync {
    /// The names of the entries of `dir` (names that are not UTF-8 may be
    /// left out: they can never be context files).
    fn list_dir(&self, dir: &Utf8Path) -> io::Result<Vec<String>>;

    /// Read at most `limit` bytes from the start of the regular file at
    /// `path` (following symlinks) and report its full size. Anything that
    /// is not a regular file is an error, so a FIFO never blocks the walk.
    fn read_file(&self, path: &Utf8Path, limit: u64) -> io::Result<FileContent>;
}

/// The real filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsReader;

impl ContextReader for FsReader {
    fn list_dir(&self, dir: &Utf8Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn read_file(&self, path: &Utf8Path, limit: u64) -> io::Result<FileContent> {
        // `metadata` follows symlinks: a symlink loop fails here (ELOOP).
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        let file = std::fs::File::open(path)?;
        let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
        file.take(limit).read_to_end(&mut bytes)?;
        let size = meta.len().max(bytes.len() as u64);
        Ok(FileContent { bytes, size })
    }
}
