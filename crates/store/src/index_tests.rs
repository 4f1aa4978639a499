//! Tests of the index: entries, the file format, in-order single-entry
//! saves and the listing rows read from the text.

use super::*;
use crate::Listing;

fn sample() -> Entry {
    let id = SessionId::parse("20260705T091500-1a2b3c4d").unwrap();
    let mut e = Entry::empty(id.clone());
    e.apply(
        0,
        br#"{"type":"session","version":1,"id":"20260705T091500-1a2b3c4d","title":"1","created":"2026-07-05T09:15:00Z","cwd":"/w\tx","project":"/w"}"#,
    );
    e.apply(
        200,
        br#"{"type":"message","seq":1,"ts":"2026-07-05T09:16:00Z","role":"user","content":"hi"}"#,
    );
    e.apply(
        300,
        br#"{"type":"title","title":"a\\b\nc","ts":"2026-07-05T09:17:00Z"}"#,
    );
    e.apply(400, br#"{"type":"compaction","seq":2,"ts":"2026-07-05T09:18:00Z","summary":"s","first_kept_seq":1,"trigger":"manual","tokens_before":1,"tokens_after":1}"#);
    e.apply(500, b"garbage");
    e.apply(600, br#"{"type":"future"}"#);
    e.len = 700;
    e
}

#[test]
fn entry_accounts_records_and_round_trips() {
    let e = sample();
    assert_eq!(e.message_count, 1);
    assert_eq!(e.last_seq, 2);
    assert_eq!(e.title, "a\\b\nc");
    assert_eq!(
        e.activity_ns,
        eonyx_core::time::parse_rfc3339("2026-07-05T09:18:00Z").map(|t| t.as_nanosecond())
    );
    assert_eq!(e.last_activity, "2026-07-05T09:18:00Z");
    assert_eq!((e.bad_lines, e.unknown_lines), (1, 1));
    let mut idx = Index {
        epoch: "e1".into(),
        journal_offset: 17,
        dir_mtime: 5,
        ..Index::default()
    };
    idx.insert(e.clone());
    let text = idx.encode();
    let back = Index::parse(text.as_bytes()).unwrap();
    assert_eq!(back.get(&e.id), Some(e.clone()));
    // Lines read stay as they were: the same text comes out.
    assert_eq!(back.encode(), text);
    assert_eq!((back.epoch.as_str(), back.journal_offset), ("e1", 17));
    assert_eq!(find_entry(text.as_bytes(), &e.id), Some(e.clone()));

    let mut changed = e.clone();
    changed.message_count = 9;
    let raw = upsert_raw(text.as_bytes(), &e.id, Some(&changed)).unwrap();
    assert_eq!(find_entry(&raw, &e.id).unwrap().message_count, 9);
    let removed = upsert_raw(&raw, &e.id, None).unwrap();
    assert_eq!(find_entry(&removed, &e.id), None);
    assert_eq!(Index::parse(&removed).unwrap().len(), 0);
}

#[test]
fn an_entry_saved_alone_goes_in_id_order() {
    let e = three();
    let text = text_of(&[&e[0], &e[2]]);
    // In place when it is there, between its neighbours when new.
    let raw = upsert_raw(text.as_bytes(), &e[1].id, Some(&e[1])).unwrap();
    let raw = upsert_raw(&raw, &e[0].id, Some(&e[0])).unwrap();
    let idx = Index::parse(&raw).unwrap();
    assert!(!idx.dirty, "{}", String::from_utf8_lossy(&raw));
    assert_eq!(idx.len(), 3);
    assert_eq!(raw, text_of(&[&e[0], &e[1], &e[2]]).into_bytes());
}

#[test]
fn damaged_index_is_rejected_or_its_bad_lines_dropped() {
    assert!(Index::parse(b"nonsense\n").is_none());
    assert!(Index::parse(&[0xff, 0xfe]).is_none());
    // An index of an earlier version is not read (it is rebuilt).
    assert!(Index::parse(b"eonyx-index 2\te\t0\t0\n").is_none());
    let idx = Index::parse(b"eonyx-index 3\te\t0\t0\nnot\tan\tentry\n").unwrap();
    assert_eq!(idx.len(), 0);
    assert!(idx.dirty);
    assert!(Listing::parse("eonyx-index 3\te\t0\t0\nnot\tan\tentry\n".into()).is_none());
    let idx = Index::parse(b"eonyx-index 3\te\t0\t0").unwrap();
    assert!(idx.len() == 0 && !idx.dirty);
}

/// Three entries: with a header (escapes in the strings), with a
/// header and no model, without a header.
fn three() -> Vec<Entry> {
    let mut a = sample();
    a.header.as_mut().unwrap().cwd = "/w\\x\ty".into();
    a.header.as_mut().unwrap().forked_from = Some(ForkedFrom {
        id: SessionId::parse("20260101T000000-0000000f").unwrap(),
        seq: 12,
        root: Some(SessionId::parse("20251231T000000-00000001").unwrap()),
    });
    let mut b = Entry::empty(SessionId::parse("20260706T000000-00000000").unwrap());
    b.apply(
        0,
        br#"{"type":"session","version":1,"id":"20260706T000000-00000000","title":"2","created":"2026-07-06T00:00:00Z","cwd":"/v","project":"/v"}"#,
    );
    b.len = 150;
    let c = Entry::empty(SessionId::parse("20260707T000000-00000000").unwrap());
    vec![a, b, c]
}

fn text_of(entries: &[&Entry]) -> String {
    let mut out = format!("{MAGIC}\te1\t17\t5\n");
    for e in entries {
        e.encode(&mut out);
    }
    out
}

#[test]
fn listing_rows_read_from_the_text_match_the_entries() {
    let e = three();
    let text = text_of(&[&e[0], &e[1], &e[2]]);
    let idx = Index::parse(text.as_bytes()).unwrap();
    assert!(!idx.dirty);
    // The fork's header round-trips.
    assert_eq!(idx.get(&e[0].id).as_ref(), Some(&e[0]));
    let (head, _) = Head::parse(text.as_bytes()).unwrap();
    assert_eq!(
        (head.epoch, head.journal_offset, head.dir_mtime),
        ("e1", 17, 5)
    );
    let listing = Listing::parse(text.clone()).unwrap();
    // The session without a header is not listed; newest first.
    let ids: Vec<&str> = listing.rows().map(|r| r.id).collect();
    assert_eq!(ids, [e[1].id.as_str(), e[0].id.as_str()]);
    let row = listing.rows().nth(1).unwrap();
    assert_eq!(row.cwd, "/w\\x\ty", "escapes undone");
    assert_eq!(row.title, "a\\b\nc");
    // Only a field with an escape is copied; the others borrow the text.
    assert!(matches!(row.title, std::borrow::Cow::Owned(_)));
    assert!(matches!(row.project, std::borrow::Cow::Borrowed("/w")));
    assert!(matches!(row.created, std::borrow::Cow::Borrowed(_)));
    assert_eq!(row.message_count, 1);
    let summaries = listing.clone().into_summaries();
    assert_eq!(summaries[1].row(), row);
    assert_eq!(summaries[1].activity_ns, e[0].activity_ns);
}

#[test]
fn unordered_or_duplicate_lines_mark_the_index_dirty_and_the_last_wins() {
    let e = three();
    let mut newer = e[1].clone();
    newer.message_count = 7;
    for order in [vec![&e[1], &e[0], &e[2]], vec![&e[0], &e[1], &e[2], &newer]] {
        let text = text_of(&order);
        let idx = Index::parse(text.as_bytes()).unwrap();
        assert!(idx.dirty);
        assert_eq!(idx.len(), 3);
        assert!(Listing::parse(text).is_none());
    }
    let idx = Index::parse(text_of(&[&e[0], &e[1], &e[2], &newer]).as_bytes()).unwrap();
    assert_eq!(idx.get(&e[1].id).unwrap().message_count, 7);
}

#[test]
fn a_child_sessions_link_round_trips_and_reaches_the_listing() {
    let id = SessionId::parse("20260705T091600-00000001").unwrap();
    let mut e = Entry::empty(id.clone());
    e.apply(
        0,
        br#"{"type":"session","version":1,"id":"20260705T091600-00000001","title":"1.1","created":"2026-07-05T09:16:00Z","cwd":"/w","project":"/w","parent":"20260705T091500-1a2b3c4d","parent_call":"call\tA","profile":"explore"}"#,
    );
    e.len = 300;
    let parent = sample();
    let text = text_of(&[&parent, &e]);
    let back = Index::parse(text.as_bytes()).unwrap();
    assert_eq!(back.get(&id), Some(e.clone()));
    let h = e.header.as_ref().unwrap();
    assert_eq!(h.parent_call.as_deref(), Some("call\tA"));
    let listing = Listing::parse(text).unwrap();
    let child = listing.rows().find(|r| r.id == id.as_str()).unwrap();
    assert_eq!(child.parent, Some("20260705T091500-1a2b3c4d"));
    assert_eq!(child.profile.as_deref(), Some("explore"));
    // The parent counts its child; a top-level session has no link.
    let top = listing.rows().find(|r| r.id == parent.id.as_str()).unwrap();
    assert_eq!(
        (top.parent, top.profile.clone(), top.children),
        (None, None, 1)
    );
    let owned = listing.clone().into_summaries();
    assert!(
        owned
            .iter()
            .any(|s| s.parent.is_some() && s.profile.as_deref() == Some("explore"))
    );
}
