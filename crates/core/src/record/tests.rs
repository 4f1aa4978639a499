use super::*;
use crate::message::{Role, ToolCall, Usage};

#[test]
fn message_line_matches_spec_shape() {
    let mut m = Message::assistant("");
    m.tool_calls.push(ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({"path":"a.txt"}),
    });
    m.usage = Some(Usage {
        prompt_tokens: 10,
        completion_tokens: 2,
        cached_tokens: 0,
        reasoning_tokens: 0,
        cache_write_tokens: 0,
    });
    let r = Record::Message(MessageRecord {
        seq: 3,
        ts: "2026-07-05T09:15:00Z".into(),
        message: m,
    });
    let line = r.to_line();
    assert_eq!(
        line,
        r#"{"type":"message","seq":3,"ts":"2026-07-05T09:15:00Z","role":"assistant","content":"","tool_calls":[{"id":"c1","name":"read_file","arguments":{"path":"a.txt"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"cached_tokens":0}}"#
    );
    match Record::parse_line(line.as_bytes()).unwrap() {
        ParsedLine::Record(r) => match *r {
            Record::Message(m) => assert_eq!(m.message.role, Role::Assistant),
            _ => panic!("wrong record"),
        },
        ParsedLine::Unknown(_) => panic!("unknown"),
    }
}

