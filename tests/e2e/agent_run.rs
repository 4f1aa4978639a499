//! `run`, `run -c` / `-s`, the append-only request prefix, and context
//! files re-read between turns, through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::util::{stderr, stdout};

#[test]
fn run_prints_only_the_answer_on_stdout_from_argument_or_stdin() {
    let fx = Fx::replying([Reply::text("the answer")]);
    let o = fx.run(&["run", "what is it?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "the answer\n");
    assert!(stderr(&o).contains("new session 1"), "{}", stderr(&o));
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("what is it?")
    );

    // Prompt on stdin, with no argument and with `-`: each a new session.
    fx.fake
        .push(Reply::text("from stdin"))
        .push(Reply::text("from dash"));
    let o = fx.run(&["run"], "piped question\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "from stdin\n");
    let o = fx.run(&["run", "-"], "dash question\nsecond line\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "from dash\n");
    let chats = fx.chats();
    assert_eq!(chats[1].user_texts(), ["piped question"]);
    assert_eq!(chats[2].user_texts(), ["dash question\nsecond line"]);
    assert_eq!(fx.session_files().len(), 3);

    // No prompt at all is a usage error, and nothing is sent.
    let o = fx.run(&["run"], "  \n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("no prompt"), "{}", stderr(&o));
    assert_eq!(fx.chats().len(), 3);
}

#[test]
fn run_continue_and_session_resume_with_the_earlier_messages() {
    let fx = Fx::new();
    // -c with no session of this project: usage error, no model call.
    let o = fx.run(&["run", "-c", "hi"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no session to continue"),
        "{}",
        stderr(&o)
    );
    assert!(fx.chats().is_empty());
    assert!(fx.session_files().is_empty(), "nothing left behind");

    fx.fake
        .push(Reply::text("A1"))
        .push(Reply::text("A2"))
        .push(Reply::text("B1"))
        .push(Reply::text("A3"));
    assert_eq!(code(&fx.run(&["run", "first"], "")), Some(0));
    let first = fx.session();
    let o = fx.run(&["run", "-c", "second"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "A2\n");
    assert!(stderr(&o).contains("resumed session 1"), "{}", stderr(&o));
    assert_eq!(fx.chats()[1].user_texts(), ["first", "second"]);
    assert_eq!(fx.chats()[1].roles(), ["user", "assistant", "user"]);

    // A second, newer session; then -s picks the first one explicitly.
    assert_eq!(code(&fx.run(&["run", "other"], "")), Some(0));
    let id = session_id_of(&first);
    let o = fx.run(&["run", "-s", &id, "third"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "A3\n");
    assert_eq!(fx.chats()[3].user_texts(), ["first", "second", "third"]);
    assert_eq!(messages(&first).len(), 6);

    // -s with an id that is not there, and a malformed one.
    let o = fx.run(&["run", "-s", "20200101T000000-00000000", "x"], "");
    assert_ne!(code(&o), Some(0));
    assert!(stdout(&o).is_empty());
    assert!(
        stderr(&o).contains("20200101T000000-00000000"),
        "{}",
        stderr(&o)
    );
    let o = fx.run(&["run", "-s", "../etc/passwd", "x"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert_eq!(fx.chats().len(), 4, "no model call for a bad -s");
}

#[test]
fn resumed_runs_send_a_byte_identical_prefix() {
    let fx = Fx::replying([
        Reply::text("answer one"),
        Reply::text("answer two"),
        Reply::text("answer three"),
    ]);
    assert_eq!(code(&fx.run(&["run", "one"], "")), Some(0));
    assert_eq!(code(&fx.run(&["run", "-c", "two"], "")), Some(0));
    assert_eq!(code(&fx.run(&["run", "-c", "three"], "")), Some(0));
    let chats = fx.chats();
    assert_eq!(chats.len(), 3);
    for pair in chats.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!(a.system_text(), b.system_text(), "system prompt changed");
        let (ra, rb) = (
            raw_array(&a.raw_body, "messages"),
            raw_array(&b.raw_body, "messages"),
        );
        // Request 2's messages start with exactly request 1's (bytes, as sent)…
        let open = &ra[..ra.len() - 1];
        assert!(rb.starts_with(open), "not append-only:\n{ra}\n---\n{rb}");
        // …followed by request 1's answer and the new user message.
        let a_n = a.messages().len();
        let b_msgs = b.messages();
        assert_eq!(b_msgs.len(), a_n + 2);
        assert_eq!(b_msgs[a_n]["role"], "assistant");
        assert!(b_msgs[a_n].to_string().contains("answer"));
        assert_eq!(b_msgs[a_n + 1]["role"], "user");
        assert_eq!(a.tools(), b.tools(), "tool definitions changed");
    }
}

/// Context files are re-read before every user turn: a file changed during
/// a session is used from the next turn on, with a one-line notice; an
/// unchanged one gives a byte-identical system prompt.
#[test]
fn a_context_file_changed_mid_session_is_used_from_the_next_turn_with_a_notice() {
    let fx = Fx::new();
    fx.sb.write("work/AGENTS.md", "Rule one.\n");
    let edit = json!({"command": "echo 'Rule two.' >> AGENTS.md"});
    fx.fake
        .push(Reply::text("first"))
        .push(Reply::tool_call("shell", edit))
        .push(Reply::text("edited"))
        .push(Reply::text("third"));
    let o = fx.run(&["--allow-shell"], "one\ntwo\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let chats = fx.chats();
    assert_eq!(chats.len(), 4);
    // Turn 1 and turn 2 (both steps) see the original file, byte for byte.
    assert_eq!(chats[0].system_text(), chats[1].system_text());
    assert_eq!(chats[1].system_text(), chats[2].system_text());
    assert!(!chats[2].system_text().contains("Rule two."));
    // Turn 3 sees the edit, and stderr said so once.
    assert!(chats[3].system_text().contains("Rule one.\nRule two."));
    let err = stderr(&o);
    let notices: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("context changed") && l.contains("AGENTS.md"))
        .collect();
    assert_eq!(notices.len(), 1, "{err}");
}

/// `/context` lists the context files with sizes and the `{ctx}` estimate,
/// on stderr, without calling the model.
#[test]
fn slash_context_lists_the_files_and_the_estimate() {
    let fx = Fx::new();
    fx.sb.write("work/AGENTS.md", "Use tabs.\n");
    fx.sb.write("work/style.context.md", "Short lines.\n");
    let o = fx.run(&[], "/context\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    let table: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("FILE"))
        .take(3)
        .collect();
    assert_eq!(table.len(), 3, "{err}");
    assert!(
        table[1].starts_with("AGENTS.md") && table[1].contains(" 10 "),
        "{err}"
    );
    assert!(table[2].starts_with("style.context.md"), "{err}");
    assert!(err.contains("context: ~"), "{err}");
    assert!(fx.chats().is_empty());
}
