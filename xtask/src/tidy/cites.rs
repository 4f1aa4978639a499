//! The `cites` check: every citation of a repository doc points at a file
//! and heading that exist, and nothing cites the out-of-tree SPEC.
//!
//! Citation forms checked (in `//` comments of `.rs` files and anywhere in
//! `.md` files): a path `docs/NAME.md`, `README.md` or `ARCHITECTURE.md`,
//! optionally with `#anchor` (GitHub's heading slug); a Markdown link to a
//! `.md` file, relative to the linking file; and `README, section "Title"`
//! (also `ARCHITECTURE` or `docs/NAME.md` in place of `README`), whose title
//! must be a heading of that file.
//!
//! Also: every page under `docs/` is linked from the table of contents,
//! `docs/README.md`, so none is reachable only by chance.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Context, Result};
use regex::Regex;

use super::{Problem, files_with_ext, re, read, rel, report};

/// GitHub's anchor for a heading: lowercase, punctuation other than `-` and
/// `_` dropped, spaces to `-`.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of a Markdown text (outside fenced code blocks), as
/// `(title, anchor)`; repeated anchors get `-1`, `-2`… as on GitHub.
pub fn headings(md: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut fenced = false;
    for line in md.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !t[hashes..].starts_with(' ') {
            continue;
        }
        let title = t[hashes..]
            .trim()
            .trim_end_matches('#')
            .trim()
            .replace('`', "");
        let base = slug(&title);
        let n = out
            .iter()
            .filter(|(_, a)| {
                *a == base
                    || a.strip_prefix(&format!("{base}-"))
                        .is_some_and(|r| r.parse::<u32>().is_ok())
            })
            .count();
        let anchor = if n == 0 { base } else { format!("{base}-{n}") };
        out.push((title, anchor));
    }
    out
}

/// A citation found in a text: which file (as written, resolved later) and
/// which section, by anchor or by title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    pub line: usize,
    /// Path relative to the workspace root, `/`-separated.
    pub target: String,
    pub anchor: Option<String>,
    pub title: Option<String>,
}

