//! `eonyx sessions` as a user sees it: listing, search, show, export,
//! rename, delete and doctor over session files written into a temp data
//! dir, and the refusals (malformed ids, sessions in use).
#![allow(clippy::unwrap_used)] // test code: a failure is a test failure

use crate::util::{Sandbox, stderr, stdout};

const A: &str = "20260705T091500-1a2b3c4d";
const B: &str = "20260706T101500-0000beef";

fn header(id: &str, title: &str) -> String {
    format!(
        r#"{{"type":"session","version":1,"id":"{id}","title":"{title}","created":"{}-{}-{}T{}:{}:00Z","cwd":"/p/src","project":"/p"}}"#,
        &id[0..4],
        &id[4..6],
        &id[6..8],
        &id[9..11],
        &id[11..13]
    )
}

/// Session A: a tool call, a compaction and a rename. Session B: short.
fn fixture() -> Sandbox {
    let s = Sandbox::new();
    let a = [
        header(A, "1"),
        r#"{"type":"message","seq":1,"ts":"2026-07-05T09:15:10Z","role":"user","content":"Find the Parser bug"}"#.into(),
        r#"{"type":"message","seq":2,"ts":"2026-07-05T09:15:20Z","role":"assistant","content":"Looking.","tool_calls":[{"id":"c1","name":"read_file","arguments":{"path":"src/parser.rs"}}]}"#.into(),
        r#"{"type":"message","seq":3,"ts":"2026-07-05T09:15:21Z","role":"tool","content":"fn parse() {}","tool_call_id":"c1"}"#.into(),
        r#"{"type":"message","seq":4,"ts":"2026-07-05T09:16:00Z","role":"user","content":"now fix it"}"#.into(),
        r#"{"type":"compaction","seq":5,"ts":"2026-07-05T09:17:00Z","summary":"Goal: fix the parser bug in src/parser.rs.","first_kept_seq":4,"trigger":"manual","tokens_before":900,"tokens_after":120}"#.into(),
        r#"{"type":"title","title":"parser work","ts":"2026-07-05T09:17:30Z"}"#.into(),
        r#"{"type":"message","seq":6,"ts":"2026-07-07T08:00:00Z","role":"assistant","content":"Fixed."}"#.into(),
    ];
    let b = [
        header(B, "2"),
        r#"{"type":"message","seq":1,"ts":"2026-07-06T10:15:30Z","role":"user","content":"hello"}"#
            .into(),
    ];
    s.write(format!("data/sessions/{A}.jsonl"), a.join("\n") + "\n");
    s.write(format!("data/sessions/{B}.jsonl"), b.join("\n") + "\n");
    s
}

fn run(s: &Sandbox, args: &[&str]) -> std::process::Output {
    s.eonyx().args(args).output().unwrap()
}

#[test]
fn list_shows_newest_activity_first_as_table_and_json() {
    let s = fixture();
    let o = run(&s, &["sessions"]);
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("sessions_table", stdout(&o));
    let o = run(&s, &["sessions", "--json"]);
    assert!(o.status.success());
    insta::assert_snapshot!("sessions_json", stdout(&o));
    let o = run(&s, &["sessions", "--limit", "1"]);
    assert_eq!(stdout(&o).lines().count(), 2);
    assert!(stdout(&o).contains(A));
}

#[test]
fn search_covers_titles_and_text_case_insensitively() {
    let s = fixture();
    let ids = |args: &[&str]| -> Vec<String> {
        let o = run(&s, args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&["sessions", "--json", "--search", "PARSER BUG"]), [A]);
    assert_eq!(ids(&["sessions", "--json", "--search", "Hello"]), [B]);
    assert_eq!(ids(&["sessions", "--json", "--search", "parser work"]), [A]);
    assert!(ids(&["sessions", "--json", "--search", "nowhere"]).is_empty());
}

#[test]
fn show_prints_a_transcript_json_and_the_effective_view() {
    let s = fixture();
    let o = run(&s, &["sessions", "show", A]);
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("show_transcript", stdout(&o));
    let o = run(&s, &["sessions", "show", "--effective", A]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The system prompt as sent (base instructions first), then from its
    // date line on: the summary and the retained messages.
    let text = stdout(&o);
    assert!(text.starts_with("[system]\nYou are eonyx"), "{text}");
    let tail = &text[text.find("Current date (UTC): ").unwrap()..];
    let tail = format!("Current date (UTC): [DATE]{}", &tail[30..]);
    insta::assert_snapshot!("show_effective", tail);
    // The session's directory is gone: said on stderr.
    assert!(
        stderr(&o).contains("/p/src no longer exists"),
        "{}",
        stderr(&o)
    );
    let o = run(&s, &["sessions", "show", "--json", A]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let types: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "session",
            "message",
            "message",
            "message",
            "message",
            "compaction",
            "title",
            "message"
        ]
    );
}

