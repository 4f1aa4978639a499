//! Tests of `write_file` and `edit_file` (kept apart so `write.rs` stays
//! readable).

use super::super::test_support::*;
use super::super::{AllowAll, Permissions, PolicyApprover};
use super::*;
use eonyx_core::config::ShellPolicy;
use serde_json::json;

fn read(f: &Fixture, rel: &str) -> String {
    std::fs::read_to_string(f.root().join(rel)).unwrap()
}

#[tokio::test]
async fn write_file_creates_parents_and_writes_exact_bytes() {
    let f = Fixture::new();
    let out = f
        .run(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "no newline"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "changed a/b/c.txt (+1 -0 lines), created");
    assert_eq!(read(&f, "a/b/c.txt"), "no newline");
    let c = out.change.unwrap();
    assert!(
        c.diff.starts_with("--- /dev/null\n+++ b/a/b/c.txt\n"),
        "{}",
        c.diff
    );
    assert!(c.diff.contains("+no newline"), "{}", c.diff);
}

#[tokio::test]
async fn edit_file_unique_ambiguous_missing_and_replace_all() {
    let f = Fixture::new();
    f.write("m.rs", "let a = 1;\nlet b = 2;\nlet a = 1;\n");
    let edit = |old: &str, new: &str, all: bool| json!({"path": "m.rs", "old_string": old, "new_string": new, "replace_all": all});
    let out = f.run("edit_file", edit("let a = 1;", "x", false)).await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("matches 2 times in m.rs (lines 1, 3); nothing changed"),
        "{}",
        out.text
    );
    let out = f.run("edit_file", edit("let z", "x", false)).await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("no match for old_string in m.rs; nothing changed"),
        "{}",
        out.text
    );
    assert_eq!(read(&f, "m.rs"), "let a = 1;\nlet b = 2;\nlet a = 1;\n");

    let out = f.run("edit_file", edit("b = 2", "b = 3", false)).await;
    assert_eq!(out.text, "changed m.rs (+1 -1 lines)");
    let out = f.run("edit_file", edit("a = 1", "a = 9", true)).await;
    assert_eq!(out.text, "changed m.rs (+2 -2 lines)");
    assert_eq!(read(&f, "m.rs"), "let a = 9;\nlet b = 3;\nlet a = 9;\n");
}

