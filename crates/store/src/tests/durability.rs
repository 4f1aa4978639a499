//! Durability: failed appends, doctor, permissions, kill -9 mid-append.

use super::*;

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

/// Make `w` write to the file at `path` through [`Failing`].
fn fail_next_writes(w: &mut SessionWriter, path: &Utf8Path, ok_bytes: usize, fail_sync: bool) {
    let inner = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    w.file = Some(Box::new(Failing {
        inner,
        ok_bytes,
        fail_sync,
    }));
}

#[test]
fn failed_append_returns_error_and_leaves_the_file_readable() {
    let t = t();
    let mut w = session_with(&t.store, "kept");
    let path = w.path();
    let good = std::fs::read(&path).unwrap();
    fail_next_writes(&mut w, &path, 20, false);
    let err = w.append_message(&Message::user("lost")).unwrap_err();
    assert!(err.to_string().contains("disk full (injected)"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        good,
        "partial line taken back"
    );
    assert_eq!(w.next_seq(), 2, "a failed append does not use up a seq");

    // fsync failing after a complete write is a failure too.
    fail_next_writes(&mut w, &path, usize::MAX, true);
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
    let w = session_with(&t.store, "x");
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

#[cfg(unix)]
#[test]
fn data_dir_is_private_and_files_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let t = t();
    let w = session_with(&t.store, "x");
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
    let w = session_with(&t.store, "first");
    let sid = w.id().clone();
    let path = w.path();
    drop(w);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::durability::child_appender",
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