#[test]
fn export_is_byte_identical_even_with_odd_lines() {
    let s = fixture();
    let path = s.data.join(format!("sessions/{B}.jsonl"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"not json\n{\"type\":\"later\"}\n{\"type\":\"mess");
    std::fs::write(&path, &bytes).unwrap();
    let o = run(&s, &["sessions", "export", B]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, bytes);
}

#[test]
fn rename_appends_a_title_and_delete_removes() {
    let s = fixture();
    let path = s.data.join(format!("sessions/{B}.jsonl"));
    let before = std::fs::read(&path).unwrap();
    let o = run(&s, &["sessions", "rename", B, "greetings"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before), "rename only appends");
    assert!(
        String::from_utf8_lossy(&after[before.len()..])
            .starts_with(r#"{"type":"title","title":"greetings""#)
    );
    assert!(stdout(&run(&s, &["sessions"])).contains("greetings"));

    let o = run(&s, &["sessions", "delete", B]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!path.exists());
    let o = run(&s, &["sessions", "show", B]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("no session {B}; run `eonyx sessions`")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn malformed_ids_are_rejected_with_exit_2_and_nothing_is_touched() {
    let s = fixture();
    let outside = s.write("x", "keep me");
    for args in [
        &["sessions", "delete", A, "../../x"][..],
        &["sessions", "delete", "../../x"],
        &["sessions", "show", "not-an-id"],
        &["sessions", "export", "../x"],
        &["sessions", "rename", "..", "t"],
    ] {
        let o = run(&s, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("invalid session id"), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    assert!(s.data.join(format!("sessions/{A}.jsonl")).exists());
    assert_eq!(std::fs::read_to_string(outside).unwrap(), "keep me");
    // A well-formed id that does not exist: exit 1, nothing deleted.
    let o = run(&s, &["sessions", "delete", A, "20260101T000000-00000000"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(s.data.join(format!("sessions/{A}.jsonl")).exists());
}

#[test]
fn a_session_in_use_cannot_be_renamed_or_deleted() {
    let s = fixture();
    std::fs::create_dir_all(s.data.join("locks")).unwrap();
    let lock = std::fs::File::create(s.data.join(format!("locks/{A}.lock"))).unwrap();
    lock.try_lock().unwrap();
    std::fs::write(s.data.join(format!("locks/{A}.lock")), "4242\n").unwrap();
    for args in [
        &["sessions", "rename", A, "x"][..],
        &["sessions", "delete", A],
    ] {
        let o = run(&s, args);
        assert_eq!(o.status.code(), Some(1));
        assert!(
            stderr(&o).contains(&format!("session {A} is in use by process 4242")),
            "{}",
            stderr(&o)
        );
    }
    assert!(s.data.join(format!("sessions/{A}.jsonl")).exists());
    drop(lock);
    // Once released the session can be renamed. A child another test forks
    // in this process shares the lock's file until it execs (flock belongs
    // to the open file), so under load it may take a moment to go.
    let renamed = (0..50).any(|_| {
        let ok = run(&s, &["sessions", "rename", A, "x"]).status.success();
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        ok
    });
    assert!(
        renamed,
        "the session stayed in use after its lock was dropped"
    );
}

#[test]
fn doctor_repairs_a_torn_tail_and_reports_each_file() {
    let s = fixture();
    let path = s.data.join(format!("sessions/{B}.jsonl"));
    let good = std::fs::read(&path).unwrap();
    let mut torn = good.clone();
    torn.extend_from_slice(b"garbage line\n{\"type\":\"message\",\"se");
    std::fs::write(&path, &torn).unwrap();
    let o = run(&s, &["sessions", "doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("doctor_report", stdout(&o));
    assert!(stderr(&o).contains("all readable"));
    let now = std::fs::read(&path).unwrap();
    assert_eq!(now.len(), good.len() + "garbage line\n".len());

    s.write(
        format!("data/sessions/{}.jsonl", "20260101T000000-00000001"),
        "no header\n",
    );
    let o = run(&s, &["sessions", "doctor"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("unreadable"));
}
