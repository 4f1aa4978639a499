//! The `deps` check: no declared-but-unused dependencies (`cargo machete`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::{Problem, read, report};

pub const MACHETE_INSTALL: &str = "cargo install --locked cargo-machete";

/// Parses `cargo machete`'s report: each `NAME -- PATH/Cargo.toml:` line
/// followed by tab-indented dependency names. Returns `(manifest, dep)`.
pub fn parse_machete(output: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut manifest: Option<String> = None;
    for line in output.lines() {
        if let Some((_, path)) = line.split_once(" -- ")
            && let Some(path) = path.trim().strip_suffix(':')
            && path.ends_with("Cargo.toml")
        {
            manifest = Some(path.trim_start_matches("./").to_owned());
            continue;
        }
        if line.starts_with('\t') || line.starts_with("    ") {
            if let Some(m) = &manifest {
                let dep = line.trim();
                if !dep.is_empty() {
                    out.push((m.clone(), dep.to_owned()));
                }
            }
        } else {
            manifest = None;
        }
    }
    out
}

/// The line declaring `dep` in a manifest (`dep = …`, `dep.workspace = …`,
/// `[dependencies.dep]`); 1 when not found.
pub fn dep_line(manifest: &str, dep: &str) -> usize {
    for (i, line) in manifest.lines().enumerate() {
        let t = line.trim();
        let rest = t.strip_prefix(dep).map(str::trim_start);
        let declares = matches!(rest, Some(r) if r.starts_with('=') || r.starts_with(".workspace"))
            || (t.starts_with('[') && t.ends_with(&format!(".{dep}]")));
        if declares {
            return i + 1;
        }
    }
    1
}

pub fn deps_step(root: &Path) -> Result<()> {
    let installed = Command::new("cargo-machete")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !installed {
        bail!(
            "cargo-machete is not installed; install it with `{MACHETE_INSTALL}` (.ci/run does this on CI)"
        );
    }
    let mut cmd = Command::new("cargo-machete");
    cmd.current_dir(root);
    eprintln!("+ cargo machete");
    let out = cmd.output().context("cannot run cargo-machete")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        return Ok(());
    }
    let found = parse_machete(&stdout);
    if found.is_empty() {
        bail!(
            "cargo machete failed without naming a dependency:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut problems = Vec::new();
    for (manifest, dep) in found {
        let text = read(&root.join(&manifest)).unwrap_or_default();
        problems.push(Problem {
            line: dep_line(&text, &dep),
            file: manifest,
            message: format!("dependency `{dep}` is declared but not used"),
        });
    }
    report(
        "no unused dependencies",
        problems,
        "Remove each from its Cargo.toml. If one is used in a way cargo-machete cannot \
         see (a macro, a feature), list it under [package.metadata.cargo-machete] \
         ignored = [\"…\"] with a comment saying why.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machete_output_names_manifest_line_and_dep() {
        let out = "Analyzing dependencies of crates in this directory...\n\
                   cargo-machete found the following unused dependencies in .:\n\
                   eonyx-core -- ./crates/core/Cargo.toml:\n\
                   \ttempfile\n\
                   \tetcetera\n\
                   xtask -- ./xtask/Cargo.toml:\n\
                   \tsha2\n\
                   \n\
                   Done!\n";
        assert_eq!(
            parse_machete(out),
            vec![
                ("crates/core/Cargo.toml".to_owned(), "tempfile".to_owned()),
                ("crates/core/Cargo.toml".to_owned(), "etcetera".to_owned()),
                ("xtask/Cargo.toml".to_owned(), "sha2".to_owned()),
            ]
        );
        let manifest = "[package]\nname = \"x\"\n[dependencies]\nserde = \"1\"\ntempfile = { workspace = true }\nsha2.workspace = true\n[dependencies.regex]\nversion = \"1\"\n";
        assert_eq!(dep_line(manifest, "tempfile"), 5);
        assert_eq!(dep_line(manifest, "sha2"), 6);
        assert_eq!(dep_line(manifest, "regex"), 7);
        assert_eq!(dep_line(manifest, "serde"), 4);
    }
}
