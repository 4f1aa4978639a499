//! Behaviour tests of the store, against real files in temp dirs.

use std::io::Write;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::{CompactionRecord, CompactionTrigger, Message, Record, SessionId};

use super::*;
use crate::writer::SessionFile;

struct T {
    _dir: tempfile::TempDir,
    root: Utf8PathBuf,
    store: Store,
}

fn t() -> T {
    let dir = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(dir.path().to_path_buf()).unwrap();
    let store = Store::open(&root.join("data")).unwrap();
    T {
        _dir: dir,
        root,
        store,
    }
}

fn new_writer(s: &Store) -> SessionWriter {
    s.create(Utf8Path::new("/w/sub"), Utf8Path::new("/w"), Some("m"))
        .unwrap()
}

fn compaction(first_kept_seq: u64) -> CompactionRecord {
    CompactionRecord {
        seq: 0,
        ts: String::new(),
        summary: "the summary".into(),
        first_kept_seq,
        trigger: CompactionTrigger::Manual,
        tokens_before: 100,
        tokens_after: 10,
        mid_turn: false,
        focus: None,
        facts: None,
        mode: None,
        skills: Vec::new(),
    }
}

fn id(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn write_file(s: &Store, sid: &str, body: &[u8]) -> SessionId {
    let sid = id(sid);
    std::fs::write(s.session_path(&sid), body).unwrap();
    sid
}

fn header_line(sid: &str, title: &str) -> String {
    format!(
        r#"{{"type":"session","version":1,"id":"{sid}","title":"{title}","created":"2026-07-05T09:15:00Z","cwd":"/w","project":"/w"}}"#
    )
}

#[test]
fn session_file_appears_with_first_message_in_spec_shape() {
    let t = t();
    let mut w = new_writer(&t.store);
    assert_eq!(w.title(), "1");
    assert!(!w.is_on_disk());
    assert_eq!(
        std::fs::read_dir(t.root.join("data/sessions"))
            .unwrap()
            .count(),
        0
    );
    let rec = w.append_message(&Message::user("hello")).unwrap();
    assert_eq!(rec.seq, 1);
    assert!(w.is_on_disk());
    let c = w.append_compaction(compaction(1)).unwrap();
    assert_eq!(c.seq, 2);
    assert_eq!(w.append_message(&Message::assistant("hi")).unwrap().seq, 3);

    let text = std::fs::read_to_string(w.path()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    let h: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(h["type"], "session");
    assert_eq!(h["version"], 1);
    assert_eq!(h["id"], w.id().as_str());
    assert_eq!(h["title"], "1");
    assert_eq!(h["cwd"], "/w/sub");
    assert_eq!(h["project"], "/w");
    let m: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(
        (
            m["type"].as_str(),
            m["seq"].as_u64(),
            m["role"].as_str(),
            m["content"].as_str()
        ),
        (Some("message"), Some(1), Some("user"), Some("hello"))
    );
    assert!(eonyx_core::time::parse_rfc3339(m["ts"].as_str().unwrap()).is_some());
    let c: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(
        (c["type"].as_str(), c["seq"].as_u64()),
        (Some("compaction"), Some(2))
    );
    assert!(text.ends_with('\n'));
}

#[test]
fn session_that_never_got_a_message_leaves_nothing() {
    let t = t();
    let w = new_writer(&t.store);
    let lock = t.root.join(format!("data/locks/{}.lock", w.id()));
    assert!(lock.exists());
    drop(w);
    assert!(!lock.exists());
    assert_eq!(
        std::fs::read_dir(t.root.join("data/sessions"))
            .unwrap()
            .count(),
        0
    );
    assert!(t.store.list().unwrap().is_empty());
}

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
                    let mut w = new_writer(&t.store);
                    w.append_message(&Message::user("x")).unwrap();
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
fn torn_tail_is_ignored_on_read_and_cut_before_the_next_append() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("one")).unwrap();
    w.append_message(&Message::user("two")).unwrap();
    let sid = w.id().clone();
    let path = w.path();
    drop(w);
    let good = std::fs::read(&path).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"type":"message","seq":3,"ts":"2026-"#)
        .unwrap();
    drop(f);

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
    // A stale index pointing at the wrong place is detected and rebuilt.
    let idx = t.root.join("data/index");
    let text = std::fs::read_to_string(&idx).unwrap();
    let mut e = index::find_entry(text.as_bytes(), &sid).unwrap();
    e.compaction_offset = Some(0);
    std::fs::write(
        &idx,
        index::upsert_raw(text.as_bytes(), &sid, Some(&e)).unwrap(),
    )
    .unwrap();
    assert_eq!(t.store.load_effective(&sid).unwrap(), eff);
}

