//! The `layers` check: ARCHITECTURE.md draws every arrow between the
//! workspace's crates, and only those. The arrows are the list in the
//! fenced block after the line naming this check; each line is
//! `crate -> dep, dep` (or `crate -> (none)`). They are compared with the
//! `eonyx-*` entries of each crate's `[dependencies]` and its
//! `[target.*.dependencies]` tables (dev-dependencies are not arrows).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};

use super::{Problem, read, report};

/// The map.
pub const MAP: &str = "ARCHITECTURE.md";

/// The line that introduces the arrows block (a substring of it).
pub const MARKER: &str = "checked by `cargo xtask ci layers`";

/// Crate name (directory under `crates/`) to the crates it depends on.
pub type Arrows = BTreeMap<String, BTreeSet<String>>;

/// The arrows drawn in the map, with the line of each crate's entry.
/// `None` when the map has no arrows block.
pub fn drawn(map: &str) -> Option<(Arrows, BTreeMap<String, usize>)> {
    let mut lines = map.lines().enumerate();
    lines.find(|(_, l)| l.contains(MARKER))?;
    lines.find(|(_, l)| l.trim_start().starts_with("```"))?;
    let mut arrows = Arrows::new();
    let mut at = BTreeMap::new();
    for (i, line) in lines {
        let t = line.trim();
        if t.starts_with("```") {
            return Some((arrows, at));
        }
        let Some((from, to)) = t.split_once("->") else {
            continue;
        };
        let from = from.trim().to_owned();
        let deps = to
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty() && *d != "(none)")
            .map(str::to_owned)
            .collect();
        at.insert(from.clone(), i + 1);
        arrows.insert(from, deps);
    }
    None
}

/// The `eonyx-*` crates a manifest depends on outside dev-dependencies,
/// named without the prefix.
pub fn declared(manifest: &str) -> Result<BTreeSet<String>> {
    let doc: toml::Table = toml::from_str(manifest).context("cannot parse the manifest")?;
    let mut out = BTreeSet::new();
    let mut take = |table: Option<&toml::Value>| {
        if let Some(t) = table.and_then(toml::Value::as_table) {
            for name in t.keys() {
                if let Some(short) = name.strip_prefix("eonyx-") {
                    out.insert(short.to_owned());
                }
            }
        }
    };
    take(doc.get("dependencies"));
    if let Some(targets) = doc.get("target").and_then(toml::Value::as_table) {
        for cfg in targets.values() {
            take(cfg.get("dependencies"));
        }
    }
    Ok(out)
}

/// The differences between drawn and declared arrows, as problems on the map.
pub fn compare(
    drawn: &Arrows,
    at: &BTreeMap<String, usize>,
    real: &Arrows,
    block_line: usize,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let problem = |line: usize, message: String| Problem {
        file: MAP.to_owned(),
        line,
        message,
    };
    for (krate, deps) in real {
        let Some(drawn_deps) = drawn.get(krate) else {
            problems.push(problem(
                block_line,
                format!("crates/{krate} has no line in the arrows block"),
            ));
            continue;
        };
        let line = at.get(krate).copied().unwrap_or(block_line);
        for d in deps.difference(drawn_deps) {
            problems.push(problem(
                line,
                format!("{krate} depends on {d} (Cargo.toml) but the map draws no arrow"),
            ));
        }
        for d in drawn_deps.difference(deps) {
            problems.push(problem(
                line,
                format!("the map draws {krate} -> {d}, but crates/{krate}/Cargo.toml has no such dependency"),
            ));
        }
    }
    for krate in drawn.keys().filter(|k| !real.contains_key(*k)) {
        let line = at.get(krate).copied().unwrap_or(block_line);
        problems.push(problem(
            line,
            format!("the map draws `{krate}`, which is not a crate under crates/"),
        ));
    }
    problems
}

pub fn layers_step(root: &Path) -> Result<()> {
    let map = read(&root.join(MAP))?;
    let block_line = map
        .lines()
        .position(|l| l.contains(MARKER))
        .map_or(1, |i| i + 1);
    let Some((drawn, at)) = drawn(&map) else {
        return report(
            "layers",
            vec![Problem {
                file: MAP.to_owned(),
                line: 1,
                message: format!(
                    "no arrows block: a line containing \"{MARKER}\" followed by a fenced block"
                ),
            }],
            "Draw every crate's arrows in ARCHITECTURE.md.",
        );
    };
    let mut real = Arrows::new();
    let crates = root.join("crates");
    let entries =
        std::fs::read_dir(&crates).with_context(|| format!("cannot list {}", crates.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", crates.display()))?;
        let manifest = entry.path().join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let deps =
            declared(&read(&manifest)?).with_context(|| format!("in {}", manifest.display()))?;
        real.insert(name, deps);
    }
    report(
        "layers",
        compare(&drawn, &at, &real, block_line),
        "Make ARCHITECTURE.md's arrows block match the Cargo.toml files (and check the layering rules around it still hold).",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP_TEXT: &str = "intro\nArrows (checked by `cargo xtask ci layers`):\n\n```text\ncore  -> (none)\nstore -> core\ntools -> core, store\n```\n";

    fn arrows(pairs: &[(&str, &[&str])]) -> Arrows {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn the_block_is_read_with_each_crates_line() {
        let (a, at) = drawn(MAP_TEXT).unwrap_or_default();
        assert_eq!(
            a,
            arrows(&[
                ("core", &[]),
                ("store", &["core"]),
                ("tools", &["core", "store"])
            ])
        );
        assert_eq!(at.get("tools"), Some(&7));
    }

    #[test]
    fn no_block_is_none() {
        assert!(drawn("# Architecture\n```text\na -> b\n```\n").is_none());
    }

    #[test]
    fn normal_and_target_dependencies_count_dev_dependencies_do_not() {
        let manifest = "[package]\nname = \"x\"\n[dependencies]\neonyx-core = { workspace = true }\nserde = \"1\"\n[dev-dependencies]\neonyx-tests = { workspace = true }\n[target.'cfg(unix)'.dependencies]\neonyx-sandbox = { workspace = true }\n";
        let d = declared(manifest).unwrap_or_default();
        assert_eq!(
            d,
            ["core", "sandbox"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        );
    }

    #[test]
    fn a_missing_arrow_an_extra_arrow_and_a_missing_crate_are_each_named() {
        let (d, at) = drawn(MAP_TEXT).unwrap_or_default();
        let real = arrows(&[
            ("core", &[]),
            ("store", &["core", "web"]),
            ("tools", &["core"]),
            ("web", &["core"]),
        ]);
        let msgs: Vec<String> = compare(&d, &at, &real, 2)
            .into_iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            msgs,
            [
                "ARCHITECTURE.md:6: store depends on web (Cargo.toml) but the map draws no arrow",
                "ARCHITECTURE.md:7: the map draws tools -> store, but crates/tools/Cargo.toml has no such dependency",
                "ARCHITECTURE.md:2: crates/web has no line in the arrows block",
            ]
        );
    }

    #[test]
    fn the_repositorys_map_matches_its_manifests() -> Result<()> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        layers_step(&root)
    }
}
