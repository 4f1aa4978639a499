//! Listing, search, the latest session of a project, and the order of times
//! (issue 20).

use super::*;

#[test]
fn list_is_newest_first_and_counts_survive_rename_and_compaction() {
    let t = t();
    let a = write_file(
        &t.store,
        "20260101T000000-aaaaaaaa",
        format!(
            "{}\n{}\n",
            header_line("20260101T000000-aaaaaaaa", "1"),
            r#"{"type":"message","seq":1,"ts":"2026-01-01T00:00:05Z","role":"user","content":"old"}"#
        )
        .as_bytes(),
    );
    let mut w = new_writer(&t.store);
    for i in 0..5 {
        w.append_message(&Message::user(format!("m{i}"))).unwrap();
    }
    let b = w.id().clone();
    let l = t.store.list().unwrap();
    assert_eq!(l.iter().map(|s| &s.id).collect::<Vec<_>>(), vec![&b, &a]);
    assert_eq!((l[0].message_count, l[1].message_count), (5, 1));
    assert_eq!(l[1].last_activity, "2026-01-01T00:00:05Z");

    w.append_compaction(compaction(4)).unwrap();
    w.append_message(&Message::assistant("after")).unwrap();
    w.rename("parser work").unwrap();
    drop(w);
    t.store.rename(&a, "renamed a").unwrap();
    let l = t.store.list().unwrap();
    let sb = l.iter().find(|s| s.id == b).unwrap();
    assert_eq!((sb.message_count, sb.title.as_str()), (6, "parser work"));
    let sa = l.iter().find(|s| s.id == a).unwrap();
    assert_eq!((sa.message_count, sa.title.as_str()), (1, "renamed a"));

    // The index is a cache: without it (and the journal) the answer is the same.
    std::fs::remove_file(t.root.join("data/index")).unwrap();
    std::fs::remove_file(t.root.join("data/journal")).unwrap();
    assert_eq!(t.store.list().unwrap(), l);
    // A damaged index is rebuilt too.
    std::fs::write(t.root.join("data/index"), b"\xff garbage").unwrap();
    assert_eq!(t.store.list().unwrap(), l);
}

#[test]
fn listing_sees_appends_and_deletes_from_other_handles() {
    let t = t();
    let other = Store::open(t.store.data_dir()).unwrap();
    let mut w = new_writer(&other);
    w.append_message(&Message::user("one")).unwrap();
    assert_eq!(t.store.list().unwrap()[0].message_count, 1);
    w.append_message(&Message::user("two")).unwrap();
    assert_eq!(t.store.list().unwrap()[0].message_count, 2);
    // A file edited behind the store's back (same length check fails).
    let sid = w.id().clone();
    drop(w);
    other.delete(&sid).unwrap();
    assert!(t.store.list().unwrap().is_empty());
    assert!(matches!(
        t.store.load_effective(&sid),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn search_matches_titles_and_message_text_case_insensitively_not_keys() {
    let t = t();
    let mut a = new_writer(&t.store);
    a.append_message(&Message::user("Fix the PARSER please"))
        .unwrap();
    let mut b = new_writer(&t.store);
    b.append_message(&Message::user("nothing here")).unwrap();
    b.rename("Lexer notes").unwrap();
    let mut c = new_writer(&t.store);
    c.append_message(&Message::tool_result(
        "call-parser",
        "ok \"quoted\" ünïcode",
    ))
    .unwrap();
    let ids = |v: Vec<SessionSummary>| v.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(ids(t.store.search("parser").unwrap()), vec![a.id().clone()]);
    assert_eq!(ids(t.store.search("lexer").unwrap()), vec![b.id().clone()]);
    assert_eq!(
        ids(t.store.search("\"QUOTED\"").unwrap()),
        vec![c.id().clone()]
    );
    assert_eq!(
        ids(t.store.search("ÜNÏCODE").unwrap()),
        vec![c.id().clone()]
    );
    // Keys, roles, paths and ids are not message text.
    assert!(t.store.search("role").unwrap().is_empty());
    assert!(t.store.search("/w/sub").unwrap().is_empty());
}

#[test]
fn latest_for_project_picks_most_recent_activity() {
    let t = t();
    let mut a = new_writer(&t.store);
    a.append_message(&Message::user("x")).unwrap();
    let mut b = t
        .store
        .create(Utf8Path::new("/o"), Utf8Path::new("/other"), None)
        .unwrap();
    b.append_message(&Message::user("x")).unwrap();
    let got = t
        .store
        .latest_for_project(Utf8Path::new("/w"))
        .unwrap()
        .unwrap();
    assert_eq!(&got.id, a.id());
    assert!(
        t.store
            .latest_for_project(Utf8Path::new("/none"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn most_recent_is_exact_within_one_second() {
    let t = t();
    // Many sessions within the same second or so: the listing (and so
    // `latest_for_project`) follows the order of their last appends, never
    // the random part of the id.
    let mut writers: Vec<SessionWriter> = (0..12).map(|_| new_writer(&t.store)).collect();
    let mut order = Vec::new();
    for w in writers.iter_mut().rev() {
        w.append_message(&Message::user("x")).unwrap();
        order.push(w.id().clone());
    }
    // Touch them again in a shuffled order.
    for i in [3usize, 0, 7, 11, 5, 1] {
        writers[i].append_message(&Message::user("y")).unwrap();
        order.retain(|id| id != writers[i].id());
        order.push(writers[i].id().clone());
    }
    order.reverse();
    let listed: Vec<SessionId> = t.store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(listed, order);
    let latest = t.store.latest_for_project(Utf8Path::new("/w")).unwrap();
    assert_eq!(latest.map(|s| s.id).as_ref(), order.first());
    // The same from a rebuilt index.
    std::fs::remove_file(t.root.join("data/index")).unwrap();
    let listed: Vec<SessionId> = t.store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(listed, order);
}

#[test]
fn whole_second_and_sub_second_times_are_ordered_as_times() {
    let t = t();
    let file = |sid: &str, ts: &str| {
        write_file(
            &t.store,
            sid,
            format!(
                "{}\n{{\"type\":\"message\",\"seq\":1,\"ts\":\"{ts}\",\"role\":\"user\",\"content\":\"x\"}}\n",
                header_line(sid, "1")
            )
            .as_bytes(),
        )
    };
    // Text order would put `05Z` before `05.000000001Z` and `04.9Z`.
    let old = file("20260101T000000-ffffffff", "2026-01-01T00:00:05Z");
    let newer = file("20260101T000000-00000001", "2026-01-01T00:00:05.000000001Z");
    let older = file("20260101T000000-00000002", "2026-01-01T00:00:04.900000000Z");
    // Whole-second ties (older versions) fall back to the id.
    let tie = file("20260101T000000-fffffff0", "2026-01-01T00:00:05Z");
    let ids: Vec<SessionId> = t.store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![newer, old, tie, older]);
}

#[test]
fn records_are_stamped_with_nanosecond_precision() {
    let t = t();
    let mut w = new_writer(&t.store);
    let m = w.append_message(&Message::user("x")).unwrap();
    // `2026-07-05T09:15:00.123456789Z`
    assert_eq!(m.ts.len(), 30, "{}", m.ts);
    assert_eq!(&m.ts[19..20], ".");
    let c = w.append_compaction(compaction(1)).unwrap();
    assert_eq!(c.ts.len(), 30, "{}", c.ts);
    assert!(eonyx_core::time::parse_rfc3339(&c.ts).is_some());
}
