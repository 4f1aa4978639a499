//! A temporary directory tree for the crate's tests (context files and
//! skills alike). Each test module adds the methods only it needs.
#![allow(clippy::unwrap_used)]

use camino::Utf8PathBuf;

pub struct Tree {
    _tmp: tempfile::TempDir,
    /// Canonical, so paths compare equal to the ones the loaders build.
    pub root: Utf8PathBuf,
}

impl Tree {
    /// An empty tree holding only `config/` (the config directory).
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(tmp.path().canonicalize().unwrap()).unwrap();
        std::fs::create_dir_all(root.join("config")).unwrap();
        Self { _tmp: tmp, root }
    }

    /// A tree holding `files` (path, content) besides `config/`.
    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let t = Self::new();
        for (rel, content) in files {
            t.write(rel, content);
        }
        t
    }

    pub fn path(&self, rel: &str) -> Utf8PathBuf {
        self.root.join(rel)
    }

    /// Write `rel` (parents created) and return its path.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> Utf8PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.path(rel)).unwrap();
    }
}
