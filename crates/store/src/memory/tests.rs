//! Memory files: adding, forgetting, parsing, permissions and locking.

use super::*;

fn store() -> (tempfile::TempDir, MemoryStore) {
    let dir = tempfile::tempdir().unwrap();
    let data = Utf8PathBuf::from_path_buf(dir.path().to_path_buf()).unwrap();
    let m = MemoryStore::new(&data, Utf8Path::new("/home/me/shop"));
    (dir, m)
}

#[test]
fn add_list_and_forget_round_trip_through_plain_markdown() {
    let (_d, m) = store();
    assert!(m.list().unwrap().is_empty());
    let a = m
        .add(MemoryScope::Project, "Staging is\nread-only", "cli", &[])
        .unwrap();
    let g = m
        .add(
            MemoryScope::Global,
            "Answer briefly",
            "20261130T164000-1a2b3c4d",
            &[],
        )
        .unwrap();
    assert_eq!(a.text, "Staging is read-only");
    let text = std::fs::read_to_string(m.path(MemoryScope::Project)).unwrap();
    let id = a.id.clone().unwrap();
    assert_eq!(
        text,
        format!(
            "# eonyx memory: project /home/me/shop\n\n- [{id}] {} cli: Staging is read-only\n",
            a.created.as_deref().unwrap()
        )
    );
    assert_eq!(m.list().unwrap(), vec![g.clone(), a.clone()]);
    let removed = m.forget(&[id.as_str()]).unwrap();
    assert_eq!(removed, vec![a]);
    assert_eq!(m.list().unwrap(), vec![g]);
    let err = m.forget(&["nope"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no memory entry with id nope; run `eonyx memory` to list them"
    );
}

#[test]
fn malformed_lines_are_kept_shown_and_survive_forget() {
    let (_d, m) = store();
    let a = m.add(MemoryScope::Project, "one", "cli", &[]).unwrap();
    let path = m.path(MemoryScope::Project).to_owned();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"a note written by hand\n- [BAD] oops")
        .unwrap();
    drop(f);
    let b = m.add(MemoryScope::Project, "two", "cli", &[]).unwrap();
    let list = m.list().unwrap();
    let texts: Vec<_> = list.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        ["one", "a note written by hand", "- [BAD] oops", "two"]
    );
    assert!(!list[1].is_well_formed());
    m.forget(&[a.id.as_deref().unwrap(), b.id.as_deref().unwrap()])
        .unwrap();
    let texts: Vec<_> = m.list().unwrap().into_iter().map(|e| e.text).collect();
    assert_eq!(texts, ["a note written by hand", "- [BAD] oops"]);
}

#[test]
fn secrets_and_empty_text_are_refused() {
    let (_d, m) = store();
    let secrets = vec!["sk-live-0123456789".to_owned()];
    let err = m
        .add(
            MemoryScope::Global,
            "key sk-live-0123456789",
            "cli",
            &secrets,
        )
        .unwrap_err();
    assert!(matches!(err, MemoryError::Secret { .. }), "{err}");
    for (text, kind) in crate::secret::tests::FORMATS {
        let err = m.add(MemoryScope::Project, text, "cli", &[]).unwrap_err();
        assert!(
            matches!(err, MemoryError::Secret { kind: k } if k == kind),
            "{text}: {err}"
        );
        assert!(err.to_string().contains(kind.describe()), "{err}");
    }
    assert!(matches!(
        m.add(MemoryScope::Global, " \n ", "cli", &[]).unwrap_err(),
        MemoryError::Empty
    ));
    assert!(m.list().unwrap().is_empty());
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, m) = store();
    m.add(MemoryScope::Project, "p", "cli", &[]).unwrap();
    m.add(MemoryScope::Global, "g", "cli", &[]).unwrap();
    for s in [MemoryScope::Global, MemoryScope::Project] {
        let mode = std::fs::metadata(m.path(s)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{s}");
    }
    let mode = std::fs::metadata(m.dir()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn concurrent_writers_never_lose_an_entry() {
    let (_d, m) = store();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let m = m.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let scope = if i % 2 == 0 {
                        MemoryScope::Project
                    } else {
                        MemoryScope::Global
                    };
                    m.add(scope, &format!("t{t} e{i}"), "cli", &[]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let list = m.list().unwrap();
    assert_eq!(list.len(), 200);
    assert!(list.iter().all(MemoryEntry::is_well_formed));
    let mut ids: Vec<_> = list.iter().map(|e| e.id.clone().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 200, "ids are unique");
}

#[test]
fn project_files_are_keyed_by_root() {
    let a = project_file_name(Utf8Path::new("/home/me/shop"));
    let b = project_file_name(Utf8Path::new("/home/you/shop"));
    assert!(a.starts_with("shop-") && a.ends_with(".md"), "{a}");
    assert_ne!(a, b);
    assert_eq!(a, project_file_name(Utf8Path::new("/home/me/shop")));
    assert!(project_file_name(Utf8Path::new("/")).starts_with("root-"));
}
