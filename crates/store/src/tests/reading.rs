//! Reading: torn tails, bad lines, corrupt files, the effective history, export.

use super::*;

#[test]
fn torn_tail_is_ignored_on_read_and_cut_before_the_next_append() {
    let t = t();
    let mut w = session_with(&t.store, "one");
    w.append_message(&Message::user("two")).unwrap();
    let sid = w.id().clone();
    let path = w.path();
    drop(w);
    let good = std::fs::read(&path).unwrap();
    eonyx_tests::tear_tail(path.as_std_path(), 3).unwrap();

    let log = t.store.read_all(&sid).unwrap();
    assert_eq!(log.records.len(), 3);
    assert_eq!(log.stats.torn_tail_bytes, 37);
    let eff = t.store.load_effective(&sid).unwrap();
    assert_eq!(eff.messages.len(), 2);
    assert_eq!(eff.next_seq, 3);
    assert_eq!(t.store.list().unwrap()[0].message_count, 2);

    let mut w = t.store.open_writer(&sid).unwrap();
    assert_eq!(w.next_seq(), 3);
    w.append_message(&Message::user("three")).unwrap();
    let now = std::fs::read(&path).unwrap();
    assert!(now.starts_with(&good));
    let log = SessionLog::parse(&now);
    assert_eq!(log.stats, ReadStats::default());
    assert_eq!(log.records.len(), 4);
}

