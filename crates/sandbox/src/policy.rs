//! The policy: what a confined command may write and whether it may reach
//! the network, decided once from the `tools.sandbox*` keys, the project
//! root and the temp dir. Both backends enforce the same [`Policy`]; the
//! "sandbox denied" line judges paths with [`Policy::verdict`].

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::{SandboxConfig, SandboxMode};
use eonyx_core::paths::Env;

/// Names that stay read-only inside the project root: git's directory
/// (hooks and config run code outside any sandbox) and eonyx's own config
/// (it grants tool permissions).
pub const PROTECTED_NAMES: [&str; 2] = [".git", eonyx_core::paths::PROJECT_FILE];

/// What a confined command may do. Paths are canonical (symlinks resolved),
/// so a check is a prefix comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Network (any socket family) allowed.
    pub network: bool,
    /// Directories (and the files under them) a command may write, sorted,
    /// outermost first. Empty in read-only mode.
    pub writable: Vec<Utf8PathBuf>,
    /// Existing paths under a writable root that stay read-only (the
    /// root's `.git` and `eonyx.json`).
    pub read_only: Vec<Utf8PathBuf>,
    /// The project root (canonical).
    pub root: Utf8PathBuf,
}

/// Where a path stands under a [`Policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Under a writable root.
    Writable,
    /// `.git/` or `eonyx.json` of the project.
    Protected,
    /// Outside every writable root (in read-only mode: everywhere).
    Outside,
}

/// Character devices every command may write (what bubblewrap's `--dev`
/// provides): `/dev/null` and friends, terminals, shared memory.
pub const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/pts",
    "/dev/shm",
];

impl Policy {
    /// The policy for commands run in `root`: the project root, `$TMPDIR`,
    /// `/tmp` and `config.writable` (those that exist; `~/` is `$HOME`) in
    /// workspace-write mode, nothing in read-only mode.
    pub fn new(config: &SandboxConfig, root: &Utf8Path, env: &Env) -> Self {
        let root = canonical(root).unwrap_or_else(|| root.to_path_buf());
        let mut writable = Vec::new();
        if config.mode == SandboxMode::WorkspaceWrite {
            let mut candidates = vec![root.clone(), Utf8PathBuf::from("/tmp")];
            if let Some(t) = env.get("TMPDIR") {
                candidates.push(Utf8PathBuf::from(t));
            }
            let home = env.get("HOME").map(Utf8PathBuf::from);
            candidates.extend(config.writable.iter().filter_map(|p| {
                match (p.as_str().strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => Some(home.join(rest)),
                    (Some(_), None) => None,
                    (None, _) => Some(p.clone()),
                }
            }));
            writable = candidates.iter().filter_map(|p| canonical(p)).collect();
            writable.sort();
            writable.dedup();
            // A root inside another adds nothing.
            let all = writable.clone();
            writable.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
        }
        let read_only = PROTECTED_NAMES
            .iter()
            .filter_map(|name| canonical(&root.join(name)))
            .filter(|p| writable.iter().any(|w| p.starts_with(w)))
            .collect();
        Self {
            mode: config.mode,
            network: config.network,
            writable,
            read_only,
            root,
        }
    }

    /// Whether a command may write `path` (absolute, or relative to the
    /// project root; resolved as far as it exists).
    pub fn verdict(&self, path: &Utf8Path) -> Verdict {
        let path = resolve(&self.root.join(path));
        let protected = self.read_only.iter().any(|p| path.starts_with(p))
            || (path.starts_with(&self.root) && self.names_protected(&path));
        if protected && self.writable.iter().any(|w| path.starts_with(w)) {
            return Verdict::Protected;
        }
        if self.writable.iter().any(|w| path.starts_with(w)) {
            Verdict::Writable
        } else {
            Verdict::Outside
        }
    }

    /// `ROOT/.git…` or `ROOT/eonyx.json` even when they do not exist yet.
    fn names_protected(&self, path: &Utf8Path) -> bool {
        path.strip_prefix(&self.root)
            .ok()
            .and_then(|rel| rel.components().next())
            .is_some_and(|first| PROTECTED_NAMES.contains(&first.as_str()))
    }
}

/// The canonical form of an existing path.
pub(crate) fn canonical(path: &Utf8Path) -> Option<Utf8PathBuf> {
    path.canonicalize_utf8().ok()
}

