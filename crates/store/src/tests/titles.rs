//! Session titles: numbering, concurrency, validation, birth order (issue 13.3).

use super::*;

#[test]
fn titles_count_up_and_are_never_reused_after_delete() {
    let t = t();
    let mut ids = Vec::new();
    for expect in ["1", "2", "3"] {
        let mut w = new_writer(&t.store);
        assert_eq!(w.title(), expect);
        w.append_message(&Message::user("x")).unwrap();
        ids.push(w.id().clone());
    }
    t.store.delete(&ids[2]).unwrap();
    assert_eq!(new_writer(&t.store).title(), "4");
    // A lost counter continues after the highest title in use.
    std::fs::remove_file(t.root.join("data/titles")).unwrap();
    assert_eq!(new_writer(&t.store).title(), "3");
}

#[test]
fn concurrent_creators_get_distinct_titles() {
    let t = t();
    let titles: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let w = session_with(&t.store, "x");
                    w.title().to_owned()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut n: Vec<u64> = titles.iter().map(|t| t.parse().unwrap()).collect();
    n.sort();
    assert_eq!(n, (1..=8).collect::<Vec<_>>());
}

#[test]
fn bad_titles_are_rejected_and_nothing_is_written() {
    let t = t();
    let mut w = session_with(&t.store, "x");
    let before = std::fs::read(w.path()).unwrap();
    for bad in ["", "   ", "two\nlines"] {
        assert!(matches!(
            w.rename(bad),
            Err(StoreError::InvalidTitle { .. })
        ));
    }
    assert_eq!(std::fs::read(w.path()).unwrap(), before);
}

/// The title numbers of the sessions on disk, sorted.
fn titles_on_disk(s: &Store) -> Vec<u64> {
    let mut n: Vec<u64> = s
        .list()
        .unwrap()
        .iter()
        .map(|s| s.title.parse().unwrap())
        .collect();
    n.sort();
    n
}

#[test]
fn sessions_without_a_message_take_no_title_number() {
    let t = t();
    let mut a = new_writer(&t.store);
    a.append_message(&Message::user("one")).unwrap();
    assert_eq!(a.title(), "1");
    // `/new` twice, an empty batch: created, dropped, nothing taken.
    for _ in 0..3 {
        let w = new_writer(&t.store);
        assert_eq!(w.title(), "2", "the number it expects to take");
        drop(w);
    }
    // Renamed before its first message: it takes no number at all.
    let mut r = new_writer(&t.store);
    r.rename("named").unwrap();
    r.append_message(&Message::user("x")).unwrap();
    assert_eq!(r.title(), "named");
    let mut b = new_writer(&t.store);
    b.append_message(&Message::user("two")).unwrap();
    assert_eq!(b.title(), "2");
    let l = t.store.list().unwrap();
    assert_eq!(l.len(), 3);
    assert!(l.iter().any(|s| s.title == "named"));
    assert_eq!(
        std::fs::read_to_string(t.root.join("data/titles")).unwrap(),
        "2\n"
    );
    assert_eq!(
        std::fs::read_dir(t.root.join("data/sessions"))
            .unwrap()
            .count(),
        3,
        "no file for the sessions that never got a message"
    );
}

#[test]
fn titles_follow_birth_order_not_creation_order() {
    let t = t();
    let mut first_created = new_writer(&t.store);
    let mut second_created = new_writer(&t.store);
    assert_eq!((first_created.title(), second_created.title()), ("1", "1"));
    second_created
        .append_message(&Message::user("born first"))
        .unwrap();
    first_created
        .append_message(&Message::user("born second"))
        .unwrap();
    assert_eq!((second_created.title(), first_created.title()), ("1", "2"));
    // The header on disk carries the number taken at birth.
    let h = t
        .store
        .read_all(first_created.id())
        .unwrap()
        .header
        .unwrap();
    assert_eq!(h.title, "2");
    assert_eq!(titles_on_disk(&t.store), vec![1, 2]);
}

#[test]
fn child_sessions_take_their_parents_title_and_no_number_and_are_never_most_recent() {
    let t = t();
    let parent = session_with(&t.store, "main work");
    assert_eq!(parent.title(), "1");
    let child = |k: u64, call: &str| {
        let spec = ChildSpec {
            cwd: Utf8Path::new("/w/sub"),
            project: Utf8Path::new("/w"),
            model: Some("m"),
            parent: parent.id(),
            parent_call: call,
            profile: "explore",
            title: format!("{}.{k}", parent.title()),
        };
        t.store.create_child(spec).unwrap()
    };
    assert_eq!(t.store.next_child_number(parent.id()).unwrap(), 1);
    let mut a = child(1, "call_a");
    a.append_message(&Message::user("look around")).unwrap();
    assert_eq!(t.store.next_child_number(parent.id()).unwrap(), 2);
    let mut b = child(2, "call_b");
    b.append_message(&Message::user("look elsewhere")).unwrap();
    // Renaming a child does not make its number free again.
    b.rename("renamed").unwrap();
    assert_eq!(t.store.next_child_number(parent.id()).unwrap(), 3);
    assert_eq!(a.header().parent.as_ref(), Some(parent.id()));
    assert_eq!(a.header().parent_call.as_deref(), Some("call_a"));
    assert_eq!(a.title(), "1.1");

    // The main sequence goes on as if no child existed.
    assert_eq!(new_writer(&t.store).title(), "2");
    // The children are newer, but "most recent" is the parent.
    let latest = t.store.latest_for_project(Utf8Path::new("/w")).unwrap();
    assert_eq!(latest.map(|s| s.id), Some(parent.id().clone()));
    let listed = t.store.list().unwrap();
    let p = listed.iter().find(|s| &s.id == parent.id()).unwrap();
    assert_eq!(p.children, 2);
    let below = t.store.descendants(parent.id()).unwrap();
    let mut ids: Vec<_> = below.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    let mut want = vec![a.id().clone(), b.id().clone()];
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(t.store.children_of(a.id()).unwrap(), Vec::new());
}

#[test]
fn deleting_a_session_deletes_its_task_sessions_and_their_file_history() {
    let t = t();
    let parent = session_with(&t.store, "main work");
    let other = session_with(&t.store, "unrelated");
    let child = |parent: &SessionWriter, call: &str| {
        let mut w = t
            .store
            .create_child(ChildSpec {
                cwd: Utf8Path::new("/w"),
                project: Utf8Path::new("/w"),
                model: Some("m"),
                parent: parent.id(),
                parent_call: call,
                profile: "explore",
                title: format!("{}.1", parent.title()),
            })
            .unwrap();
        w.append_message(&Message::user("a task")).unwrap();
        w
    };
    let task = child(&parent, "call_a");
    let grandchild = child(&task, "call_b");
    let kept = t.store.file_history(grandchild.id());
    kept.keep(b"old content").unwrap();
    let (parent_id, task_id, grand_id) = (
        parent.id().clone(),
        task.id().clone(),
        grandchild.id().clone(),
    );
    drop((parent, task, grandchild));

    let mut named = Vec::new();
    let deleted = t
        .store
        .delete_with(&parent_id, |s| named.push(s.id.clone()))
        .unwrap();
    // Deepest first, and each named as it went.
    assert_eq!(named, vec![grand_id.clone(), task_id.clone()]);
    assert_eq!(deleted.len(), 2);
    for id in [&parent_id, &task_id, &grand_id] {
        assert!(!t.store.session_path(id).exists(), "{id} is still there");
    }
    assert!(!kept.dir().exists());
    let left: Vec<_> = t.store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(left, vec![other.id().clone()]);
}
