//! Slash commands in a batch run (issue 34): one that fails for a reason of
//! its own (nothing to do, a bad argument) is reported on stderr and as a
//! `notice` event, the exit status stays as it was and the batch goes on;
//! a failure of the machinery under it (here the summarizer) still stops it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::Value;

use crate::agent::Fx;
use crate::util::{assert_noticed, json_lines, notices, stderr};

fn code(o: &std::process::Output) -> Option<i32> {
    o.status.code()
}

#[test]
fn compact_with_nothing_to_compact_says_so_and_the_batch_goes_on() {
    let fx = Fx::new();
    fx.fake.push(Reply::text("hi there, human"));
    let o = fx.run(&[], "/compact\nhello there\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("nothing to compact"), "{err}");
    assert!(!err.contains("error:"), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "hi there, human\n");
    let asked = fx.agent_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].user_texts(), ["hello there"]);
    assert!(fx.chats().iter().all(|r| !r.is_summarizer()));

    // With --json: a notice event, no error event, and the turn after it.
    fx.fake.push(Reply::text("again"));
    let o = fx.run(&["--json"], "/compact\nhello again\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let events = json_lines(&o.stdout);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(!kinds.contains(&"error"), "{kinds:?}");
    let notice = events
        .iter()
        .position(|e| {
            e["type"] == "notice"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("nothing to compact"))
        })
        .unwrap_or_else(|| panic!("no notice: {events:?}"));
    let done = events
        .iter()
        .position(|e| e["type"] == "turn_completed")
        .unwrap_or_else(|| panic!("no turn: {events:?}"));
    assert!(notice < done, "{kinds:?}");
    assert!(stderr(&o).contains("nothing to compact"), "{}", stderr(&o));
}

#[test]
fn slash_commands_with_bad_arguments_are_reported_and_the_batch_goes_on() {
    let fx = Fx::new();
    fx.fake.push(Reply::text("first")).push(Reply::text("last"));
    let input = "first line\n/resume\n/resume not-a-session\n/resume 20260101T000000-00000000\n/rewind 5\n/rewind many\n/fork x\n/rename\n/remember\nlast line\n";
    let o = fx.run(&["--json"], input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let notices = notices(&o.stdout);
    let err = stderr(&o);
    for said in [
        "usage: /resume ID",
        "20260101T000000-00000000",
        "only 1 user turn(s)",
        "usage: /rewind",
        "usage: /fork",
        "usage: /rename TITLE",
        "usage: /remember TEXT",
    ] {
        assert_noticed(&notices, said);
        assert!(err.contains(said), "{said}: {err}");
    }
    assert!(
        notices.iter().any(|n| n.contains("not-a-session")),
        "{notices:?}"
    );
    assert!(
        json_lines(&o.stdout).iter().all(|e| e["type"] != "error"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Both turns ran, in the same session, nothing rewound.
    let asked = fx.agent_requests();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        asked[1].user_texts(),
        ["first line", "last line"],
        "{:?}",
        asked[1].user_texts()
    );
    assert_eq!(fx.session_files().len(), 1);
}

#[test]
fn a_compaction_whose_summarizer_fails_still_stops_the_batch() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.fake
        .set_summarizer(|_| Reply::error(500, r#"{"error":{"message":"the summarizer is down"}}"#));
    fx.fake.push(Reply::text("A")).push(Reply::text("B"));
    let o = fx.run(&["--json"], "alpha\nbeta\n/compact\ngamma\n");
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    let events = json_lines(&o.stdout);
    let errors: Vec<&Value> = events.iter().filter(|e| e["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["class"], "compaction");
    // gamma was never sent.
    let asked = fx.agent_requests();
    assert_eq!(asked.len(), 2);
    assert!(
        asked
            .iter()
            .all(|r| !r.user_texts().contains(&"gamma".to_owned()))
    );
}

/// Every command reads its arguments with the one grammar
/// (docs/repl.md#slash-commands): quotes make one word, free text is one
/// quoted word's text; a quote left open is declined in one line naming
/// the command's usage, and the batch goes on.
#[test]
fn quoted_arguments_read_alike_in_every_command_and_an_open_quote_is_declined() {
    let fx = Fx::new();
    fx.fake
        .push(Reply::text("first"))
        .push(Reply::text("second"))
        .push(Reply::text("last"));
    let input = "first line\n/rename \"Quoted title\"\nsecond line\n/rewind \"1\"\n\
                 /remember \"the sky is blue\"\n/jobs stop \"3\n/permissions forget '1\n\
                 /rewind '1\n/model default \"high\nlast line\n";
    let o = fx.run(&["--json"], input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("renamed to Quoted title\n"), "{err}");
    assert!(err.contains("): the sky is blue\n"), "{err}");
    let notices = notices(&o.stdout);
    for usage in [
        "usage: /jobs",
        "usage: /permissions",
        "usage: /rewind",
        "usage: /model",
    ] {
        let n = notices
            .iter()
            .find(|n| n.contains(usage))
            .unwrap_or_else(|| panic!("{usage}: {notices:?}"));
        assert!(n.contains("is not closed"), "{n}");
        assert!(!n.contains('\n'), "{n}");
    }
    assert!(
        json_lines(&o.stdout).iter().all(|e| e["type"] != "error"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // `/rewind "1"` took back the second line; the batch went on.
    let asked = fx.agent_requests();
    assert_eq!(asked.len(), 3);
    assert_eq!(asked[2].user_texts(), ["first line", "last line"]);
}