/// `path` with its longest existing prefix canonicalized and the rest
/// normalized lexically (`.` dropped, `..` popped).
pub(crate) fn resolve(path: &Utf8Path) -> Utf8PathBuf {
    let mut lexical = Utf8PathBuf::new();
    for c in path.components() {
        match c {
            camino::Utf8Component::ParentDir => {
                lexical.pop();
            }
            camino::Utf8Component::CurDir => {}
            c => lexical.push(c.as_str()),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Some(real) = canonical(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Utf8PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = Utf8PathBuf::from_path_buf(dir.path().canonicalize().unwrap()).unwrap();
        let root = base.join("work");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join("eonyx.json"), "{}").unwrap();
        (dir, root)
    }

    fn config(mode: SandboxMode, writable: &[&str]) -> SandboxConfig {
        SandboxConfig {
            mode,
            writable: writable.iter().map(Utf8PathBuf::from).collect(),
            ..SandboxConfig::default()
        }
    }

    #[test]
    fn workspace_write_covers_the_root_and_temp_but_not_git_or_eonyx_json() {
        let (_d, root) = project();
        let extra = tempfile::tempdir().unwrap();
        let extra_path = extra.path().to_str().unwrap();
        let p = Policy::new(
            &config(SandboxMode::WorkspaceWrite, &[extra_path, "/no/such/dir"]),
            &root,
            &Env::default(),
        );
        assert_eq!(p.verdict(Utf8Path::new("src/new.rs")), Verdict::Writable);
        assert_eq!(p.verdict(Utf8Path::new("/tmp/x")), Verdict::Writable);
        assert_eq!(
            p.verdict(Utf8Path::new(".git/hooks/pre-commit")),
            Verdict::Protected
        );
        assert_eq!(p.verdict(Utf8Path::new("eonyx.json")), Verdict::Protected);
        assert_eq!(
            p.verdict(Utf8Path::new("sub/../.git/config")),
            Verdict::Protected
        );
        assert_eq!(p.verdict(Utf8Path::new("/etc/passwd")), Verdict::Outside);
        assert_eq!(
            p.verdict(Utf8Path::new("../outside.txt")),
            Verdict::Writable,
            "under /tmp"
        );
        assert_eq!(
            p.verdict(&Utf8Path::new(extra_path).join("cache")),
            Verdict::Writable
        );
        assert_eq!(p.read_only.len(), 2, "{:?}", p.read_only);
        // The project lies under /tmp here: /tmp covers it.
        assert!(!p.writable.contains(&root), "{:?}", p.writable);
    }

    #[test]
    fn read_only_writes_nowhere_and_off_is_kept() {
        let (_d, root) = project();
        let p = Policy::new(&config(SandboxMode::ReadOnly, &[]), &root, &Env::default());
        assert!(p.writable.is_empty());
        assert_eq!(p.verdict(Utf8Path::new("src/new.rs")), Verdict::Outside);
        assert_eq!(p.verdict(Utf8Path::new("/tmp/x")), Verdict::Outside);
    }

    #[test]
    fn tmpdir_and_home_paths_are_writable_and_symlinks_are_judged_by_their_target() {
        let (d, root) = project();
        let tmp = Utf8PathBuf::from_path_buf(d.path().join("mytmp")).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        let home = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
        std::fs::create_dir(home.path().join(".cache")).unwrap();
        std::os::unix::fs::symlink(root.join(".git"), root.join("gitlink")).unwrap();
        let env = Env::from_pairs([
            ("TMPDIR", tmp.as_str()),
            ("HOME", home.path().to_str().unwrap()),
        ]);
        let p = Policy::new(
            &config(SandboxMode::WorkspaceWrite, &["~/.cache"]),
            &root,
            &env,
        );
        assert_eq!(p.verdict(&tmp.join("f")), Verdict::Writable);
        let cache = Utf8PathBuf::from_path_buf(home.path().canonicalize().unwrap()).unwrap();
        assert_eq!(p.verdict(&cache.join(".cache/x")), Verdict::Writable);
        assert_eq!(p.verdict(&cache.join("x")), Verdict::Outside);
        assert_eq!(
            p.verdict(Utf8Path::new("gitlink/config")),
            Verdict::Protected
        );
    }
}