#[test]
fn second_writer_is_refused_with_the_holder_pid() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("x")).unwrap();
    let sid = w.id().clone();
    let err = t.store.open_writer(&sid).unwrap_err();
    let msg = err.to_string();
    assert!(err.is_in_use());
    assert!(
        msg.contains(&format!(
            "session {sid} is in use by process {}",
            std::process::id()
        )),
        "{msg}"
    );
    assert!(t.store.delete(&sid).unwrap_err().is_in_use());
    assert!(t.store.rename(&sid, "y").unwrap_err().is_in_use());
    drop(w);
    t.store.rename(&sid, "y").unwrap();
    t.store.delete(&sid).unwrap();
    assert!(t.store.delete(&sid).unwrap_err().is_not_found());
    assert!(!t.root.join(format!("data/locks/{sid}.lock")).exists());
}

#[test]
fn bad_titles_are_rejected_and_nothing_is_written() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("x")).unwrap();
    let before = std::fs::read(w.path()).unwrap();
    for bad in ["", "   ", "two\nlines"] {
        assert!(matches!(
            w.rename(bad),
            Err(StoreError::InvalidTitle { .. })
        ));
    }
    assert_eq!(std::fs::read(w.path()).unwrap(), before);
}

/// Writes the first `ok_bytes` bytes of the next write, then fails.
struct Failing {
    inner: std::fs::File,
    ok_bytes: usize,
    fail_sync: bool,
}

impl SessionFile for Failing {
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let n = self.ok_bytes.min(bytes.len());
        self.inner.write_all(&bytes[..n])?;
        if n < bytes.len() {
            return Err(std::io::Error::other("disk full (injected)"));
        }
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        if self.fail_sync {
            return Err(std::io::Error::other("fsync failed (injected)"));
        }
        self.inner.sync_data()
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
}

#[test]
fn failed_append_returns_error_and_leaves_the_file_readable() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("kept")).unwrap();
    let path = w.path();
    let good = std::fs::read(&path).unwrap();
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    w.file = Some(Box::new(Failing {
        inner: f,
        ok_bytes: 20,
        fail_sync: false,
    }));
    let err = w.append_message(&Message::user("lost")).unwrap_err();
    assert!(err.to_string().contains("disk full (injected)"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        good,
        "partial line taken back"
    );
    assert_eq!(w.next_seq(), 2, "a failed append does not use up a seq");

    // fsync failing after a complete write is a failure too.
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    w.file = Some(Box::new(Failing {
        inner: f,
        ok_bytes: usize::MAX,
        fail_sync: true,
    }));
    assert!(w.append_message(&Message::user("lost")).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), good);

    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    w.file = Some(Box::new(f));
    w.append_message(&Message::user("next")).unwrap();
    let sid = w.id().clone();
    drop(w);
    let log = t.store.read_all(&sid).unwrap();
    assert_eq!(log.stats, ReadStats::default());
    assert_eq!(log.records.len(), 3);
}

#[test]
fn failed_first_append_leaves_no_file() {
    let t = t();
    let mut w = new_writer(&t.store);
    fn wrap(f: std::fs::File) -> Box<dyn SessionFile> {
        Box::new(Failing {
            inner: f,
            ok_bytes: 10,
            fail_sync: false,
        })
    }
    w.wrap = Some(wrap);
    assert!(w.append_message(&Message::user("x")).is_err());
    assert!(!w.is_on_disk());
    assert!(!w.path().exists());
    w.wrap = None;
    w.append_message(&Message::user("x")).unwrap();
    assert_eq!(t.store.list().unwrap()[0].message_count, 1);
    // The failed birth gave its title number back.
    assert_eq!(w.title(), "1");
}