/// The text a scan reads: for `.rs`, only `//` comments (with the comment
/// markers removed, other lines blank, so line numbers stay); for `.md`,
/// everything.
pub fn scan_text(path: &str, src: &str) -> String {
    if !path.ends_with(".rs") {
        return src.to_owned();
    }
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let t = line.trim_start();
        if let Some(c) = t.strip_prefix("//") {
            out.push_str(c.trim_start_matches(['/', '!']));
        }
        out.push('\n');
    }
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Joins `base` (a directory relative to the root) and a relative link,
/// resolving `.` and `..`; `None` when it climbs out of the root.
fn join_rel(base: &str, link: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in link.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// Every SPEC citation (`SPEC §N`, also across a line break), by line.
pub fn spec_citations(text: &str) -> Vec<usize> {
    static SPEC_RE: LazyLock<Regex> = LazyLock::new(|| re(r"SPEC\s*§"));
    SPEC_RE
        .find_iter(text)
        .map(|m| line_of(text, m.start()))
        .collect()
}

/// Citations of repository docs in `text`, which was read from `path`
/// (relative to the root).
pub fn citations(path: &str, text: &str) -> Vec<Citation> {
    static BARE: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(?m)(?:^|[^\w/.-])(docs/[\w./-]*\w\.md|README\.md|ARCHITECTURE\.md)(?:#([\w-]+))?")
    });
    static LINK: LazyLock<Regex> = LazyLock::new(|| re(r"\]\(([^)\s#]*\.md)(?:#([^)\s]+))?\)"));
    static TITLED: LazyLock<Regex> = LazyLock::new(|| {
        re(r#"\b(README|ARCHITECTURE|docs/[\w./-]*\w\.md)(?:\.md)?,\s+section\s+"([^"]+)""#)
    });
    let (bare, link, titled) = (&*BARE, &*LINK, &*TITLED);
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = Vec::new();
    for c in bare.captures_iter(text) {
        let Some(m) = c.get(1) else { continue };
        out.push(Citation {
            line: line_of(text, m.start()),
            target: m.as_str().to_owned(),
            anchor: c.get(2).map(|a| a.as_str().to_owned()),
            title: None,
        });
    }
    for c in link.captures_iter(text) {
        let Some(m) = c.get(1) else { continue };
        if m.as_str().contains("://") {
            continue;
        }
        let Some(target) = join_rel(dir, m.as_str()) else {
            continue;
        };
        let cit = Citation {
            line: line_of(text, m.start()),
            target,
            anchor: c.get(2).map(|a| a.as_str().to_owned()),
            title: None,
        };
        if !out.contains(&cit) {
            out.push(cit);
        }
    }
    for c in titled.captures_iter(text) {
        let Some(m) = c.get(1) else { continue };
        let target = match m.as_str() {
            "README" => "README.md".to_owned(),
            "ARCHITECTURE" => "ARCHITECTURE.md".to_owned(),
            other => other.to_owned(),
        };
        let title = c[2].split_whitespace().collect::<Vec<_>>().join(" ");
        out.push(Citation {
            line: line_of(text, m.start()),
            target,
            anchor: None,
            title: Some(title),
        });
    }
    out.sort_by_key(|c| c.line);
    out
}

/// The files the citation check reads: Markdown at the root, under `docs/`
/// and `crates/`; Rust under `crates/`, `tests/`, `xtask/` and `fuzz/`.
fn cite_sources(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(root).with_context(|| format!("cannot list {}", root.display()))?
    {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.extend(files_with_ext(&root.join("docs"), ".md")?);
    for dir in ["crates", "tests", "xtask", "fuzz"] {
        files.extend(files_with_ext(&root.join(dir), ".rs")?);
        if dir == "crates" {
            files.extend(files_with_ext(&root.join(dir), ".md")?);
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// This file's own examples of the forms it checks are not citations.
const CITE_EXEMPT: &[&str] = &["xtask/src/tidy/cites.rs"];

/// The table of contents of `docs/`.
const DOCS_INDEX: &str = "docs/README.md";

/// Pages under `docs/` that the table of contents does not link to.
pub fn unlinked_docs(root: &Path) -> Result<Vec<Problem>> {
    let pages: Vec<String> = files_with_ext(&root.join("docs"), ".md")?
        .iter()
        .map(|p| rel(root, p))
        .filter(|name| name != DOCS_INDEX)
        .collect();
    if pages.is_empty() {
        return Ok(Vec::new());
    }
    let index = root.join(DOCS_INDEX);
    if !index.is_file() {
        return Ok(vec![Problem {
            file: DOCS_INDEX.to_owned(),
            line: 1,
            message: "does not exist; docs/ needs a table of contents linking every page"
                .to_owned(),
        }]);
    }
    let linked: BTreeSet<String> = citations(DOCS_INDEX, &read(&index)?)
        .into_iter()
        .map(|c| c.target)
        .collect();
    Ok(pages
        .into_iter()
        .filter(|name| !linked.contains(name))
        .map(|name| Problem {
            file: name,
            line: 1,
            message: format!("is not linked from {DOCS_INDEX}; add it to the table of contents"),
        })
        .collect())
}

pub fn check_citations(root: &Path) -> Result<Vec<Problem>> {
    let mut problems: BTreeSet<Problem> = unlinked_docs(root)?.into_iter().collect();
    for file in cite_sources(root)? {
        let name = rel(root, &file);
        if CITE_EXEMPT.contains(&name.as_str()) {
            continue;
        }
        let text = scan_text(&name, &read(&file)?);
        for line in spec_citations(&text) {
            problems.insert(Problem {
                file: name.clone(),
                line,
                message: "cites \"SPEC §…\", which is not in this repository; cite the \
                          repository's docs instead: `docs/<name>.md#<anchor>`, or \
                          README, section \"Title\" (see docs/ and README.md)"
                    .to_owned(),
            });
        }
        for c in citations(&name, &text) {
            let target = root.join(&c.target);
            if !target.is_file() {
                problems.insert(Problem {
                    file: name.clone(),
                    line: c.line,
                    message: format!(
                        "cites `{}`, which does not exist; fix the path or write the doc",
                        c.target
                    ),
                });
                continue;
            }
            if c.anchor.is_none() && c.title.is_none() {
                continue;
            }
            let heads = headings(&read(&target)?);
            if let Some(anchor) = &c.anchor
                && !heads.iter().any(|(_, a)| a == anchor)
            {
                problems.insert(Problem {
                    file: name.clone(),
                    line: c.line,
                    message: format!(
                        "cites `{}#{anchor}`, but {} has no heading with that anchor; \
                         anchors are: {}",
                        c.target,
                        c.target,
                        heads
                            .iter()
                            .map(|(_, a)| a.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            if let Some(title) = &c.title
                && !heads.iter().any(|(t, _)| t.eq_ignore_ascii_case(title))
            {
                problems.insert(Problem {
                    file: name.clone(),
                    line: c.line,
                    message: format!(
                        "cites section \"{title}\" of {}, which has no such heading; \
                         headings are: {}",
                        c.target,
                        heads
                            .iter()
                            .map(|(t, _)| format!("\"{t}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
    }
    Ok(problems.into_iter().collect())
}

pub fn cites_step(root: &Path) -> Result<()> {
    report(
        "every cited doc section exists",
        check_citations(root)?,
        "Cite a file and heading that exist (add the section to the doc if it is missing).",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_github() {
        assert_eq!(slug("Configuration reference"), "configuration-reference");
        assert_eq!(slug("JSON events"), "json-events");
        assert_eq!(
            slug("`eonyx` and the 5-line rule!"),
            "eonyx-and-the-5-line-rule"
        );
        let h = headings("# A\n```toml\n# not a heading\n```\n## Notes\n### Notes\n");
        assert_eq!(
            h,
            vec![
                ("A".to_owned(), "a".to_owned()),
                ("Notes".to_owned(), "notes".to_owned()),
                ("Notes".to_owned(), "notes-1".to_owned()),
            ]
        );
    }

    #[test]
    fn citations_are_found_in_comments_and_links() {
        let rs = "\
//! Sessions on disk (docs/session-format.md#compaction-records).
let s = \"docs/not-a-citation.md\";
/// See README, section
/// \"Configuration reference\". Also SPEC
/// §5 (old).
";
        let text = scan_text("crates/x/src/lib.rs", rs);
        assert_eq!(spec_citations(&text), vec![4]);
        let c = citations("crates/x/src/lib.rs", &text);
        assert_eq!(c.len(), 2, "{c:#?}");
        assert_eq!(c[0].target, "docs/session-format.md");
        assert_eq!(c[0].anchor.as_deref(), Some("compaction-records"));
        assert_eq!(c[1].target, "README.md");
        assert_eq!(c[1].title.as_deref(), Some("Configuration reference"));
        assert_eq!(c[1].line, 3);

        let md = "See [the format](session-format.md#lines) and [home](../README.md).\n\
                  And [web](https://example.com/x.md).\n";
        let c = citations("docs/tools.md", md);
        assert_eq!(
            c.iter()
                .map(|c| (c.target.as_str(), c.anchor.as_deref()))
                .collect::<Vec<_>>(),
            vec![
                ("docs/session-format.md", Some("lines")),
                ("README.md", None)
            ]
        );
    }

    #[test]
    fn broken_citations_are_reported_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(root.join("crates/a/src")).unwrap();
        std::fs::write(root.join("README.md"), "# x\n## Commands\n").unwrap();
        std::fs::write(root.join("docs/f.md"), "# F\n## Real part\n").unwrap();
        std::fs::write(root.join("docs/README.md"), "# Docs\n- [F](f.md)\n").unwrap();
        std::fs::write(
            root.join("crates/a/src/lib.rs"),
            "//! ok docs/f.md#real-part and README, section \"Commands\"\n\
             //! bad docs/f.md#gone\n//! missing docs/none.md\n\
             //! README, section \"Nope\"\n//! SPEC §3\n",
        )
        .unwrap();
        let p = check_citations(root).unwrap();
        let got: Vec<String> = p.iter().map(|p| format!("{}:{}", p.file, p.line)).collect();
        assert_eq!(
            got,
            vec![
                "crates/a/src/lib.rs:2",
                "crates/a/src/lib.rs:3",
                "crates/a/src/lib.rs:4",
                "crates/a/src/lib.rs:5"
            ],
            "{p:#?}"
        );
        assert!(p[0].message.contains("real-part"), "{}", p[0]);
        assert!(p[1].message.contains("does not exist"), "{}", p[1]);
        assert!(p[2].message.contains("\"Commands\""), "{}", p[2]);
        assert!(
            p[3].message.contains("cite the repository's docs"),
            "{}",
            p[3]
        );
    }

    #[test]
    fn every_docs_page_is_linked_from_the_table_of_contents() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("docs/sub")).unwrap();
        std::fs::write(root.join("docs/a.md"), "# A\n").unwrap();
        std::fs::write(root.join("docs/sub/b.md"), "# B\n").unwrap();
        let p = unlinked_docs(root).unwrap();
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].file, "docs/README.md");
        std::fs::write(root.join("docs/README.md"), "- [A](a.md)\n").unwrap();
        let p = unlinked_docs(root).unwrap();
        let files: Vec<&str> = p.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(files, ["docs/sub/b.md"]);
        std::fs::write(root.join("docs/README.md"), "- [A](a.md), [B](sub/b.md)\n").unwrap();
        assert!(unlinked_docs(root).unwrap().is_empty());
    }

    #[test]
    fn the_workspace_cites_only_what_exists() {
        let problems = check_citations(&crate::util::workspace_root()).unwrap();
        assert!(
            problems.is_empty(),
            "{}",
            problems
                .iter()
                .map(|p| format!("{p}\n"))
                .collect::<String>()
        );
    }
}
