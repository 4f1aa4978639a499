//! The differential check of the parser against the real shells (the
//! `cmdline` property test and the `shell_differential` fuzz target): a
//! line the rules allow under `shell(ok:*)` is run with `sh` and with
//! `bash` in a scratch directory whose `PATH` holds only stub programs
//! that log their name; anything but `ok` (or a wrapper the rules see
//! through, which the stub does not run further) running, or a file
//! appearing, is a disagreement between the parser and the shell.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use eonyx_core::permissions::{
    PermissionRule, PermissionRules, Rule, RuleList, RuleOrigin, ShellRule,
};

use crate::cmdline::{Dialect, split_as};
use crate::permissions::{RuleMatcher, Verdict};

/// The stub programs on the scratch `PATH`.
pub const STUBS: &[&str] = &[
    "ok", "x", "touch", "rm", "sh", "bash", "git", "npm", "cat", "env", "timeout", "nice", "xargs",
    "python3", "find", "sed", "evil", "id", "nohup", "stdbuf", "setsid", "time",
];

/// What may run under `shell(ok:*)`: `ok`, and the wrappers allow rules
/// see through (their stubs run nothing after them).
const MAY_RUN: &[&str] = &[
    "ok", "env", "timeout", "nice", "nohup", "stdbuf", "setsid", "time",
];

/// Whether the rules `allow = ["shell(ok:*)"]` allow `line` as `dialect`
/// reads it.
pub fn allowed_under_ok(matcher: &RuleMatcher, line: &str, dialect: Dialect) -> bool {
    matcher.shell_split(line, &split_as(line, dialect)) == Verdict::Allow
}

/// `allow = ["shell(ok:*)"]`, compiled.
pub fn ok_matcher() -> RuleMatcher {
    RuleMatcher::new(&PermissionRules {
        rules: vec![PermissionRule {
            list: RuleList::Allow,
            rule: Rule::Shell {
                shell: ShellRule::Prefix("ok".into()),
            },
            text: "shell(ok:*)".into(),
            file: "/differential/config.toml".into(),
            origin: RuleOrigin::Global,
            active: true,
        }],
        project_root: "/differential".into(),
        home: None,
    })
}

/// A scratch directory with the stubs; removed on drop.
pub struct Stubs {
    root: PathBuf,
}

impl Stubs {
    /// Makes the directory (under the system's temporary directory).
    pub fn new() -> std::io::Result<Self> {
        let root = std::env::temp_dir().join(format!(
            "eonyx-differential-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin)?;
        std::fs::create_dir_all(root.join("work"))?;
        for name in STUBS {
            let path = bin.join(name);
            std::fs::write(&path, format!("#!/bin/sh\necho {name} >> \"$STUB_LOG\"\n"))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
            }
        }
        Ok(Self { root })
    }

    /// Runs `line` with `shell` (a path: `/bin/sh`, `/usr/bin/bash`); the
    /// disagreement found, if any: a program other than `ok` ran, or a
    /// file appeared in the working directory.
    pub fn disagreement(&self, shell: &Path, line: &str) -> Option<String> {
        let work = self.root.join("work");
        let log = self.root.join("log");
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).ok()?;
        let child = Process::new(shell)
            .arg("-c")
            .arg(line)
            .current_dir(&work)
            .env_clear()
            .env("PATH", self.root.join("bin"))
            .env("STUB_LOG", &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else {
            return Some(format!("{} did not start", shell.display()));
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
            }
        }
        let ran = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(other) = ran.lines().find(|p| !MAY_RUN.contains(p)) {
            return Some(format!("{} ran `{other}`", shell.display()));
        }
        let made: Vec<String> = std::fs::read_dir(&work)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        (!made.is_empty()).then(|| format!("{} made {made:?}", shell.display()))
    }
}

impl Drop for Stubs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `name` on the system's usual directories, for the shells to compare.
pub fn find_shell(name: &str) -> Option<PathBuf> {
    ["/bin", "/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Checks `line` against both shells: allowed by `matcher` as each reads
/// it, then run. The disagreement found, if any.
pub fn check_line(matcher: &RuleMatcher, stubs: &Stubs, line: &str) -> Option<String> {
    for (dialect, name) in [(Dialect::Sh, "sh"), (Dialect::Bash, "bash")] {
        let Some(shell) = find_shell(name) else {
            continue;
        };
        if allowed_under_ok(matcher, line, dialect)
            && let Some(d) = stubs.disagreement(&shell, line)
        {
            return Some(format!("{line:?} allowed as {dialect:?}: {d}"));
        }
    }
    None
}

#[cfg(test)]
#[path = "differential_tests.rs"]
mod tests;
