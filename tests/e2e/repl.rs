//! The REPL's line editor in a real terminal (tmux): history (Up, across a
//! restart, shared file, NO_HISTORY), Tab completion, a bracketed paste as
//! one message, Alt-Enter and `\` continuation, Ctrl-C on a typed and on an
//! empty line. Every test also checks that no escape sequence reached a
//! request or the session file.
#![allow(clippy::unwrap_used)] // test code: a failure is a test failure

use std::path::Path;
use std::time::Duration;

use eonyx_tests::Reply;

use crate::agent::{Fx, assert_consistent, messages};
use crate::agent_repl::{Tmux, prompt_count, start_new_repl, start_repl};
use serde_json::json;

/// Wait until the editor shows an empty prompt: keys sent before it would
/// reach a terminal in cooked mode (where Ctrl-C is a signal and Ctrl-D an
/// end of file), not the editor.
pub(crate) fn idle(tmux: &Tmux, what: &str) -> String {
    tmux.wait_pane(what, |p| p.lines().last_non_empty().ends_with("%} >"))
}

/// Type text literally, no Enter.
pub(crate) fn type_text(tmux: &Tmux, text: &str) {
    let st = tmux
        .cmd()
        .args(["send-keys", "-t", "repl", "-l", text])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Neither the requests the fake server got nor the session files hold an
/// escape character.
pub(crate) fn assert_no_escapes(fx: &Fx) {
    for (i, r) in fx.chats().iter().enumerate() {
        assert!(
            !r.raw_body.contains('\u{1b}') && !r.raw_body.contains("\\u001b"),
            "request {i} carries an escape sequence: {}",
            r.raw_body
        );
    }
    for f in fx.session_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains("\\u001b"),
            "{} carries an escape sequence:\n{text}",
            f.display()
        );
    }
}

fn history_file(fx: &Fx) -> std::path::PathBuf {
    fx.sb.root.join("state/eonyx/history")
}

fn user_texts(path: &Path) -> Vec<String> {
    messages(path)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(crate::agent::content)
        .collect()
}

