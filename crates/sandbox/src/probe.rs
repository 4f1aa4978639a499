//! Which backends work here, found out once per process by running `true`
//! through each the way a command would run (so a `bwrap` that cannot
//! create namespaces, or a kernel without Landlock, counts as unavailable).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use camino::Utf8PathBuf;
use eonyx_core::config::SandboxMode;

use crate::helper::{Spec, helper_command};
use crate::policy::Policy;

static BWRAP: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static LANDLOCK: OnceLock<Result<String, String>> = OnceLock::new();

/// `bwrap` on `PATH`, if it works.
pub fn bwrap() -> Result<PathBuf, String> {
    BWRAP.get_or_init(probe_bwrap).clone()
}

/// What Landlock enforces through `helper`, if it works.
pub fn landlock(helper: &Path) -> Result<String, String> {
    LANDLOCK.get_or_init(|| probe_landlock(helper)).clone()
}

/// The probe's policy: every kind of mount and namespace a command gets.
fn probe_policy() -> Policy {
    let tmp = Utf8PathBuf::from_path_buf(std::env::temp_dir())
        .ok()
        .and_then(|t| t.canonicalize_utf8().ok())
        .unwrap_or_else(|| Utf8PathBuf::from("/tmp"));
    Policy {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        writable: vec![tmp.clone()],
        read_only: vec![tmp.clone()],
        root: tmp,
    }
}

fn probe_bwrap() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH");
    let bwrap = crate::bwrap::find(path.as_deref()).ok_or("not found on PATH")?;
    let mut cmd = Command::new(&bwrap);
    cmd.args(crate::bwrap::args(&probe_policy(), Path::new("/")))
        .arg("true");
    run(cmd).map(|_| bwrap)
}

fn probe_landlock(helper: &Path) -> Result<String, String> {
    let mut spec = Spec::for_policy(&probe_policy());
    spec.probe = true;
    run(helper_command(helper, &spec, Path::new("/")))
}

/// Runs a probe: its stdout when it exits 0, else why not.
fn run(mut cmd: Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cmd.get_program().to_string_lossy()))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    Err(if first.is_empty() {
        format!("its test run failed ({})", out.status)
    } else {
        first.strip_prefix("error: ").unwrap_or(first).to_owned()
    })
}
