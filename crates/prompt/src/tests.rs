//! Tests of discovery, caps, re-reading and assembly, each in a temp tree.

use std::io;
use std::sync::{Arc, Mutex};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::ContextConfig;
use eonyx_core::paths::{Marker, find_project};

use super::*;
use crate::test_tree::Tree;

const DATE: &str = "2026-07-05";

impl Tree {
    fn config_dir(&self) -> Utf8PathBuf {
        self.path("config")
    }

    fn loader(&self, cwd: &str, caps: ContextConfig) -> ContextLoader {
        let cwd = self.path(cwd);
        let project = find_project(&cwd);
        ContextLoader::new(&cwd, &project, &self.config_dir(), caps)
    }

    fn load(&self, cwd: &str) -> Loaded {
        self.loader(cwd, ContextConfig::default()).load()
    }

    /// Replace the temp root so snapshots are stable.
    fn filter(&self, s: &str) -> String {
        s.replace(self.root.as_str(), "[TMP]")
    }
}

fn displays(loaded: &Loaded) -> Vec<&str> {
    loaded.files.iter().map(|f| f.display.as_str()).collect()
}

/// The context part of the prefix (everything after the base instructions).
fn context_part(loaded: &Loaded) -> &str {
    loaded
        .stable_prefix
        .strip_prefix(base_instructions())
        .unwrap()
}

#[test]
fn project_file_marker_stops_the_walk_and_is_included() {
    let t = Tree::with_files(&[
        ("AGENTS.md", "above the project: never included"),
        ("proj/eonyx.json", "{}"),
        ("proj/AGENTS.md", "root rules"),
        ("proj/b.context.md", "style b"),
        ("proj/a.context.md", "style a"),
        ("proj/svc/AGENTS.md", "service rules"),
        ("proj/svc/x.context.md", "service extra"),
    ]);
    let loaded = t.load("proj/svc");
    assert_eq!(
        displays(&loaded),
        [
            "AGENTS.md",
            "a.context.md",
            "b.context.md",
            "svc/AGENTS.md",
            "svc/x.context.md"
        ]
    );
    assert!(!loaded.stable_prefix.contains("never included"));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    insta::assert_snapshot!(context_part(&loaded));
}

#[test]
fn git_marker_stops_the_walk_whether_directory_or_file() {
    let t = Tree::new();
    t.write("AGENTS.md", "outside");
    t.mkdir("repo/.git");
    t.write("repo/AGENTS.md", "repo rules");
    t.write("repo/sub/AGENTS.md", "sub rules");
    let loaded = t.load("repo/sub");
    assert_eq!(displays(&loaded), ["AGENTS.md", "sub/AGENTS.md"]);

    // A worktree or submodule has a `.git` file: the nearer root wins.
    t.write("repo/sub/.git", "gitdir: ../.git/modules/sub");
    let loaded = t.load("repo/sub");
    assert_eq!(displays(&loaded), ["AGENTS.md"]);
    assert!(context_part(&loaded).contains("sub rules"));
    assert!(!context_part(&loaded).contains("repo rules"));
}

#[test]
fn without_marker_the_walk_reaches_the_filesystem_root_and_paths_above_cwd_are_absolute() {
    let t = Tree::new();
    t.write("free/AGENTS.md", "outer");
    t.write("free/a/b/AGENTS.md", "nearest");
    let loaded = t.load("free/a/b");
    let project = find_project(&t.path("free/a/b"));
    if project.marker.is_some() {
        // The temp dir lies inside a repository on this machine; the
        // marker cases cover that.
        return;
    }
    assert_eq!(project.root, t.path("free/a/b"));
    let ours: Vec<&str> = displays(&loaded)
        .into_iter()
        .filter(|d| !d.starts_with('/') || d.starts_with(t.root.as_str()))
        .collect();
    let outer = t.path("free/AGENTS.md");
    assert_eq!(ours, [outer.as_str(), "AGENTS.md"]);
    assert!(
        loaded
            .stable_prefix
            .contains(&format!("# Project context: {outer}\n\nouter"))
    );
    assert!(
        loaded
            .stable_prefix
            .ends_with("# Project context: AGENTS.md\n\nnearest")
    );
}

