//! Writing a session: the file's shape, when it appears, one writer at a time.

use super::*;

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
fn second_writer_is_refused_with_the_holder_pid() {
    let t = t();
    let w = session_with(&t.store, "x");
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
fn a_store_error_carries_its_class() {
    use eonyx_core::ErrorClass;
    let t = t();
    let w = session_with(&t.store, "x");
    let sid = w.id().clone();
    let in_use = t.store.open_writer(&sid).unwrap_err();
    assert_eq!(in_use.class(), ErrorClass::SessionInUse);
    drop(w);
    t.store.delete(&sid).unwrap();
    assert_eq!(
        t.store.delete(&sid).unwrap_err().class(),
        ErrorClass::NotFound
    );
    let memory = crate::memory::MemoryError::Empty;
    assert!(memory.class().is_users());
}