#[test]
fn doctor_repairs_torn_tails_and_reports_each_file() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("x")).unwrap();
    let ok_id = w.id().clone();
    drop(w);
    let torn = write_file(
        &t.store,
        "20260101T000000-11111111",
        format!(
            "{}\nnot json\n{{\"type\":\"mess",
            header_line("20260101T000000-11111111", "9")
        )
        .as_bytes(),
    );
    let empty = write_file(&t.store, "20260101T000000-22222222", b"{\"type\":\"sess");
    let headless = write_file(&t.store, "20260101T000000-33333333", b"garbage\n");
    std::fs::write(t.root.join("data/sessions/notes.txt"), "x").unwrap();

    let r = t.store.doctor().unwrap();
    let status = |sid: &SessionId| r.files.iter().find(|f| &f.id == sid).unwrap().clone();
    assert_eq!(status(&ok_id).status, DoctorStatus::Ok);
    let ft = status(&torn);
    assert_eq!(
        (ft.status, ft.bad_lines),
        (DoctorStatus::Repaired { torn_bytes: 13 }, 1)
    );
    assert_eq!(status(&empty).status, DoctorStatus::RemovedEmpty);
    assert!(matches!(
        status(&headless).status,
        DoctorStatus::Unreadable { .. }
    ));
    assert_eq!(r.ignored, vec![t.root.join("data/sessions/notes.txt")]);
    assert!(!r.all_readable());
    assert!(!t.store.session_path(&empty).exists());
    assert_eq!(t.store.read_all(&torn).unwrap().stats.torn_tail_bytes, 0);

    std::fs::remove_file(t.store.session_path(&headless)).unwrap();
    let r = t.store.doctor().unwrap();
    assert!(r.all_readable());
    assert!(r.files.iter().all(|f| f.status == DoctorStatus::Ok));
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

#[cfg(unix)]
#[test]
fn data_dir_is_private_and_files_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("x")).unwrap();
    t.store.list().unwrap();
    let mode = |p: &Utf8Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for d in ["data", "data/sessions", "data/locks"] {
        assert_eq!(mode(&t.root.join(d)), 0o700, "{d}");
    }
    assert_eq!(mode(&w.path()), 0o600);
    for f in ["data/index", "data/journal", "data/titles"] {
        assert_eq!(mode(&t.root.join(f)), 0o600, "{f}");
    }
}

/// Child half of `kill_9_while_appending_keeps_every_line_before_the_tear`.
#[test]
#[ignore = "helper: run as a child process by kill_9_while_appending_keeps_every_line_before_the_tear"]
fn child_appender() {
    let Ok(dir) = std::env::var("EONYX_STORE_CHILD_DIR") else {
        return;
    };
    let store = Store::open(Utf8Path::new(&dir)).unwrap();
    let sid = id(&std::env::var("EONYX_STORE_CHILD_ID").unwrap());
    let mut w = store.open_writer(&sid).unwrap();
    let text = "z".repeat(3000);
    loop {
        w.append_message(&Message::user(text.clone())).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn kill_9_while_appending_keeps_every_line_before_the_tear() {
    let t = t();
    let mut w = new_writer(&t.store);
    w.append_message(&Message::user("first")).unwrap();
    let sid = w.id().clone();
    let path = w.path();
    drop(w);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::child_appender",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("EONYX_STORE_CHILD_DIR", t.store.data_dir().as_str())
        .env("EONYX_STORE_CHILD_ID", sid.as_str())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the child has appended a good number of messages.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::metadata(&path).unwrap().len() < 200_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "child made no progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let log = t.store.read_all(&sid).unwrap();
    assert_eq!(log.stats.bad_lines, 0);
    let seqs: Vec<u64> = log
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.seq),
            _ => None,
        })
        .collect();
    assert!(seqs.len() > 50);
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    // The lock died with the child; the next append repairs any torn tail.
    let mut w = t.store.open_writer(&sid).unwrap();
    let rec = w.append_message(&Message::user("after the crash")).unwrap();
    assert_eq!(rec.seq, seqs.len() as u64 + 1);
    drop(w);
    let log = t.store.read_all(&sid).unwrap();
    assert_eq!(log.stats, ReadStats::default());
    assert_eq!(
        t.store.list().unwrap()[0].message_count,
        seqs.len() as u64 + 1
    );
}

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
    matches!(s.refresh(false, true).unwrap(), Refreshed::Current(_))
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

// ---------------------------------------------------------------- issue 13.3

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

// ---------------------------------------------------------------- issue 20

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

// ---------------------------------------------------------------- issue 13.6

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
    assert!(entry.compaction_offset.is_some());
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