#[test]
fn nested_services_inherit_outermost_first_nearest_last() {
    let t = Tree::new();
    t.write("my-project/eonyx.json", "{}");
    t.write("my-project/AGENTS.md", "stack, conventions, prohibitions");
    t.write("my-project/services/billing/AGENTS.md", "billing specifics");
    t.write(
        "my-project/services/auth/AGENTS.md",
        "auth: not on the path",
    );
    t.mkdir("my-project/services/billing/src/db");
    let loaded = t.load("my-project/services/billing/src/db");
    assert_eq!(
        displays(&loaded),
        ["AGENTS.md", "services/billing/AGENTS.md"]
    );
    let ctx = context_part(&loaded);
    let outer = ctx.find("stack, conventions").unwrap();
    let inner = ctx.find("billing specifics").unwrap();
    assert!(outer < inner);
    assert!(!ctx.contains("auth"));
}

#[test]
fn global_file_comes_first_under_its_own_heading() {
    let t = Tree::new();
    t.write("config/AGENTS.md", "always answer in English");
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", "project rules");
    let loaded = t.load("p");
    assert_eq!(loaded.files.len(), 2);
    assert!(loaded.files[0].global);
    assert_eq!(loaded.files[0].path, t.path("config/AGENTS.md"));
    assert!(!loaded.files[1].global);
    assert_eq!(
        context_part(&loaded),
        "\n\n# Global context: AGENTS.md\n\nalways answer in English\
         \n\n# Project context: AGENTS.md\n\nproject rules"
    );
}

#[test]
fn empty_and_blank_files_are_skipped_silently() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", "");
    t.write("p/blank.context.md", "  \n\n\t\n");
    t.write("p/real.context.md", "real\n\n");
    let loaded = t.load("p");
    assert_eq!(displays(&loaded), ["real.context.md"]);
    assert!(loaded.warnings.is_empty());
    // Trailing blank lines are not carried into the prompt.
    assert!(
        loaded
            .stable_prefix
            .ends_with("# Project context: real.context.md\n\nreal")
    );
}

#[test]
fn per_file_cap_truncates_visibly_on_a_char_boundary() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    // 9 ASCII bytes, then 'é' (2 bytes) straddling the 10-byte cap.
    t.write("p/AGENTS.md", "123456789é and more text");
    t.write("p/small.context.md", "fits");
    let caps = ContextConfig {
        max_file_bytes: 10,
        max_total_bytes: 1000,
    };
    let loaded = t.loader("p", caps).load();
    let f = &loaded.files[0];
    assert_eq!(f.display, "AGENTS.md");
    assert!(f.truncated);
    assert_eq!(f.bytes, 25);
    assert_eq!(f.included_bytes, 9);
    assert!(!loaded.files[1].truncated);
    assert!(context_part(&loaded).contains(
        "# Project context: AGENTS.md\n\n123456789\n\n\
         [eonyx: AGENTS.md truncated: 9 of its 25 bytes shown, 16 bytes cut \
         (context.max_file_bytes = 10)]"
    ));
    assert_eq!(
        loaded.warnings,
        [
            "context file AGENTS.md is 25 bytes; only the first 9 are included \
          (context.max_file_bytes = 10)"
        ]
    );
    assert!(!loaded.stable_prefix.contains('\u{FFFD}'));
}

#[test]
fn total_cap_keeps_the_nearest_whole_and_says_who_lost_what() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", "outermost-aaaaaaaaa"); // 19 bytes
    t.write("p/mid/AGENTS.md", "middle-bbbbbbbbbbbb"); // 19 bytes
    t.write("p/mid/near/AGENTS.md", "nearest-cccccccccc"); // 18 bytes
    let caps = ContextConfig {
        max_file_bytes: 1000,
        max_total_bytes: 25,
    };
    let loaded = t.loader("p/mid/near", caps).load();
    let got: Vec<(&str, u64, bool)> = loaded
        .files
        .iter()
        .map(|f| (f.display.as_str(), f.included_bytes, f.truncated))
        .collect();
    assert_eq!(
        got,
        [
            ("AGENTS.md", 0, true),
            ("mid/AGENTS.md", 7, true),
            ("mid/near/AGENTS.md", 18, false)
        ]
    );
    assert_eq!(
        loaded.warnings,
        [
            "context file AGENTS.md: 19 of its 19 bytes were cut to keep all context within \
             context.max_total_bytes = 25 (nearer files are kept whole first)",
            "context file mid/AGENTS.md: 12 of its 19 bytes were cut to keep all context within \
             context.max_total_bytes = 25 (nearer files are kept whole first)",
        ]
    );
    insta::assert_snapshot!(context_part(&loaded));
}

