//! `grep`: regex search over files, `.gitignore` respected, matches capped.

use std::fmt::Write as _;
use std::io::Read;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::ToolName;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::Value;

use super::{
    CallEnv, CancellationToken, ToolError, ToolOutput, blocking, display_path, list_dir::walker,
    looks_binary, parse_args, resolve_approved,
};
use crate::permissions::{RuleMatcher, Verdict};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: Option<bool>,
}

/// Matches printed before stopping with a note.
pub(super) const MAX_MATCHES: usize = 200;
/// Characters of a matching line shown.
const MAX_LINE_CHARS: usize = 300;
/// Files larger than this are skipped (logs, dumps, data).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

pub(super) async fn run(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::Grep, args)?;
    if args.pattern.is_empty() {
        return Err(ToolError::bad_args(
            ToolName::Grep,
            "pattern is empty; give a regular expression",
        ));
    }
    let regex = RegexBuilder::new(&args.pattern)
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .size_limit(10 * (1 << 20))
        .build()
        .map_err(|e| {
            ToolError::Usage(format!(
                "invalid regular expression for grep: {e}\n(escape special characters like ( [ . * with a backslash for a literal match)"
            ))
        })?;
    let raw = args.path.unwrap_or_default();
    let resolved = resolve_approved(ToolName::Grep, &raw, env).await?;
    let cancel = env.cancel.clone();
    let rules = env.approver.read_rules();
    blocking(env.cancel, move || {
        search(
            &resolved.path,
            &resolved.root,
            &resolved.display(),
            &regex,
            args.glob.as_deref(),
            rules.as_deref(),
            &cancel,
        )
    })
    .await
}

fn search(
    path: &Utf8Path,
    root: &Utf8Path,
    shown: &str,
    regex: &Regex,
    glob: Option<&str>,
    rules: Option<&RuleMatcher>,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    if !path.exists() {
        return Err(ToolError::Usage(format!(
            "{shown}: no such file or directory; check the path with list_dir"
        )));
    }
    let mut builder = walker(path);
    if let Some(glob) = glob.filter(|g| !g.trim().is_empty()) {
        let mut ob = ignore::overrides::OverrideBuilder::new(path);
        ob.add(glob.trim()).map_err(|e| {
            ToolError::Usage(format!(
                "invalid glob for grep: {e}; use a pattern like `*.rs`"
            ))
        })?;
        let overrides = ob
            .build()
            .map_err(|e| ToolError::Usage(format!("invalid glob for grep: {e}")))?;
        builder.overrides(overrides);
    }

    let mut out = String::new();
    let mut matches = 0usize;
    let mut files_searched = 0usize;
    let mut unreadable = 0usize;
    // Files a `deny` or `ask` read rule names are not read.
    let mut ruled_out = 0usize;
    let mut buf = Vec::new();
    for entry in builder.build() {
        if cancel.is_cancelled() {
            return Err(ToolError::Interrupted);
        }
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(file) = Utf8Path::from_path(entry.path()) else {
            unreadable += 1;
            continue;
        };
        if rules.is_some_and(|r| matches!(r.read(file), Verdict::Deny(_) | Verdict::Ask(_))) {
            ruled_out += 1;
            continue;
        }
        buf.clear();
        let read =
            std::fs::File::open(file).and_then(|f| f.take(MAX_FILE_BYTES).read_to_end(&mut buf));
        if read.is_err() {
            unreadable += 1;
            continue;
        }
        if looks_binary(&buf[..buf.len().min(8192)]) {
            continue;
        }
        files_searched += 1;
        let text = String::from_utf8_lossy(&buf);
        let name = file_name(file, root);
        for (i, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches == MAX_MATCHES {
                let _ = writeln!(
                    out,
                    "[stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob to see the rest]"
                );
                return Ok(ToolOutput::ok(out));
            }
            matches += 1;
            let line = line.strip_suffix('\r').unwrap_or(line);
            let _ = writeln!(
                out,
                "{name}:{}: {}",
                i + 1,
                eonyx_core::text::ellipsize(line, MAX_LINE_CHARS)
            );
        }
    }
    if matches == 0 {
        let _ = writeln!(
            out,
            "no matches for /{}/ in {shown} ({files_searched} files searched)",
            regex.as_str()
        );
    }
    if unreadable > 0 {
        let _ = writeln!(out, "[{unreadable} files could not be read]");
    }
    if ruled_out > 0 {
        let _ = writeln!(
            out,
            "[{ruled_out} files not searched: a permission rule keeps them from being read]"
        );
    }
    Ok(ToolOutput::ok(out))
}

