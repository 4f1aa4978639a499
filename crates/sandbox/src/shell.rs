//! The shell every command of the model runs with (docs/tools.md#shell):
//! bash when it is on `PATH`, else `sh`. Resolved once per process; the
//! permission rules parse a line with the grammar of this same shell
//! (`eonyx_tools::cmdline`), so the parser and the shell never read a
//! line differently. Every backend (none, bubblewrap, Landlock) spawns
//! [`shell_program`]`().path` with `-c`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The shell commands run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellProgram {
    /// Absolute when found on `PATH` (`/usr/bin/bash`); `sh` otherwise.
    pub path: PathBuf,
    /// bash (its grammar: `&>`, `[[`, `$'…'`); else POSIX `sh`.
    pub bash: bool,
}

impl ShellProgram {
    /// `bash` or `sh`, as `eonyx config` names it.
    pub fn name(&self) -> &'static str {
        if self.bash { "bash" } else { "sh" }
    }
}

/// The shell of this process (see the module doc).
pub fn shell_program() -> &'static ShellProgram {
    static SHELL: OnceLock<ShellProgram> = OnceLock::new();
    SHELL.get_or_init(|| resolve(std::env::var_os("PATH").as_deref()))
}

/// bash from `path` (a `PATH` value) when it is there, else `sh`.
pub fn resolve(path: Option<&std::ffi::OsStr>) -> ShellProgram {
    let found = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("bash"))
        .find(|p| is_executable(p));
    match found {
        Some(path) => ShellProgram { path, bash: true },
        None => ShellProgram {
            path: PathBuf::from("sh"),
            bash: false,
        },
    }
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}