#[test]
fn non_utf8_bytes_are_replaced_with_a_warning() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", b"caf\xe9 latin-1\n");
    let loaded = t.load("p");
    assert_eq!(displays(&loaded), ["AGENTS.md"]);
    assert!(context_part(&loaded).contains("caf\u{FFFD} latin-1"));
    assert_eq!(
        loaded.warnings,
        ["context file AGENTS.md is not valid UTF-8; invalid bytes were replaced with U+FFFD"]
    );
}

#[cfg(unix)]
#[test]
fn symlink_loops_are_skipped_with_a_warning() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/ok.context.md", "still loaded");
    std::os::unix::fs::symlink("b.context.md", t.path("p/a.context.md")).unwrap();
    std::os::unix::fs::symlink("a.context.md", t.path("p/b.context.md")).unwrap();
    std::os::unix::fs::symlink("AGENTS.md", t.path("p/AGENTS.md")).unwrap();
    let loaded = t.load("p");
    assert_eq!(displays(&loaded), ["ok.context.md"]);
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
    for (w, name) in loaded
        .warnings
        .iter()
        .zip(["AGENTS.md", "a.context.md", "b.context.md"])
    {
        assert!(
            w.starts_with(&format!("skipped context file {name}: cannot read it: ")),
            "{w}"
        );
    }
}

#[test]
fn a_directory_named_like_a_context_file_is_skipped_with_a_warning() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.mkdir("p/notes.context.md");
    t.write("p/AGENTS.md", "rules");
    let loaded = t.load("p");
    assert_eq!(displays(&loaded), ["AGENTS.md"]);
    assert_eq!(
        loaded.warnings,
        ["skipped context file notes.context.md: cannot read it: not a regular file"]
    );
}

/// The real filesystem, except that the listed paths fail with
/// "permission denied" (root is never denied, so tests inject it).
struct Denying {
    denied: Vec<Utf8PathBuf>,
    reads: Arc<Mutex<u32>>,
}

impl Denying {
    fn check(&self, p: &Utf8Path) -> io::Result<()> {
        if self.denied.iter().any(|d| d == p) {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "Permission denied (os error 13)",
            ))
        } else {
            Ok(())
        }
    }
}

impl ContextReader for Denying {
    fn list_dir(&self, dir: &Utf8Path) -> io::Result<Vec<String>> {
        self.check(dir)?;
        FsReader.list_dir(dir)
    }
    fn read_file(&self, path: &Utf8Path, limit: u64) -> io::Result<FileContent> {
        *self.reads.lock().unwrap() += 1;
        self.check(path)?;
        FsReader.read_file(path, limit)
    }
}

#[test]
fn unreadable_file_is_skipped_with_a_warning() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", "root rules");
    t.write("p/secret.context.md", "cannot be read");
    let reads = Arc::new(Mutex::new(0));
    let loaded = t
        .loader("p", ContextConfig::default())
        .with_reader(Denying {
            denied: vec![t.path("p/secret.context.md")],
            reads: reads.clone(),
        })
        .load();
    assert_eq!(displays(&loaded), ["AGENTS.md"]);
    assert_eq!(
        loaded.warnings,
        ["skipped context file secret.context.md: cannot read it: Permission denied (os error 13)"]
    );
    // Global file, AGENTS.md, secret.context.md.
    assert_eq!(*reads.lock().unwrap(), 3);
}