#[tokio::test]
async fn empty_old_string_creates_a_missing_file_only() {
    let f = Fixture::new();
    let out = f
        .run(
            "edit_file",
            json!({"path": "new.md", "old_string": "", "new_string": "hi\n"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(read(&f, "new.md"), "hi\n");
    let out = f
        .run(
            "edit_file",
            json!({"path": "new.md", "old_string": "", "new_string": "x"}),
        )
        .await;
    assert!(out.is_error);
    let out = f
        .run(
            "edit_file",
            json!({"path": "none.md", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(out.text.contains("no such file"), "{}", out.text);
}

#[tokio::test]
async fn crlf_and_mode_are_kept() {
    let f = Fixture::new();
    f.write("w.bat", "one\r\ntwo\r\nthree\r\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            f.root().join("w.bat"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let out = f
        .run(
            "edit_file",
            json!({"path": "w.bat", "old_string": "one\ntwo", "new_string": "1\n2\n2b"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(read(&f, "w.bat"), "1\r\n2\r\n2b\r\nthree\r\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(f.root().join("w.bat"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}

#[tokio::test]
async fn binary_and_oversized_files_are_refused() {
    let mut f = Fixture::new();
    f.write("bin", b"a\0b");
    let out = f
        .run(
            "edit_file",
            json!({"path": "bin", "old_string": "a", "new_string": "c"}),
        )
        .await;
    assert!(out.text.contains("bin is a binary file"), "{}", out.text);
    f.ctx.max_edit_bytes = 4;
    f.write("big.txt", "12345");
    let out = f
        .run(
            "edit_file",
            json!({"path": "big.txt", "old_string": "1", "new_string": "0"}),
        )
        .await;
    assert!(
        out.text
            .contains("over the 4 byte limit (tools.max_edit_bytes)"),
        "{}",
        out.text
    );
    assert_eq!(read(&f, "big.txt"), "12345");
}

#[tokio::test]
async fn denied_writes_change_nothing_and_say_how_to_allow() {
    let f = Fixture::new();
    f.write("a.txt", "old\n");
    let batch = PolicyApprover::batch(ShellPolicy::Ask, ShellPolicy::Ask, Permissions::NONE);
    let out = f
        .run_with(
            "write_file",
            json!({"path": "a.txt", "content": "new\n"}),
            &batch,
        )
        .await;
    assert!(out.is_error);
    assert_eq!(out.text, WRITE_DENIED);
    assert!(out.text.contains("--allow-write"));
    assert_eq!(read(&f, "a.txt"), "old\n");

    // Outside the root: denied in batch even with --allow-write.
    let allowed = PolicyApprover::batch(
        ShellPolicy::Ask,
        ShellPolicy::Allow,
        Permissions {
            write: true,
            ..Permissions::NONE
        },
    );
    let outside = f.outside().join("x.txt");
    let out = f
        .run_with(
            "write_file",
            json!({"path": outside.as_str(), "content": "x"}),
            &allowed,
        )
        .await;
    assert!(
        out.text.contains("is outside the project root"),
        "{}",
        out.text
    );
    assert!(!outside.exists());
    let out = f
        .run_with(
            "write_file",
            json!({"path": "a.txt", "content": "new\n"}),
            &allowed,
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
}

#[tokio::test]
async fn a_file_changed_on_disk_since_last_seen_is_flagged() {
    let f = Fixture::new();
    f.write("n.txt", "v1\n");
    let out = f
        .run_with("read_file", json!({"path": "n.txt"}), &AllowAll)
        .await;
    assert!(!out.is_error);
    // The user edits the file behind the model's back.
    std::thread::sleep(std::time::Duration::from_millis(20));
    f.write("n.txt", "v2 by the user\n");
    let out = f
        .run("write_file", json!({"path": "n.txt", "content": "model\n"}))
        .await;
    assert!(out.is_error);
    assert!(
        out.text.contains("changed on disk since you last read"),
        "{}",
        out.text
    );
    assert_eq!(read(&f, "n.txt"), "v2 by the user\n");
    let out = f
        .run(
            "edit_file",
            json!({"path": "n.txt", "old_string": "v2", "new_string": "v3"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains("note: n.txt had changed on disk"),
        "{}",
        out.text
    );
    // Now seen again: no note.
    let out = f
        .run(
            "edit_file",
            json!({"path": "n.txt", "old_string": "v3", "new_string": "v4"}),
        )
        .await;
    assert_eq!(out.text, "changed n.txt (+1 -1 lines)");
}

/// A fixture whose writes keep their undo in a file history.
fn with_history(secrets: &[&str]) -> (Fixture, eonyx_store::FileHistory) {
    let mut f = Fixture::new();
    let store = eonyx_store::Store::open(&f.outside().join("data")).unwrap();
    let id = eonyx_core::SessionId::parse("20260101T000000-00000001").unwrap();
    let history = store.file_history(&id);
    f.ctx.undo = Some(UndoStore {
        history: history.clone(),
        secrets: std::sync::Arc::new(secrets.iter().map(|s| (*s).to_owned()).collect()),
    });
    (f, history)
}

#[tokio::test]
async fn every_change_keeps_the_content_before_and_records_its_undo() {
    let (f, history) = with_history(&[]);
    f.write("a.txt", "before\n");
    let out = f
        .run(
            "edit_file",
            json!({"path": "a.txt", "old_string": "before", "new_string": "after"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    let undo = out.undo.unwrap();
    let sha = eonyx_store::sha256_hex;
    assert_eq!(
        undo.path,
        f.root().canonicalize_utf8().unwrap().join("a.txt").as_str()
    );
    assert_eq!(undo.before.as_deref(), Some(sha(b"before\n").as_str()));
    assert_eq!(undo.after, sha(b"after\n"));
    assert!(undo.kept);
    assert_eq!(
        history.get(&sha(b"before\n")).unwrap().as_deref(),
        Some(&b"before\n"[..])
    );
    // A created file has no content before.
    let out = f
        .run("write_file", json!({"path": "new.txt", "content": "x"}))
        .await;
    let undo = out.undo.unwrap();
    assert_eq!((undo.before, undo.after), (None, sha(b"x")));
    // A failed call records nothing.
    let out = f
        .run(
            "edit_file",
            json!({"path": "a.txt", "old_string": "missing", "new_string": "y"}),
        )
        .await;
    assert!(out.is_error && out.undo.is_none());
}

#[tokio::test]
async fn a_content_holding_a_key_value_is_not_kept() {
    let (f, history) = with_history(&["sk-secret-12345678"]);
    f.write(".env", "KEY=sk-secret-12345678\n");
    let out = f
        .run("write_file", json!({"path": ".env", "content": "KEY=\n"}))
        .await;
    assert!(!out.is_error, "{}", out.text);
    let undo = out.undo.unwrap();
    assert!(!undo.kept);
    let before = undo.before.unwrap();
    assert_eq!(history.get(&before).unwrap(), None, "no copy was made");
    assert!(!history.dir().exists());
}

#[tokio::test]
async fn git_and_eonyx_json_are_never_written_without_the_user() {
    let f = Fixture::new();
    f.write("eonyx.json", "{}\n");
    f.write(".git/config", "[core]\n");
    f.write("sub/eonyx.json", "{}\n");
    std::os::unix::fs::symlink(f.root().join(".git"), f.root().join("g")).unwrap();
    let allowed = PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::ALL);
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "eonyx.json", "content": "{\"tools\":{}}\n"}),
        ),
        (
            "edit_file",
            json!({"path": "sub/eonyx.json", "old_string": "{}", "new_string": "{ }"}),
        ),
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "evil\n"}),
        ),
        (
            "write_file",
            json!({"path": "g/config", "content": "evil\n"}),
        ),
        (
            "write_file",
            json!({"path": "src/../.GIT/config", "content": "evil\n"}),
        ),
    ] {
        let out = f.run_with(tool, args.clone(), &allowed).await;
        assert!(out.is_error, "{args}: {}", out.text);
        assert!(
            out.text.contains("always needs the user's yes in the REPL"),
            "{args}: {}",
            out.text
        );
    }
    assert_eq!(read(&f, "eonyx.json"), "{}\n");
    assert_eq!(read(&f, "sub/eonyx.json"), "{}\n");
    assert_eq!(read(&f, ".git/config"), "[core]\n");
    assert!(!f.root().join(".git/hooks").exists());

    // A user's yes writes it; the question names the file.
    let rec = Recorder::new(Decision::Allow);
    let out = f
        .run_with(
            "write_file",
            json!({"path": "eonyx.json", "content": "{ }\n"}),
            &PolicyApprover {
                ask: Some(std::sync::Arc::new(rec)),
                ..PolicyApprover::batch(ShellPolicy::Allow, ShellPolicy::Allow, Permissions::ALL)
            },
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(read(&f, "eonyx.json"), "{ }\n");
    // Names merely like them are ordinary files.
    let out = f
        .run_with(
            "write_file",
            json!({"path": "docs/eonyx.json.md", "content": "x\n"}),
            &allowed,
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
}
