//! The `cycles` check: no two modules of one crate import each other
//! (ARCHITECTURE.md, "Dependencies point down only").
//!
//! Each `src/` directory under `crates/`, `xtask/` and `tests/` is one crate.
//! Every file is a module (`lib.rs`/`main.rs` the root, `a/mod.rs` and
//! `a.rs` the module `a`, `a/b.rs` its child `b`). A path in a file that
//! starts with `crate::`, `super::` or `self::` (in a `use` tree or in the
//! code) names the deepest module its leading segments spell. A module and
//! its ancestors may name each other freely (`super::Agent`, a parent's
//! `pub use child::X`); any other reference is lifted to the two siblings
//! under the closest common ancestor that contain each end (so a file under
//! `resolve/` counts as `resolve`). A set of siblings that reach each
//! other through such edges is a cycle, reported with one reference of
//! each edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;

use anyhow::Result;
use regex::Regex;

use super::{Problem, files_with_ext, re, read, rel, report};

/// A module: its path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// The module a file under `src` is, from its path relative to `src`.
pub fn module_of(rel_path: &str) -> ModPath {
    let mut parts: Vec<String> = rel_path.split('/').map(str::to_owned).collect();
    let Some(last) = parts.pop() else {
        return Vec::new();
    };
    match last.as_str() {
        "lib.rs" | "main.rs" if parts.is_empty() => Vec::new(),
        "mod.rs" => parts,
        name => {
            parts.push(name.trim_end_matches(".rs").to_owned());
            parts
        }
    }
}