#[test]
fn bad_and_unknown_lines_in_the_middle_are_skipped_and_counted() {
    let t = t();
    let sid = "20260101T000000-bbbbbbbb";
    let mut body = header_line(sid, "7");
    body.push('\n');
    body.push_str(
        r#"{"type":"message","seq":1,"ts":"2026-01-01T00:00:01Z","role":"user","content":"a"}"#,
    );
    body.push_str("\nnot json at all\n{\"type\":\"future-kind\",\"x\":1}\n[1,2]\n");
    body.push_str(r#"{"type":"message","seq":"broken"}"#);
    body.push('\n');
    body.push_str(r#"{"type":"message","seq":2,"ts":"2026-01-01T00:00:02Z","role":"assistant","content":"b"}"#);
    body.push('\n');
    let sid = write_file(&t.store, sid, body.as_bytes());
    let log = t.store.read_all(&sid).unwrap();
    assert_eq!(log.records.len(), 3);
    assert_eq!((log.stats.bad_lines, log.stats.unknown_lines), (3, 1));
    let l = t.store.list().unwrap();
    assert_eq!((l[0].message_count, l[0].title.as_str()), (2, "7"));
    let eff = t.store.load_effective(&sid).unwrap();
    assert_eq!(
        eff.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[test]
fn corrupt_files_never_panic_any_reader() {
    let t = t();
    let big = format!(
        "{}\n{{\"type\":\"message\",\"seq\":1,\"ts\":\"t\",\"role\":\"user\",\"content\":\"{}\"}}\n",
        header_line("20260101T000000-cccccccc", "x"),
        "y".repeat(10 * 1024 * 1024)
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("20260101T000000-cccccccc", big.into_bytes()),
        (
            "20260101T000000-dddddddd",
            vec![0xff, 0xfe, b'\n', 0xc3, b'\n', 0x80],
        ),
        (
            "20260101T000000-eeeeeeee",
            b"{\"type\":\"session\"\n{\"type\":\"mess".to_vec(),
        ),
        ("20260101T000000-ffffffff", Vec::new()),
        ("20260101T000000-00000000", b"\n\n\n".to_vec()),
    ];
    for (sid, body) in &cases {
        write_file(&t.store, sid, body);
    }
    let l = t.store.list().unwrap();
    assert_eq!(l.len(), 1, "only the file with a header is listed");
    assert_eq!(l[0].message_count, 1);
    assert!(t.store.search("yyyy").unwrap().len() == 1);
    for (sid, _) in &cases {
        let sid = id(sid);
        let _ = t.store.read_all(&sid).unwrap();
        let _ = t.store.load_effective(&sid);
        let mut out = Vec::new();
        t.store.export(&sid, &mut out).unwrap();
    }
    let eff = t
        .store
        .load_effective(&id("20260101T000000-cccccccc"))
        .unwrap();
    assert_eq!(
        eff.messages[0].message.content.text().len(),
        10 * 1024 * 1024
    );
    assert!(matches!(
        t.store.load_effective(&id("20260101T000000-dddddddd")),
        Err(StoreError::Unreadable { .. })
    ));
}

#[test]
fn effective_history_starts_at_first_kept_seq_of_last_compaction() {
    let t = t();
    let mut w = new_writer(&t.store);
    for i in 1..=6 {
        w.append_message(&Message::user(format!("m{i}"))).unwrap();
    }
    w.append_compaction(compaction(3)).unwrap(); // seq 7
    w.append_message(&Message::user("m8")).unwrap();
    w.rename("t").unwrap();
    w.append_compaction(compaction(5)).unwrap(); // seq 9
    w.append_message(&Message::user("m10")).unwrap();
    let sid = w.id().clone();
    drop(w);
    let eff = t.store.load_effective(&sid).unwrap();
    assert_eq!(eff.compaction.as_ref().map(|c| c.seq), Some(9));
    assert_eq!(
        eff.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![5, 6, 8, 10]
    );
    assert_eq!((eff.next_seq, eff.message_count), (11, 8));
    assert_eq!((eff.title.as_str(), eff.header.title.as_str()), ("t", "1"));
    // A fresh store computes the same.
    let store = Store::open(&t.root.join("data")).unwrap();
    assert_eq!(store.load_effective(&sid).unwrap(), eff);
}

fn draft(first_kept_seq: u64, base_seq: Option<u64>) -> eonyx_core::SummaryDraftRecord {
    eonyx_core::SummaryDraftRecord {
        seq: 0,
        ts: String::new(),
        summary: format!("draft for {first_kept_seq}"),
        first_kept_seq,
        base_seq,
        facts: None,
        mode: None,
        tokens_before: 100,
        tokens_after: 10,
        tokens: 5,
    }
}

#[test]
fn resume_finds_the_newest_draft_after_the_last_compaction_and_counts_its_seq() {
    let t = t();
    let mut w = new_writer(&t.store);
    for i in 1..=4 {
        w.append_message(&Message::user(format!("m{i}"))).unwrap();
    }
    assert_eq!(w.append_draft(draft(2, None)).unwrap().seq, 5);
    w.append_compaction(compaction(3)).unwrap(); // seq 6
    w.append_message(&Message::user("m7")).unwrap();
    w.append_draft(draft(4, Some(6))).unwrap(); // seq 8
    w.append_message(&Message::user("m9")).unwrap();
    let newest = w.append_draft(draft(7, Some(6))).unwrap(); // seq 10
    let sid = w.id().clone();
    let activity = t.store.list().unwrap()[0].last_activity.clone();
    drop(w);
    let eff = t.store.load_effective(&sid).unwrap();
    assert_eq!(eff.compaction.as_ref().map(|c| c.seq), Some(6));
    assert_eq!(eff.draft, Some(newest));
    assert_eq!(
        eff.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![3, 4, 7, 9]
    );
    // The drafts' seqs are taken: the next record follows the last draft.
    assert_eq!((eff.next_seq, eff.message_count), (11, 6));
    assert_eq!(t.store.open_writer(&sid).unwrap().next_seq(), 11);
    // A draft is not the user's activity, and readers know the type.
    let l = t.store.list().unwrap();
    assert_eq!(l[0].last_activity, activity);
    let log = t.store.read_all(&sid).unwrap();
    assert_eq!(log.stats, ReadStats::default());
    let drafts = log
        .records
        .iter()
        .filter(|r| matches!(r, Record::SummaryDraft(_)))
        .count();
    assert_eq!(drafts, 3);
    // After a newer compaction the earlier drafts are gone from resume.
    let mut w = t.store.open_writer(&sid).unwrap();
    w.append_compaction(compaction(9)).unwrap();
    drop(w);
    assert_eq!(t.store.load_effective(&sid).unwrap().draft, None);
}

#[test]
fn resume_never_takes_a_draft_a_rewind_left_out() {
    let t = t();
    let mut w = new_writer(&t.store);
    for i in 1..=4 {
        w.append_message(&Message::user(format!("m{i}"))).unwrap();
    }
    let kept = w.append_draft(draft(3, None)).unwrap(); // seq 5
    w.append_message(&Message::user("m6")).unwrap();
    w.append_message(&Message::user("m7")).unwrap();
    w.append_draft(draft(6, None)).unwrap(); // seq 8
    w.append_message(&Message::user("m9")).unwrap();
    // Back to just after m7: the draft at 8 is rewound, the one at 5 is not.
    w.append_rewind(7).unwrap(); // seq 10
    let sid = w.id().clone();
    let eff = t.store.load_effective(&sid).unwrap();
    assert_eq!(eff.draft, Some(kept));
    assert_eq!(
        eff.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 6, 7]
    );
    // Back to before the first draft: none is left.
    w.append_message(&Message::user("m11")).unwrap();
    w.append_rewind(4).unwrap(); // seq 12
    drop(w);
    let eff = t.store.load_effective(&sid).unwrap();
    assert_eq!(eff.draft, None);
    assert_eq!(eff.next_seq, 13);
}

#[test]
fn export_is_byte_identical() {
    let t = t();
    let sid = "20260101T000000-44444444";
    let body = format!(
        "{}\nodd line \u{e9}\n{{\"type\":\"x\"}}\ntorn",
        header_line(sid, "1")
    );
    let sid = write_file(&t.store, sid, body.as_bytes());
    let mut out = Vec::new();
    t.store.export(&sid, &mut out).unwrap();
    assert_eq!(out, body.as_bytes());
    assert!(
        t.store
            .export(&id("20260101T000000-55555555"), &mut out)
            .unwrap_err()
            .is_not_found()
    );
}
