//! Build-time version string: `0.1.0 (abc1234)` when built from a git
//! checkout, plain `0.1.0` otherwise (no git, not a checkout, or a source
//! tarball). Exposed to the crate as `env!("EONYX_VERSION")`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=EONYX_BUILD_COMMIT");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_else(|_| "0.0.0".into());
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());

    // An explicit override (packagers building outside a checkout); empty = none.
    let commit = match std::env::var("EONYX_BUILD_COMMIT") {
        Ok(c) => Some(c.trim().to_string()).filter(|c| !c.is_empty()),
        Err(_) => {
            let commit = git(&manifest_dir, &["rev-parse", "--short=7", "HEAD"]);
            if commit.is_some() {
                watch_git(&manifest_dir);
            }
            commit
        }
    };
    let full = match commit {
        Some(c) => format!("{version} ({c})"),
        None => version,
    };
    println!("cargo:rustc-env=EONYX_VERSION={full}");
}

/// Rebuild when HEAD moves: `.git/HEAD`, the branch ref it points at, and
/// `packed-refs` (where refs live after `git gc`).
fn watch_git(dir: &Path) {
    let Some(git_dir) = git(dir, &["rev-parse", "--absolute-git-dir"]) else {
        return;
    };
    let git_dir = PathBuf::from(git_dir);
    let head = git_dir.join("HEAD");
    println!("cargo:rerun-if-changed={}", head.display());
    if let Some(r) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        // The ref may live in the common dir (worktrees).
        let common = git(dir, &["rev-parse", "--git-common-dir"])
            .map(|c| {
                let p = PathBuf::from(c);
                if p.is_absolute() { p } else { dir.join(p) }
            })
            .unwrap_or_else(|| git_dir.clone());
        for base in [&git_dir, &common] {
            let path = base.join(&r);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        let packed = common.join("packed-refs");
        if packed.exists() {
            println!("cargo:rerun-if-changed={}", packed.display());
        }
    }
}