/// The file's path relative to the project root, absolute outside it.
fn file_name(file: &Utf8Path, root: &Utf8Path) -> String {
    display_path(root, &Utf8PathBuf::from(file))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::*;
    use super::super::*;
    use super::MAX_MATCHES;

    fn tree() -> Fixture {
        let f = Fixture::new();
        f.write("src/lib.rs", "pub fn alpha() {}\n// TODO alpha docs\n");
        f.write("src/main.rs", "fn main() {\n    alpha();\n}\n");
        f.write("notes.md", "Alpha and omega\r\n");
        f.write(".gitignore", "target/\n");
        f.write("target/gen.rs", "fn alpha_generated() {}\n");
        f.write("blob.bin", b"alpha\0\x01\x02");
        f
    }

    #[tokio::test]
    async fn matches_are_path_line_text_and_skip_ignored_and_binary_files() {
        let f = tree();
        let out = f.run("grep", json!({"pattern": "alpha"})).await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(
            out.text,
            "src/lib.rs:1: pub fn alpha() {}\nsrc/lib.rs:2: // TODO alpha docs\nsrc/main.rs:2:     alpha();\n"
        );
    }

    #[tokio::test]
    async fn case_insensitive_path_and_glob_filters() {
        let f = tree();
        let out = f
            .run(
                "grep",
                json!({"pattern": "^alpha", "case_insensitive": true}),
            )
            .await;
        assert_eq!(out.text, "notes.md:1: Alpha and omega\n");
        let out = f
            .run(
                "grep",
                json!({"pattern": "alpha", "glob": "*.md", "case_insensitive": true}),
            )
            .await;
        assert_eq!(out.text, "notes.md:1: Alpha and omega\n");
        let out = f
            .run("grep", json!({"pattern": "alpha", "path": "src/main.rs"}))
            .await;
        assert_eq!(out.text, "src/main.rs:2:     alpha();\n");
        let out = f
            .run(
                "grep",
                json!({"pattern": "fn", "path": "src", "glob": "lib.*"}),
            )
            .await;
        assert_eq!(out.text, "src/lib.rs:1: pub fn alpha() {}\n");
    }

    #[tokio::test]
    async fn matches_are_capped_with_a_visible_note() {
        let f = Fixture::new();
        let body: String = (0..MAX_MATCHES + 50)
            .map(|i| format!("hit {i}\n"))
            .collect();
        f.write("many.txt", body);
        let out = f.run("grep", json!({"pattern": "hit"})).await;
        let lines: Vec<_> = out.text.lines().collect();
        assert_eq!(lines.len(), MAX_MATCHES + 1);
        assert_eq!(lines[0], "many.txt:1: hit 0");
        assert_eq!(
            lines[MAX_MATCHES],
            "[stopped after 200 matches; narrow the pattern, path or glob to see the rest]"
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let f = Fixture::new();
        f.write("min.js", format!("var x = '{}';\n", "y".repeat(5000)));
        let out = f.run("grep", json!({"pattern": "var"})).await;
        assert!(out.text.len() < 400, "{}", out.text.len());
        assert!(out.text.trim_end().ends_with('…'));
    }

    #[tokio::test]
    async fn no_matches_and_bad_input_are_explained() {
        let f = tree();
        let out = f.run("grep", json!({"pattern": "zeta"})).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "no matches for /zeta/ in . (4 files searched)\n");
        let out = f.run("grep", json!({"pattern": "fn ("})).await;
        assert!(out.is_error);
        assert!(
            out.text.starts_with("invalid regular expression for grep:"),
            "{}",
            out.text
        );
        let out = f.run("grep", json!({"pattern": "x", "glob": "a{b"})).await;
        assert!(out.is_error);
        assert!(
            out.text.starts_with("invalid glob for grep:"),
            "{}",
            out.text
        );
        let out = f
            .run("grep", json!({"pattern": "x", "path": "missing"}))
            .await;
        assert!(out.is_error);
        assert!(out.text.starts_with("missing: no such file or directory"));
        let out = f.run("grep", json!({"pattern": ""})).await;
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn outside_paths_need_approval_and_print_absolute() {
        let f = tree();
        std::fs::write(f.outside().join("other.txt"), "alpha outside\n").unwrap();
        let out = f
            .run_with("grep", json!({"pattern": "alpha", "path": ".."}), &DenyAll)
            .await;
        assert!(out.is_error);
        assert!(out.text.starts_with("denied: "));
        let out = f
            .run_with(
                "grep",
                json!({"pattern": "outside", "path": "../other.txt"}),
                &AllowAll,
            )
            .await;
        let real = f.outside().canonicalize_utf8().unwrap();
        assert_eq!(out.text, format!("{real}/other.txt:1: alpha outside\n"));
    }
}
