//! Behaviour tests of the store, against real files in temp dirs.

use std::io::Write;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::{CompactionRecord, CompactionTrigger, Message, Record, SessionId};

use super::*;
use crate::writer::SessionFile;

mod durability;
mod indexing;
mod listing;
mod reading;
mod recall;
mod rewinding;
mod titles;
mod writing;

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
        summary: "the summary".into(),
        first_kept_seq,
        trigger: CompactionTrigger::Manual,
        tokens_before: 100,
        tokens_after: 10,
        ..CompactionRecord::default()
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

/// A new session with one user message, `text`, so it is on disk.
fn session_with(s: &Store, text: &str) -> SessionWriter {
    let mut w = new_writer(s);
    w.append_message(&Message::user(text)).unwrap();
    w
}

/// Recall `query` in `opts` (a query that does not parse fails the test).
fn recall(s: &Store, query: &str, opts: crate::RecallOptions<'_>) -> crate::RecallResult {
    let q = crate::RecallQuery::parse(query).unwrap();
    s.recall(&q, &opts).unwrap()
}
