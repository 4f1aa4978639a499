//! `list_dir`: the entries of a directory, sorted, `.gitignore` respected.

use std::fmt::Write as _;

use camino::Utf8Path;
use eonyx_core::ToolName;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CallEnv, CancellationToken, Count, ToolError, ToolOutput, blocking, metadata, parse_args,
    resolve_approved,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
    depth: Option<Count>,
}

/// Deepest listing a call may ask for.
pub(super) const MAX_DEPTH: u64 = 10;
/// Entries listed before stopping with a note.
pub(super) const MAX_ENTRIES: usize = 2000;

pub(super) async fn run(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::ListDir, args)?;
    let depth = args.depth.map_or(1, Count::get);
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(ToolError::bad_args(
            ToolName::ListDir,
            format!("depth must be between 1 and {MAX_DEPTH}, got {depth}"),
        ));
    }
    let raw = args.path.unwrap_or_default();
    let resolved = resolve_approved(ToolName::ListDir, &raw, env).await?;
    let cancel = env.cancel.clone();
    blocking(env.cancel, move || {
        list(&resolved.path, &resolved.display(), depth as usize, &cancel)
    })
    .await
}

/// A walker that honours `.gitignore` (also outside a git repository), shows
/// hidden files and skips `.git`.
pub fn walker(path: &Utf8Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(path);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
}

fn list(
    path: &Utf8Path,
    shown: &str,
    depth: usize,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let meta = metadata(
        path,
        shown,
        "cannot list",
        "no such directory; list its parent to see what exists",
    )?;
    if !meta.is_dir() {
        return Err(ToolError::Usage(format!(
            "{shown} is a file, not a directory; use read_file to read it"
        )));
    }

    let mut out = String::new();
    let mut count = 0usize;
    let mut errors = 0usize;
    for entry in walker(path).max_depth(Some(depth)).build() {
        if cancel.is_cancelled() {
            return Err(ToolError::Interrupted);
        }
        let entry = match entry {
            Ok(e) => e,
            Err(_) => {
                errors += 1;
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        if count == MAX_ENTRIES {
            let _ = writeln!(
                out,
                "[stopped after {MAX_ENTRIES} entries; list a subdirectory or use a smaller depth]"
            );
            return Ok(ToolOutput::ok(out));
        }
        let rel = entry.path().strip_prefix(path).unwrap_or(entry.path());
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let _ = writeln!(out, "{}{}", rel.display(), if is_dir { "/" } else { "" });
        count += 1;
    }
    if count == 0 {
        out.push_str(&format!("{shown} is empty (or holds only ignored files)\n"));
    }
    if errors > 0 {
        let _ = writeln!(out, "[{errors} entries could not be read]");
    }
    Ok(ToolOutput::ok(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::*;
    use super::super::*;

    fn tree() -> Fixture {
        let f = Fixture::new();
        f.write("b.txt", "");
        f.write("a.txt", "");
        f.write("src/main.rs", "");
        f.write("src/util/mod.rs", "");
        f.write(".gitignore", "target/\n*.log\n");
        f.write("target/debug/out", "");
        f.write("debug.log", "");
        f.write(".git/HEAD", "");
        f.write(".github/ci.yml", "");
        f
    }

    #[tokio::test]
    async fn sorted_dirs_marked_and_gitignore_respected() {
        let f = tree();
        let out = f.run("list_dir", json!({})).await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, ".github/\n.gitignore\na.txt\nb.txt\nsrc/\n");
    }

    #[tokio::test]
    async fn depth_lists_subdirectories_under_their_parent() {
        let f = tree();
        let out = f.run("list_dir", json!({"path": "src", "depth": 2})).await;
        assert_eq!(out.text, "main.rs\nutil/\nutil/mod.rs\n");
        let out = f.run("list_dir", json!({"path": ".", "depth": 3})).await;
        assert_eq!(
            out.text,
            ".github/\n.github/ci.yml\n.gitignore\na.txt\nb.txt\nsrc/\nsrc/main.rs\nsrc/util/\nsrc/util/mod.rs\n"
        );
    }

    #[tokio::test]
    async fn nested_gitignore_files_apply() {
        let f = tree();
        f.write("src/.gitignore", "generated.rs\n");
        f.write("src/generated.rs", "");
        let out = f.run("list_dir", json!({"path": "src"})).await;
        assert_eq!(out.text, ".gitignore\nmain.rs\nutil/\n");
    }

    #[tokio::test]
    async fn wrong_targets_and_bad_depths_are_explained() {
        let f = tree();
        let out = f.run("list_dir", json!({"path": "a.txt"})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "a.txt is a file, not a directory; use read_file to read it"
        );
        let out = f.run("list_dir", json!({"path": "nope"})).await;
        assert!(out.is_error);
        assert!(out.text.starts_with("nope: no such directory"));
        let out = f.run("list_dir", json!({"depth": 0})).await;
        assert!(out.is_error);
        assert!(out.text.contains("depth must be between 1 and 10"));
        f.write("empty/.gitignore", "*\n");
        let out = f.run("list_dir", json!({"path": "empty"})).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "empty is empty (or holds only ignored files)\n");
    }

    #[tokio::test]
    async fn outside_directories_need_approval() {
        let f = tree();
        let out = f
            .run_with("list_dir", json!({"path": ".."}), &DenyAll)
            .await;
        assert!(out.is_error);
        assert!(out.text.starts_with("denied: "), "{}", out.text);
        let out = f
            .run_with("list_dir", json!({"path": ".."}), &AllowAll)
            .await;
        assert!(!out.is_error);
        assert_eq!(out.text, "project/\n");
    }
}