#[test]
fn unreadable_directory_is_skipped_with_a_warning_and_the_walk_goes_on() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", "root rules");
    t.write("p/locked/AGENTS.md", "hidden");
    t.write("p/locked/inner/AGENTS.md", "inner rules");
    let loaded = t
        .loader("p/locked/inner", ContextConfig::default())
        .with_reader(Denying {
            denied: vec![t.path("p/locked")],
            reads: Arc::default(),
        })
        .load();
    assert_eq!(displays(&loaded), ["AGENTS.md", "locked/inner/AGENTS.md"]);
    assert_eq!(
        loaded.warnings,
        [format!(
            "cannot read directory {}: Permission denied (os error 13); its context files are skipped",
            t.path("p/locked")
        )]
    );
}

#[test]
fn reloading_reports_changed_added_and_removed_files() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    t.write("p/AGENTS.md", "v1");
    t.write("p/keep.context.md", "unchanged");
    let mut loader = t.loader("p", ContextConfig::default());
    let first = loader.load();
    assert!(first.changed.is_empty());

    let again = loader.load();
    assert!(again.changed.is_empty());
    assert_eq!(again.stable_prefix, first.stable_prefix);

    t.write("p/AGENTS.md", "v2");
    let edited = loader.load();
    assert_eq!(edited.changed, ["AGENTS.md"]);
    assert!(edited.stable_prefix.contains("\n\nv2"));
    assert!(!edited.stable_prefix.contains("\n\nv1"));

    t.write("p/new.context.md", "added");
    std::fs::remove_file(t.path("p/keep.context.md")).unwrap();
    let moved = loader.load();
    assert_eq!(moved.changed, ["new.context.md", "keep.context.md"]);

    t.write("config/AGENTS.md", "global now");
    let global = loader.load();
    assert_eq!(global.changed, [t.path("config/AGENTS.md").to_string()]);
}

#[test]
fn same_files_and_date_give_byte_identical_prompts() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    // Created in reverse name order: order must come from sorting.
    for name in ["z", "m", "a"] {
        t.write(&format!("p/{name}.context.md"), name);
    }
    t.write("config/AGENTS.md", "global");
    let a = system_prompt(&t.load("p"), DATE, Some("sum"));
    let b = system_prompt(&t.load("p"), DATE, Some("sum"));
    assert_eq!(a.text(), b.text());
    assert_eq!(
        displays(&t.load("p"))[1..],
        ["a.context.md", "m.context.md", "z.context.md"]
    );
    // A new day changes the suffix only.
    let c = system_prompt(&t.load("p"), "2026-07-06", Some("sum"));
    assert_eq!(a.stable, c.stable);
    assert_ne!(a.suffix, c.suffix);
}

#[test]
fn suffix_is_the_date_line_then_the_summary_section() {
    assert_eq!(
        volatile_suffix(DATE, None),
        "Current date (UTC): 2026-07-05"
    );
    assert_eq!(
        volatile_suffix(DATE, Some("  \n")),
        "Current date (UTC): 2026-07-05"
    );
    assert_eq!(
        volatile_suffix(DATE, Some("Goal: ship it.\n")),
        "Current date (UTC): 2026-07-05\n\n# Summary of earlier conversation\n\nGoal: ship it."
    );
}

#[test]
fn no_context_files_leave_just_the_base_instructions() {
    let t = Tree::new();
    t.write("p/eonyx.json", "{}");
    let loaded = t.load("p");
    assert!(loaded.files.is_empty());
    assert_eq!(loaded.stable_prefix, base_instructions());
}

#[test]
fn assembled_system_prompt() {
    let t = Tree::with_files(&[
        ("config/AGENTS.md", "Prefer short answers.\n"),
        ("shop/.git/HEAD", "ref: refs/heads/main\n"),
        (
            "shop/AGENTS.md",
            "# Project: Shop\n\n## Stack\n- Go 1.26, PostgreSQL via pgx.\n\n## Rules\n- Run `go test ./...` before committing.\n",
        ),
        ("shop/tone.context.md", "Answer plainly.\n"),
        (
            "shop/services/billing/AGENTS.md",
            "Never run migrations without confirmation.\n",
        ),
    ]);
    let loaded = t.load("shop/services/billing");
    assert_eq!(
        find_project(&t.path("shop/services/billing")).marker,
        Some(Marker::Git)
    );
    let prompt = system_prompt(&loaded, DATE, Some("Goal: add invoices.\nNext: tests."));
    insta::assert_snapshot!(t.filter(&prompt.text()));
}
