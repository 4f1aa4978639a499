//! The listing index: current vs rebuilt, repair, first open of an unindexed
//! session (issue 13.6).

use super::*;

/// Put the sessions directory's mtime out of the racy window, so that the
/// next listing can trust it.
fn settle(t: &T) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    std::fs::File::open(t.root.join("data/sessions"))
        .unwrap()
        .set_modified(past)
        .unwrap();
}

fn is_current(s: &Store) -> bool {
    matches!(
        s.refresh(crate::listing::RefreshMode::AllowCurrent)
            .unwrap(),
        Refreshed::Current(_)
    )
}

#[test]
fn listing_from_a_current_index_matches_a_rebuild_and_sees_every_change() {
    let t = t();
    let other = Store::open(t.store.data_dir()).unwrap();
    // Fields that the index escapes survive both paths.
    let mut w = other
        .create(Utf8Path::new("/w/tab\there\\"), Utf8Path::new("/w"), None)
        .unwrap();
    w.append_message(&Message::user("one")).unwrap();
    w.rename("back\\slash").unwrap();
    let sid = w.id().clone();
    let a = write_file(
        &t.store,
        "20260101T000000-aaaaaaaa",
        format!("{}\n", header_line("20260101T000000-aaaaaaaa", "1")).as_bytes(),
    );
    // Not a session (no header): never listed, on either path.
    write_file(&t.store, "20260101T000000-bbbbbbbb", b"garbage\n");
    settle(&t);
    let l = t.store.list().unwrap();
    assert_eq!(l.len(), 2);
    assert!(is_current(&t.store), "a saved, settled index needs no work");
    assert_eq!(t.store.list().unwrap(), l);
    let s = l.iter().find(|s| s.id == sid).unwrap();
    assert_eq!(
        (s.title.as_str(), s.cwd.as_str()),
        ("back\\slash", "/w/tab\there\\")
    );

    // An append and a rename by another handle are seen, then the index
    // is current again.
    w.append_message(&Message::assistant("two")).unwrap();
    drop(w);
    other.rename(&a, "renamed").unwrap();
    assert!(!is_current(&t.store));
    let l = t.store.list().unwrap();
    let s = l.iter().find(|s| s.id == sid).unwrap();
    assert_eq!(s.message_count, 2);
    assert_eq!(l.iter().find(|s| s.id == a).unwrap().title, "renamed");
    assert!(is_current(&t.store));
    assert_eq!(t.store.list().unwrap(), l);

    // A file added behind the store's back changes the directory.
    let c = write_file(
        &t.store,
        "20260102T000000-cccccccc",
        format!("{}\n", header_line("20260102T000000-cccccccc", "3")).as_bytes(),
    );
    let l = t.store.list().unwrap();
    assert!(l.iter().any(|s| s.id == c));

    // Same answer as a rebuild from the session files alone.
    std::fs::remove_file(t.root.join("data/index")).unwrap();
    std::fs::remove_file(t.root.join("data/journal")).unwrap();
    settle(&t);
    assert_eq!(t.store.list().unwrap(), l);
    assert!(is_current(&t.store));
    assert_eq!(t.store.list().unwrap(), l);
}

