//! The `sizes` check: no Rust source file over [`MAX_LINES`] lines, so each
//! stays readable in one sitting (ARCHITECTURE.md). Files that were over the
//! limit when the check arrived are listed in [`DEBT`] with the size they
//! had; they may shrink but never grow, and an entry whose file is back
//! under the limit (or gone) must be removed, so the list only gets shorter.

use std::path::Path;

use anyhow::Result;

use super::{Problem, files_with_ext, read, rel, report};

/// The most lines a source file may have.
pub const MAX_LINES: usize = 600;

/// Where sources are looked for.
pub const ROOTS: &[&str] = &["crates", "tests", "xtask", "fuzz"];

/// Files over the limit when the check arrived, with their size then. Split
/// them where their parts really are (issue "the house after five rooms").
pub const DEBT: &[(&str, usize)] = &[];

/// The problems for files of `(relative path, line count)`.
pub fn check(files: &[(String, usize)], debt: &[(&str, usize)]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (path, lines) in files {
        let allowed = debt
            .iter()
            .find(|(p, _)| p == path)
            .map_or(MAX_LINES, |(_, n)| (*n).max(MAX_LINES));
        if *lines > allowed {
            let message = if allowed > MAX_LINES {
                format!(
                    "{lines} lines, more than the {allowed} it had when the limit came: it may only shrink; split it"
                )
            } else {
                format!("{lines} lines, over {MAX_LINES}: split it where its parts really are")
            };
            problems.push(Problem {
                file: path.clone(),
                line: 1,
                message,
            });
        }
    }
    for (path, _) in debt {
        let now = files.iter().find(|(p, _)| p == path).map(|(_, n)| *n);
        if now.is_none_or(|n| n <= MAX_LINES) {
            problems.push(Problem {
                file: "xtask/src/tidy/sizes.rs".to_owned(),
                line: 1,
                message: format!(
                    "{path} is gone or back under {MAX_LINES} lines: remove it from DEBT"
                ),
            });
        }
    }
    problems
}

pub fn sizes_step(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    for dir in ROOTS {
        for path in files_with_ext(&root.join(dir), ".rs")? {
            let lines = read(&path)?.lines().count();
            files.push((rel(root, &path), lines));
        }
    }
    report(
        "sizes",
        check(&files, DEBT),
        "Split each file named where its parts really are (ARCHITECTURE.md: no source file over 600 lines).",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, usize)]) -> Vec<(String, usize)> {
        list.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect()
    }

    #[test]
    fn a_new_file_over_the_limit_is_named() {
        let p = check(&files(&[("a.rs", 600), ("b.rs", 601)]), &[]);
        assert_eq!(p.len(), 1);
        assert_eq!(
            p[0].to_string(),
            "b.rs:1: 601 lines, over 600: split it where its parts really are"
        );
    }

    #[test]
    fn a_debt_file_may_shrink_but_not_grow() {
        let debt = [("big.rs", 700)];
        assert!(check(&files(&[("big.rs", 650)]), &debt).is_empty());
        let p = check(&files(&[("big.rs", 701)]), &debt);
        assert_eq!(p.len(), 1);
        assert!(p[0].message.contains("may only shrink"), "{}", p[0]);
    }

    #[test]
    fn a_paid_debt_must_leave_the_list() {
        let debt = [("big.rs", 700), ("gone.rs", 900)];
        let p = check(&files(&[("big.rs", 600)]), &debt);
        let msgs: Vec<String> = p.into_iter().map(|p| p.message).collect();
        assert_eq!(
            msgs,
            [
                "big.rs is gone or back under 600 lines: remove it from DEBT",
                "gone.rs is gone or back under 600 lines: remove it from DEBT",
            ]
        );
    }
}