#[test]
fn up_recalls_inputs_unchanged_across_a_restart_and_tab_completes_commands() {
    let fx = Fx::replying([
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply::text("third answer"),
        Reply::text("fourth answer"),
        Reply::text("fifth answer"),
        Reply::text("sixth answer"),
    ]);
    let tmux = start_repl(&fx, |env, bin| {
        format!(
            "{env} '{bin}' --new; echo EONYX_EXIT=$?; {env} '{bin}'; echo EONYX_EXIT2=$?; \
             {env} NO_HISTORY=1 '{bin}'; echo EONYX_EXIT3=$?; sleep 60"
        )
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);

    // Up with no history yet does nothing; no `ESC [ A` gets typed.
    tmux.keys(&["Up"]);
    tmux.send("what is up?");
    tmux.wait_pane("the first answer", |p| p.contains("first answer"));
    idle(&tmux, "the prompt after the first answer");
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("what is up?")
    );

    // Up recalls it; sent unchanged.
    tmux.keys(&["Up"]);
    tmux.wait_pane("the recalled line", |p| {
        p.lines().last_non_empty().ends_with("> what is up?")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the second answer", |p| p.contains("second answer"));
    idle(&tmux, "the prompt after the second answer");
    assert_eq!(fx.chats().len(), 2);
    assert_eq!(
        fx.chats()[1].last_user_text().as_deref(),
        Some("what is up?")
    );

    // Ctrl-R finds it by a piece of it.
    tmux.send("something else");
    tmux.wait_pane("the third answer", |p| p.contains("third answer"));
    idle(&tmux, "the prompt after the third answer");
    tmux.keys(&["C-r"]);
    type_text(&tmux, "is u");
    tmux.wait_pane("the search hit", |p| {
        p.contains("what is up?") && p.contains("reverse")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the fourth answer", |p| p.contains("fourth answer"));
    idle(&tmux, "the prompt after the fourth answer");
    assert_eq!(
        fx.chats()[3].last_user_text().as_deref(),
        Some("what is up?")
    );

    // Tab completes a slash command.
    type_text(&tmux, "/he");
    tmux.keys(&["Tab"]);
    tmux.wait_pane("the completed command", |p| {
        p.lines().last_non_empty().ends_with("> /help")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the help", |p| p.contains("switch to another session"));
    idle(&tmux, "the prompt after the help");
    type_text(&tmux, "/comp");
    tmux.keys(&["Tab"]);
    tmux.wait_pane("the completed command", |p| {
        p.lines().last_non_empty().ends_with("> /compact")
    });
    tmux.keys(&["C-u"]);
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));

    // History survives the restart (and is private).
    let file = history_file(&fx);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        saved, "#V2\nsomething else\nwhat is up?\n/help\n/exit\n",
        "duplicates collapse to the newest"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    tmux.wait_pane("the resumed REPL", |p| p.contains("resumed session 1"));
    idle(&tmux, "the resumed prompt");
    tmux.keys(&["Up", "Up", "Up"]);
    tmux.wait_pane("the line from the last run", |p| {
        p.lines().last_non_empty().ends_with("> what is up?")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the fifth answer", |p| p.contains("fifth answer"));
    idle(&tmux, "the prompt after the fifth answer");
    assert_eq!(
        fx.chats()[4].last_user_text().as_deref(),
        Some("what is up?")
    );
    tmux.keys(&["C-d"]);
    tmux.wait_pane("the exit on Ctrl-D", |p| p.contains("EONYX_EXIT2=0"));
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        saved, "#V2\nsomething else\n/help\n/exit\nwhat is up?\n",
        "newest last, once"
    );

    // NO_HISTORY: nothing is read or written.
    tmux.wait_pane("the third REPL", |p| {
        p.matches("resumed session 1").count() == 2
    });
    idle(&tmux, "the third prompt");
    tmux.send("not for the file");
    tmux.wait_pane("the sixth answer", |p| p.contains("sixth answer"));
    idle(&tmux, "the prompt after the sixth answer");
    tmux.keys(&["C-d"]);
    tmux.wait_pane("the third exit", |p| p.contains("EONYX_EXIT3=0"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), saved);

    assert_eq!(
        user_texts(&fx.session()),
        [
            "what is up?",
            "what is up?",
            "something else",
            "what is up?",
            "what is up?",
            "not for the file"
        ]
    );
    assert_no_escapes(&fx);
}

#[test]
fn a_paste_is_one_message_lines_continue_and_ctrl_c_clears_then_exits_130() {
    let fx = Fx::replying([
        Reply::text("got the paste"),
        Reply::text("got the continued lines"),
        Reply::text("got the clean line"),
    ]);
    let tmux = start_new_repl(&fx);

    // A bracketed paste of two lines: one message, marked as two lines.
    let st = tmux
        .cmd()
        .args([
            "set-buffer",
            "-b",
            "paste",
            "first pasted line\nsecond pasted line",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let st = tmux
        .cmd()
        .args(["paste-buffer", "-p", "-b", "paste", "-t", "repl"])
        .status()
        .unwrap();
    assert!(st.success());
    tmux.wait_pane("the lines marker", |p| p.contains("[2 lines]"));
    assert!(fx.chats().is_empty(), "the paste was sent before Enter");
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the answer", |p| p.contains("got the paste"));
    idle(&tmux, "the prompt after the paste");
    assert_eq!(fx.chats().len(), 1);
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("first pasted line\nsecond pasted line")
    );

    // Alt-Enter and a trailing `\` continue the line; editing keys edit.
    type_text(&tmux, "one");
    tmux.keys(&["M-Enter"]);
    type_text(&tmux, "two \\");
    tmux.keys(&["Enter"]);
    type_text(&tmux, "thre");
    tmux.keys(&["Left", "Left", "Right", "Right", "Home", "End"]);
    type_text(&tmux, "e");
    tmux.wait_pane("the third line", |p| p.contains("[3 lines]"));
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the answer", |p| p.contains("got the continued lines"));
    idle(&tmux, "the prompt after the continued lines");
    assert_eq!(
        fx.chats()[1].last_user_text().as_deref(),
        Some("one\ntwo \nthree")
    );

    // Ctrl-C on a half-typed line clears it; the REPL stays.
    type_text(&tmux, "half typed");
    tmux.wait_pane("the typed text", |p| p.contains("half typed"));
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the cleared line", |p| {
        p.lines().last_non_empty().ends_with("%} >")
    });
    tmux.send("clean line");
    tmux.wait_pane("the answer", |p| p.contains("got the clean line"));
    assert_eq!(
        fx.chats()[2].last_user_text().as_deref(),
        Some("clean line")
    );

    // Typing while an answer streams: not echoed into the answer, kept for
    // the next prompt.
    idle(&tmux, "the prompt after the clean line");
    fx.fake.push(
        Reply::text("slow words stream in here").with_chunk_delay(Duration::from_millis(200)),
    );
    fx.fake.push(Reply::text("got the typeahead"));
    tmux.send("stream please");
    tmux.wait_pane("the answer streaming", |p| p.contains("slow words"));
    type_text(&tmux, "typed ahead");
    let pane = tmux.wait_pane("the typeahead at the prompt", |p| {
        p.lines().last_non_empty().ends_with("%} > typed ahead")
    });
    assert!(
        pane.lines()
            .any(|l| l.trim_end() == "slow words stream in here"),
        "the answer was garbled:\n{pane}"
    );
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the answer", |p| p.contains("got the typeahead"));
    assert_eq!(
        fx.chats()[4].last_user_text().as_deref(),
        Some("typed ahead")
    );

    // Ctrl-C on an empty line exits 130, the session consistent.
    idle(&tmux, "the prompt after the typeahead");
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=130"));
    assert_eq!(
        user_texts(&fx.session()),
        [
            "first pasted line\nsecond pasted line",
            "one\ntwo \nthree",
            "clean line",
            "stream please",
            "typed ahead"
        ]
    );
    assert_eq!(fx.chats().len(), 5);
    assert_no_escapes(&fx);
}

#[test]
fn vi_mode_edits_with_vi_keys_and_ctrl_c_at_a_question_stops_the_turn() {
    let fx = Fx::new();
    fx.sb
        .write("work/eonyx.json", r#"{"repl": {"edit_mode": "vi"}}"#);
    fx.fake.push(Reply::tool_call(
        "shell",
        json!({"command": "touch never.txt"}),
    ));
    let tmux = start_new_repl(&fx);

    // The question is read by the same editor; Ctrl-C there denies and
    // stops the turn, and the session stays consistent.
    tmux.send("make a file");
    tmux.wait_pane("the question", |p| p.contains("[a]lways"));
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the interrupt", |p| p.contains("interrupted"));
    idle(&tmux, "the prompt after the interrupt");
    assert!(!fx.sb.work.join("never.txt").exists());
    assert_eq!(fx.chats().len(), 1, "the turn went on after Ctrl-C");
    assert_consistent(&fx.session());

    // vi keys: Escape, 0, i inserts at the start.
    fx.fake.push(Reply::text("vi works"));
    type_text(&tmux, "world");
    tmux.keys(&["Escape"]);
    type_text(&tmux, "0ihello ");
    tmux.keys(&["Enter"]);
    tmux.wait_pane("the answer", |p| p.contains("vi works"));
    idle(&tmux, "the prompt after the vi line");
    assert_eq!(
        fx.chats()[1].last_user_text().as_deref(),
        Some("hello world")
    );
    // A command of several lines is shown once above a one-line question.
    fx.fake
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch multi1.txt\ntouch multi2.txt"}),
        ))
        .push(Reply::text("left alone"));
    tmux.send("run two lines");
    tmux.wait_pane("the question", |p| {
        p.contains("allow the above? [y]es") && p.contains("touch multi2.txt")
    });
    tmux.send("n");
    tmux.wait_pane("the answer", |p| p.contains("left alone"));
    idle(&tmux, "the prompt after the denial");
    assert!(!fx.sb.work.join("multi1.txt").exists());
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_consistent(&fx.session());
    assert_no_escapes(&fx);
}

pub(crate) trait LastNonEmpty<'a> {
    fn last_non_empty(self) -> &'a str;
}

impl<'a, I: DoubleEndedIterator<Item = &'a str>> LastNonEmpty<'a> for I {
    fn last_non_empty(mut self) -> &'a str {
        self.rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim_end()
    }
}