#[test]
fn damaged_or_unordered_index_lines_are_repaired_by_the_next_listing() {
    let t = t();
    let mut ids = Vec::new();
    for n in 1..=3 {
        let sid = format!("2026010{n}T000000-aaaaaaaa");
        ids.push(write_file(
            &t.store,
            &sid,
            format!("{}\n", header_line(&sid, &n.to_string())).as_bytes(),
        ));
    }
    settle(&t);
    let l = t.store.list().unwrap();
    assert_eq!(l.len(), 3);
    let path = t.root.join("data/index");
    let good = std::fs::read_to_string(&path).unwrap();
    let (head, body) = good.split_once('\n').unwrap();
    let lines: Vec<&str> = body.lines().collect();
    let damaged = [
        // A line cut short: that session must still be listed.
        format!("{head}\n{}\n{}\n{}\n", lines[0], &lines[1][..30], lines[2]),
        // Out of order, and a stale duplicate before the good line.
        format!("{head}\n{}\n{}\n{}\n", lines[2], lines[1], lines[0]),
        format!(
            "{head}\n{}\n{}\n{}\n{}\n",
            lines[0], lines[1], lines[2], lines[1]
        ),
    ];
    for bad in damaged {
        std::fs::write(&path, &bad).unwrap();
        assert!(is_current(&t.store), "the head alone looks current");
        assert_eq!(t.store.list().unwrap(), l, "index was:\n{bad}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
    }
}

#[test]
fn the_first_open_of_an_unindexed_session_saves_its_entry() {
    let t = t();
    let mut w = new_writer(&t.store);
    for i in 1..=6 {
        w.append_message(&Message::user(format!("m{i:03}")))
            .unwrap();
    }
    w.append_compaction(compaction(5)).unwrap();
    w.append_message(&Message::user("m008")).unwrap();
    let sid = w.id().clone();
    drop(w);
    // A data dir copied from another machine: no index, no journal.
    for f in ["data/index", "data/journal"] {
        let _ = std::fs::remove_file(t.root.join(f));
    }
    let store = Store::open(&t.root.join("data")).unwrap();
    let eff = store.load_effective(&sid).unwrap();
    assert_eq!(
        eff.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![5, 6, 8]
    );
    let saved = std::fs::read(t.root.join("data/index")).unwrap();
    let entry = index::find_entry(&saved, &sid).expect("the entry was saved");
    assert_eq!((entry.last_seq, entry.message_count), (8, 7));
    // Later opens read only the tail: damage the start of the history
    // (same length) and they still see the same effective view.
    let path = store.session_path(&sid);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("m001", "XXXX", 1)).unwrap();
    assert_eq!(store.load_effective(&sid).unwrap(), eff);
    // A writer opened on it (resume) uses the saved entry too.
    assert_eq!(store.open_writer(&sid).unwrap().next_seq(), 9);
    // The next listing checks the directory and keeps using the entry.
    let l = store.list().unwrap();
    assert_eq!((l.len(), l[0].message_count), (1, 7));
    assert!(Index::parse(&std::fs::read(t.root.join("data/index")).unwrap()).is_some());
}

#[test]
fn patching_the_changed_lines_gives_the_index_a_rebuild_gives() {
    use crate::listing::RefreshMode;
    let t = t();
    let ids: Vec<SessionId> = (0..5)
        .map(|i| session_with(&t.store, &format!("s{i}")).id().clone())
        .collect();
    settle(&t);
    t.store.list().unwrap();
    // A rename (noted in the journal), a file removed and one added behind
    // the store's back (the directory changed).
    t.store.rename(&ids[2], "two").unwrap();
    std::fs::remove_file(t.store.session_path(&ids[4])).unwrap();
    let c = write_file(
        &t.store,
        "20260102T000000-cccccccc",
        format!("{}\n", header_line("20260102T000000-cccccccc", "9")).as_bytes(),
    );
    let body = |text: &str| text.split_once('\n').unwrap().1.to_owned();
    let patched = match t.store.refresh(RefreshMode::Update).unwrap() {
        Refreshed::Patched(text) => text,
        _ => panic!("a trusted index is patched"),
    };
    let rebuilt = match t.store.refresh(RefreshMode::Rebuild).unwrap() {
        Refreshed::Updated(_, text) => text,
        _ => panic!("a rebuild reads every file"),
    };
    assert_eq!(body(&patched), body(&rebuilt));
    let l = t.store.list().unwrap();
    assert_eq!(l.len(), 5);
    assert!(l.iter().any(|s| s.id == c));
    assert!(!l.iter().any(|s| s.id == ids[4]));
    assert_eq!(l.iter().find(|s| s.id == ids[2]).unwrap().title, "two");
}
