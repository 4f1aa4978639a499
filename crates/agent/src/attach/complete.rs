//! Tab completion of the path after `@`: the entries of the directory
//! typed so far whose names start with what follows its last `/`,
//! directories first, each group by name; what `.gitignore` ignores is
//! left out, and so are dot files unless the name typed starts with `.`.

use camino::{Utf8Path, Utf8PathBuf};

/// At most this many candidates are offered.
const MAX_CANDIDATES: usize = 200;

/// One completion of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The whole path to put after `@` (a directory ends with `/`).
    pub path: String,
    /// The entry's name as listed (`src/`, `main.rs`).
    pub name: String,
    pub is_dir: bool,
}

/// Completions of `typed` (the text after `@` up to the cursor), relative
/// to `cwd` unless absolute or `~/` (`home`).
pub fn complete(typed: &str, cwd: &Utf8Path, home: Option<&str>) -> Vec<Candidate> {
    let (dir_part, prefix) = match typed.rfind('/') {
        Some(i) => typed.split_at(i + 1),
        None => ("", typed),
    };
    let dir: Utf8PathBuf = if let (Some(rest), Some(h)) = (dir_part.strip_prefix("~/"), home) {
        Utf8PathBuf::from(h).join(rest)
    } else if dir_part.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.join(dir_part)
    };
    if !dir.is_dir() {
        return Vec::new();
    }
    let show_hidden = prefix.starts_with('.');
    let mut walk = crate::tools::walker(&dir);
    walk.max_depth(Some(1));
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for entry in walk.build().flatten() {
        if entry.depth() != 1 {
            continue;
        }
        let Some(name) = entry.file_name().to_str() else {
            continue;
        };
        if !name.starts_with(prefix) || (name.starts_with('.') && !show_hidden) {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir())
            || (entry.path_is_symlink() && entry.path().is_dir());
        let c = Candidate {
            path: format!("{dir_part}{name}{}", if is_dir { "/" } else { "" }),
            name: format!("{name}{}", if is_dir { "/" } else { "" }),
            is_dir,
        };
        if is_dir { dirs.push(c) } else { files.push(c) }
    }
    dirs.sort_by(|a, b| a.name.cmp(&b.name));
    files.sort_by(|a, b| a.name.cmp(&b.name));
    dirs.extend(files);
    dirs.truncate(MAX_CANDIDATES);
    dirs
}