/// Source text with comments, string and char literals blanked (newlines
/// kept, so line numbers hold).
pub fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_ident(&b, i) {
            // Raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                if b[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && !prev_ident(&b, i) {
            // A char literal ('a', '\n', '\u{1F600}'), not a lifetime.
            let close = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')
            } else {
                (b.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            match close {
                Some(k) => {
                    out.push_str("' '");
                    i = k + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// A stripped file without the items marked `#[cfg(test)]` (tests may
/// reach anywhere; newlines kept).
pub fn without_tests(stripped: &str) -> String {
    let mut out = String::with_capacity(stripped.len());
    let mut rest = stripped;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        // The item ends at its `;` or at the brace closing its body.
        let mut depth = 0;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        out.extend(item[..end].chars().filter(|c| *c == '\n'));
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path a stripped file names, with its line: `use` trees expanded
/// (`use crate::a::{b, c::d}` gives `crate::a::b` and `crate::a::c::d`),
/// and every other `crate::…`, `super::…` or `self::…` path in the code.
pub fn paths_in(stripped: &str) -> Vec<(usize, String)> {
    static USE_RE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]*);"));
    static PATH_RE: LazyLock<Regex> =
        LazyLock::new(|| re(r"\b(?:crate|super|self)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+"));
    static AS_RE: LazyLock<Regex> = LazyLock::new(|| re(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*"));
    let line_of = |offset: usize| stripped[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut in_use = Vec::new();
    for m in USE_RE.captures_iter(stripped) {
        let Some(tree) = m.get(1) else { continue };
        in_use.push(tree.start()..tree.end());
        let line = line_of(tree.start());
        let renamed = AS_RE.replace_all(tree.as_str(), "");
        let compact: String = renamed.chars().filter(|c| !c.is_whitespace()).collect();
        for p in expand_use(&compact) {
            out.push((line, p));
        }
    }
    for m in PATH_RE.find_iter(stripped) {
        if in_use.iter().any(|r| r.contains(&m.start())) {
            continue;
        }
        let p: String = m.as_str().chars().filter(|c| !c.is_whitespace()).collect();
        out.push((line_of(m.start()), p));
    }
    out
}

/// The paths of a `use` tree without white space.
fn expand_use(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.trim_end_matches("::").to_owned()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = tree[open + 1..]
        .strip_suffix('}')
        .unwrap_or(&tree[open + 1..]);
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    for item in items.into_iter().filter(|s| !s.is_empty()) {
        for p in expand_use(item) {
            out.push(match (prefix.is_empty(), p.as_str()) {
                (true, _) => p,
                (false, "self") => prefix.to_owned(),
                (false, _) => format!("{prefix}::{p}"),
            });
        }
    }
    out
}

/// The module `path` names from a file of module `from`, among `modules`:
/// the deepest one its leading segments spell. `None` for paths outside
/// the crate.
pub fn resolve(from: &[String], path: &str, modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut segs = path.split("::");
    let mut base: ModPath = match segs.next()? {
        "crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => from[..from.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    let mut rest: Vec<&str> = segs.collect();
    while rest.first() == Some(&"super") {
        base.pop()?;
        rest.remove(0);
    }
    for s in rest {
        let mut next = base.clone();
        next.push(s.to_owned());
        if modules.contains(&next) {
            base = next;
        } else {
            break;
        }
    }
    Some(base)
}

/// One reference from a file to another module: where it is.
#[derive(Debug, Clone)]
struct Reference {
    file: String,
    line: usize,
    path: String,
}

/// An import between two siblings, with its first reference (file
/// relative to `src`, line, the path written).
#[derive(Debug, Clone)]
pub struct Edge {
    pub from: ModPath,
    pub to: ModPath,
    pub file: String,
    pub line: usize,
    pub path: String,
}

/// The module cycles among the `files` of one crate (`(path relative to
/// src, text)`): each as the siblings in it, and one reference per edge.
pub fn cycles(files: &[(String, String)]) -> Vec<Vec<Edge>> {
    let modules: BTreeSet<ModPath> = files.iter().map(|(p, _)| module_of(p)).collect();
    // Edges between siblings: (from, to) -> first reference.
    let mut edges: BTreeMap<(ModPath, ModPath), Reference> = BTreeMap::new();
    for (file, text) in files {
        let from = module_of(file);
        for (line, path) in paths_in(&without_tests(&strip(text))) {
            let Some(to) = resolve(&from, &path, &modules) else {
                continue;
            };
            if to.starts_with(&from) || from.starts_with(&to) {
                continue;
            }
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            let a = from[..=common].to_vec();
            let b = to[..=common].to_vec();
            edges.entry((a, b)).or_insert(Reference {
                file: file.clone(),
                line,
                path: path.clone(),
            });
        }
    }
    // Strongly connected sets: siblings that reach each other.
    let nodes: BTreeSet<&ModPath> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reach = |start: &ModPath| -> BTreeSet<ModPath> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(n) = stack.pop() {
            for (a, b) in edges.keys() {
                if a == &n && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&ModPath, BTreeSet<ModPath>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reachable[n].contains(*n) {
            continue;
        }
        let set: BTreeSet<ModPath> = reachable[n]
            .iter()
            .filter(|m| reachable.get(m).is_some_and(|r| r.contains(*n)))
            .cloned()
            .collect();
        let mut cycle = Vec::new();
        for ((a, b), r) in &edges {
            if set.contains(a) && set.contains(b) {
                cycle.push(Edge {
                    from: a.clone(),
                    to: b.clone(),
                    file: r.file.clone(),
                    line: r.line,
                    path: r.path.clone(),
                });
            }
        }
        done.extend(set);
        out.push(cycle);
    }
    out
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// The cycles of every crate under `root`, one problem per cycle.
pub fn check_cycles(root: &Path) -> Result<Vec<Problem>> {
    let mut srcs = Vec::new();
    for parent in ["crates", "xtask", "tests"] {
        let dir = root.join(parent);
        if dir.join("src").is_dir() {
            srcs.push(dir.join("src"));
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.path().join("src").is_dir() {
                    srcs.push(e.path().join("src"));
                }
            }
        }
    }
    srcs.sort();
    let mut problems = Vec::new();
    for src in srcs {
        let mut files = Vec::new();
        for path in files_with_ext(&src, ".rs")? {
            files.push((rel(&src, &path), read(&path)?));
        }
        for cycle in cycles(&files) {
            let Some(first) = cycle.first() else {
                continue;
            };
            let mut msg = String::from("modules import each other:");
            for e in &cycle {
                msg.push_str(&format!(
                    "\n    {} -> {} (`{}` at {}:{})",
                    name(&e.from),
                    name(&e.to),
                    e.path,
                    rel(root, &src.join(&e.file)),
                    e.line
                ));
            }
            problems.push(Problem {
                file: rel(root, &src.join(&first.file)),
                line: first.line,
                message: msg,
            });
        }
    }
    Ok(problems)
}

pub fn cycles_step(root: &Path) -> Result<()> {
    report(
        "no module import cycles",
        check_cycles(root)?,
        "Move what both sides need into a module both can import one way (or into \
         their common parent), so that dependencies between siblings point one way.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(mods: &[&[&str]]) -> BTreeSet<ModPath> {
        mods.iter()
            .map(|m| m.iter().map(|s| (*s).to_owned()).collect())
            .collect()
    }

    #[test]
    fn the_workspace_has_no_module_cycles() {
        let problems = check_cycles(&crate::util::workspace_root()).unwrap();
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn files_are_modules() {
        assert!(module_of("lib.rs").is_empty());
        assert_eq!(module_of("a/mod.rs"), vec!["a"]);
        assert_eq!(module_of("a.rs"), vec!["a"]);
        assert_eq!(module_of("a/b.rs"), vec!["a", "b"]);
    }

    #[test]
    fn use_trees_and_code_paths_are_found_outside_comments_and_strings() {
        let src = "use crate::a::{b, c::{d, self}};\n// crate::x::y\nfn f() { let s = \"crate::q\"; super::z::f(); }\npub(crate) use self::k as K;\n";
        let found: Vec<String> = paths_in(&strip(src)).into_iter().map(|(_, p)| p).collect();
        assert_eq!(
            found,
            vec![
                "crate::a::b",
                "crate::a::c::d",
                "crate::a::c",
                "self::k",
                "super::z::f"
            ]
        );
        let lines: Vec<usize> = paths_in(&strip(src)).into_iter().map(|(l, _)| l).collect();
        assert_eq!(lines, vec![1, 1, 1, 4, 3]);
    }

    #[test]
    fn test_items_are_left_out() {
        let src = "use crate::a::X;\n#[cfg(test)]\nmod tests {\n    use crate::b::Y;\n}\n#[cfg(test)]\nuse crate::c::Z;\nfn f() { crate::d::g() }\n";
        let found = paths_in(&without_tests(&strip(src)));
        assert_eq!(
            found,
            vec![(1, "crate::a::X".to_owned()), (8, "crate::d::g".to_owned())]
        );
    }

    #[test]
    fn paths_resolve_to_the_deepest_module() {
        let mods = set(&[&[], &["a"], &["a", "b"], &["c"]]);
        let from = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            resolve(&from, "super::super::c::X", &mods),
            Some(vec!["c".to_owned()])
        );
        assert_eq!(
            resolve(&from, "crate::a::Y", &mods),
            Some(vec!["a".to_owned()])
        );
        assert_eq!(resolve(&from, "std::fs", &mods), None);
    }

    #[test]
    fn siblings_that_import_each_other_are_a_cycle_parents_are_not() {
        let files = |b_uses_a: bool| {
            vec![
                ("lib.rs".to_owned(), "mod a; mod b; use a::X;".to_owned()),
                (
                    "a.rs".to_owned(),
                    "use crate::b::Y; use super::Z;".to_owned(),
                ),
                (
                    "b/mod.rs".to_owned(),
                    "mod inner; pub use inner::W;".to_owned(),
                ),
                (
                    "b/inner.rs".to_owned(),
                    if b_uses_a {
                        "fn f() { crate::a::g() }"
                    } else {
                        "use super::Q;"
                    }
                    .to_owned(),
                ),
            ]
        };
        assert!(cycles(&files(false)).is_empty());
        let found = cycles(&files(true));
        assert_eq!(found.len(), 1);
        let pairs: Vec<(String, String, String)> = found[0]
            .iter()
            .map(|e| (name(&e.from), name(&e.to), e.file.clone()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("a".into(), "b".into(), "a.rs".into()),
                ("b".into(), "a".into(), "b/inner.rs".into())
            ]
        );
    }
}