#[test]
fn draft_and_ahead_compaction_lines_match_the_documented_shape() {
    let d = Record::SummaryDraft(SummaryDraftRecord {
        seq: 40,
        ts: "2026-07-05T10:59:00Z".into(),
        summary: "…".into(),
        first_kept_seq: 37,
        base_seq: Some(12),
        facts: None,
        mode: Some(CompactionMode::SharedPrefix),
        tokens_before: 78000,
        tokens_after: 11000,
        tokens: 900,
    });
    let line = d.to_line();
    assert_eq!(
        line,
        r#"{"type":"summary_draft","seq":40,"ts":"2026-07-05T10:59:00Z","summary":"…","first_kept_seq":37,"base_seq":12,"mode":"shared-prefix","tokens_before":78000,"tokens_after":11000,"tokens":900}"#
    );
    assert!(matches!(
        Record::parse_line(line.as_bytes()).unwrap(),
        ParsedLine::Record(r) if *r == d
    ));
    // A broken draft is a bad line, not an unknown type.
    assert!(Record::parse_line(br#"{"type":"summary_draft","seq":1}"#).is_err());
    let c = Record::Compaction(CompactionRecord {
        seq: 42,
        ts: "2026-07-05T11:00:00Z".into(),
        summary: "…".into(),
        first_kept_seq: 37,
        trigger: CompactionTrigger::Auto,
        tokens_before: 91000,
        tokens_after: 12000,
        mode: Some(CompactionMode::Ahead),
        draft_seq: Some(40),
        ..CompactionRecord::default()
    });
    assert_eq!(
        c.to_line(),
        r#"{"type":"compaction","seq":42,"ts":"2026-07-05T11:00:00Z","summary":"…","first_kept_seq":37,"trigger":"auto","tokens_before":91000,"tokens_after":12000,"mode":"ahead","draft_seq":40}"#
    );
}

#[test]
fn child_headers_carry_parent_call_and_profile_and_old_headers_still_read() {
    let old = r#"{"type":"session","version":1,"id":"20260705T091500-1a2b3c4d","title":"1","created":"2026-07-05T09:15:00Z","cwd":"/p","project":"/p"}"#;
    let ParsedLine::Record(r) = Record::parse_line(old.as_bytes()).unwrap() else {
        panic!("unknown")
    };
    let Record::Session(mut h) = *r else {
        panic!("not a header")
    };
    assert!(!h.is_child());
    assert_eq!(
        Record::Session(h.clone()).to_line(),
        old,
        "no new fields written"
    );
    h.title = "1.1".into();
    h.parent = Some(SessionId::parse("20260705T091400-00000000").unwrap());
    h.parent_call = Some("call_1".into());
    h.profile = Some("explore".into());
    let line = Record::Session(h.clone()).to_line();
    assert!(
        line.ends_with(
            r#""parent":"20260705T091400-00000000","parent_call":"call_1","profile":"explore"}"#
        ),
        "{line}"
    );
    match Record::parse_line(line.as_bytes()).unwrap() {
        ParsedLine::Record(r) => assert_eq!(*r, Record::Session(h)),
        ParsedLine::Unknown(t) => panic!("unknown {t}"),
    }
}

#[test]
fn model_record_line_matches_spec_shape() {
    let r = Record::Model(ModelRecord {
        key: "big".into(),
        reasoning_effort: Some(crate::config::ReasoningEffort::High),
        ts: "2026-07-05T10:00:00Z".into(),
    });
    let line = r.to_line();
    assert_eq!(
        line,
        r#"{"type":"model","key":"big","reasoning_effort":"high","ts":"2026-07-05T10:00:00Z"}"#
    );
    assert_eq!(r.seq(), None);
    match Record::parse_line(line.as_bytes()).unwrap() {
        ParsedLine::Record(back) => assert_eq!(*back, r),
        ParsedLine::Unknown(t) => panic!("unknown {t}"),
    }
    // No effort: the field is left out and reads back as none.
    let plain = r#"{"type":"model","key":"small","ts":"2026-07-05T10:00:00Z"}"#;
    let ParsedLine::Record(back) = Record::parse_line(plain.as_bytes()).unwrap() else {
        panic!("unknown")
    };
    assert_eq!(back.to_line(), plain);
    // A broken one is a bad line, not an unknown type.
    assert!(Record::parse_line(br#"{"type":"model","ts":"t"}"#).is_err());
}

#[test]
fn unknown_types_and_extra_fields_are_tolerated() {
    assert!(matches!(
        Record::parse_line(br#"{"type":"future","x":1}"#).unwrap(),
        ParsedLine::Unknown(t) if t == "future"
    ));
    assert!(matches!(
        Record::parse_line(br#"{"type":"title","title":"a","ts":"t","extra":1}"#).unwrap(),
        ParsedLine::Record(_)
    ));
    assert!(Record::parse_line(b"{\"type\":\"message\"").is_err());
    assert!(Record::parse_line(b"[1,2]").is_err());
    assert!(Record::parse_line(&[0xff, 0xfe]).is_err());
}

#[test]
fn the_current_plan_is_the_last_call_that_succeeded() {
    use crate::plan::WorkPlan;
    let rec = |seq: u64, message: Message| MessageRecord {
        seq,
        ts: String::new(),
        message,
    };
    let call = |id: &str, args: Value| {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: id.into(),
            name: "plan".into(),
            arguments: args,
        });
        m
    };
    let one = serde_json::json!({"steps": [{"step": "one", "status": "pending"}]});
    let two = serde_json::json!({"steps": [{"step": "two", "status": "pending"}]});
    let mut failed = Message::tool_result("c2", "plan not changed");
    failed.is_error = true;
    let records = vec![
        rec(1, Message::user("go")),
        rec(2, call("c1", one)),
        rec(3, Message::tool_result("c1", "ok")),
        rec(4, call("c2", two.clone())),
        rec(5, failed),
    ];
    let p = current_plan(&records, None).unwrap();
    assert_eq!(p.steps[0].step, "one");
    // No call at all: the pinned plan.
    let pinned = WorkPlan::from_args(&two).unwrap();
    assert_eq!(current_plan(&records[..1], Some(&pinned)), Some(pinned));
    // A call without a result does not count.
    assert_eq!(current_plan(&records[..2], None), None);
}

#[test]
fn a_line_parses_the_same_whether_type_comes_first_or_not() {
    let first = br#"{"type":"message","seq":3,"ts":"t","role":"user","content":"hi"}"#;
    let later = br#"{"seq":3,"ts":"t","role":"user","type":"message","content":"hi"}"#;
    let (Ok(ParsedLine::Record(a)), Ok(ParsedLine::Record(b))) =
        (Record::parse_line(first), Record::parse_line(later))
    else {
        panic!("both lines are message records");
    };
    assert_eq!(a, b);
    assert!(matches!(*a, Record::Message(ref m) if m.seq == 3));
    // A broken record with its type first still says what is wrong.
    let broken = br#"{"type":"message","seq":"x"}"#;
    let err = Record::parse_line(broken).unwrap_err().to_string();
    assert!(err.contains("malformed message record"), "{err}");
    // An unknown type first is still unknown, not an error.
    assert!(matches!(
        Record::parse_line(br#"{"type":"future","x":1}"#),
        Ok(ParsedLine::Unknown(t)) if t == "future"
    ));
}

#[test]
fn a_message_line_with_every_field_reads_back_and_writes_byte_for_byte() {
    let line = r#"{"type":"message","seq":7,"ts":"2026-07-05T09:15:00Z","role":"assistant","content":[{"type":"text","text":"a \"q\" \\ é"},{"type":"image","media_type":"image/png","data":"AAAA"}],"tool_calls":[{"id":"c1","name":"write_file","arguments":{"path":"a.txt"}}],"tool_call_id":"c0","usage":{"prompt_tokens":10,"completion_tokens":2,"cached_tokens":1,"reasoning_tokens":1,"cache_write_tokens":3},"reasoning":[{"api":"responses","id":"rs_1","summary":["s"],"encrypted":"e"}],"is_error":true,"undo":{"path":"/p/a.txt","before":null,"after":"ab","kept":false}}"#;
    let Ok(ParsedLine::Record(r)) = Record::parse_line(line.as_bytes()) else {
        panic!("a message record");
    };
    assert_eq!(r.to_line(), line);
    let Record::Message(m) = &*r else {
        panic!("a message record");
    };
    assert_eq!(m.message.content.text(), "a \"q\" \\ é");
    assert_eq!(m.message.content.image_count(), 1);
    assert!(m.message.is_error);
    // The same line with its type last (the general path) reads the same.
    let later = line.replacen(r#""type":"message","#, "", 1).replacen(
        r#""role":"assistant","#,
        r#""role":"assistant","type":"message","#,
        1,
    );
    let Ok(ParsedLine::Record(r2)) = Record::parse_line(later.as_bytes()) else {
        panic!("a message record");
    };
    assert_eq!(r, r2);
    // Missing optional fields take their defaults; content that is neither
    // a string nor parts is a malformed record.
    let Ok(ParsedLine::Record(bare)) =
        Record::parse_line(br#"{"type":"message","seq":1,"ts":"t","role":"user"}"#)
    else {
        panic!("a message record");
    };
    assert!(matches!(*bare, Record::Message(ref m) if m.message.content.is_empty()));
    let err =
        Record::parse_line(br#"{"type":"message","seq":1,"ts":"t","role":"user","content":5}"#)
            .unwrap_err()
            .to_string();
    assert!(err.contains("malformed message record"), "{err}");
}
