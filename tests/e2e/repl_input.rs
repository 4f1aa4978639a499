//! The REPL's everyday inputs in a real terminal (tmux, issue 29): Tab
//! completes an `@` path and the file reaches the model, an email is left
//! alone, a missing file keeps the line in the editor, `@image.png` sends an
//! image part, `!command` shows its output without calling the model and
//! the next request holds it, and `/status` shows the window, the session
//! and the cache figures. Assertions are on what the fake server received.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;

use crate::agent::*;
use crate::agent_repl::{prompt_count, start_repl};
use crate::attach::{PNG, PNG_URL, image_urls};
use crate::repl::{LastNonEmpty as _, assert_no_escapes, idle, type_text};

#[test]
fn tab_completes_an_at_path_whose_text_reaches_the_model_and_images_go_as_parts() {
    let fx = Fx::replying([Reply::text("noted the port"), Reply::text("a tiny picture")]);
    fx.sb
        .write("work/docs/port-notes.md", "the staging port is 8443\n");
    fx.sb.write("work/docs/other.md", "other");
    fx.sb.write("work/shot.png", PNG);
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    idle(&tmux, "the prompt");

    type_text(&tmux, "summarize @do");
    tmux.keys(&["Tab"]);
    tmux.wait_pane("the completed directory", |p| {
        p.lines().last_non_empty().ends_with("> summarize @docs/")
    });
    type_text(&tmux, "po");
    tmux.keys(&["Tab"]);
    tmux.wait_pane("the completed file", |p| {
        p.lines()
            .last_non_empty()
            .ends_with("> summarize @docs/port-notes.md")
    });
    type_text(&tmux, "and mail bob@example.com");
    tmux.keys(&["Enter"]);
    let pane = tmux.wait_pane("the answer", |p| p.contains("noted the port"));
    assert!(
        pane.contains("attached docs/port-notes.md (25 B)"),
        "{pane}"
    );
    idle(&tmux, "the prompt after the answer");
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some(
            "summarize @docs/port-notes.md and mail bob@example.com\n\nAttached: docs/port-notes.md\nthe staging port is 8443\n"
        )
    );

    // A missing file: nothing is sent and the line is back for editing.
    tmux.send("look at @nowhere.md please");
    let pane = tmux.wait_pane("the error and the line again", |p| {
        p.contains("cannot attach @nowhere.md: no such file")
            && p.lines()
                .last_non_empty()
                .ends_with("> look at @nowhere.md please")
    });
    assert_eq!(fx.chats().len(), 1, "{pane}");
    tmux.keys(&["C-u"]);

    // Outside the project root: asked once; "n" sends nothing.
    fx.sb.write("outside.txt", "from outside the project\n");
    tmux.send("and @../outside.txt");
    tmux.wait_pane("the question", |p| {
        p.contains("allow: send a file from outside the project: ")
            && p.lines().last_non_empty().ends_with("[a]lways:")
    });
    tmux.send("n");
    tmux.wait_pane("the refusal", |p| {
        p.contains("was not allowed")
            && p.lines()
                .last_non_empty()
                .ends_with("> and @../outside.txt")
    });
    assert_eq!(fx.chats().len(), 1);
    tmux.keys(&["C-u"]);

    tmux.send("what is in @shot.png");
    let pane = tmux.wait_pane("the second answer", |p| p.contains("a tiny picture"));
    assert!(
        pane.contains("attached shot.png [image png 67 B]"),
        "{pane}"
    );
    idle(&tmux, "the prompt after the picture");
    assert_eq!(image_urls(&fx.chats()[1]), [PNG_URL]);

    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_eq!(
        roles(&messages(&fx.session())),
        ["user", "assistant", "user", "assistant"]
    );
    assert_no_escapes(&fx);
}

#[test]
fn bang_runs_a_command_without_the_model_and_status_shows_window_session_and_cache() {
    let fx = Fx::replying([Reply::text("it printed the marker"), Reply::text("again")]);
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    idle(&tmux, "the prompt");

    // `!` alone does nothing.
    tmux.send("!");
    // The next prompt, not the first one before `!` was drawn: keys sent
    // before it would be lost between the two editor lines.
    tmux.wait_pane("the prompt after a lone !", |p| {
        prompt_count(p) >= 2 && p.lines().last_non_empty().ends_with("%} >")
    });
    tmux.send("!echo marker-$((40 + 2)); exit 4");
    let pane = tmux.wait_pane("the command's output", |p| {
        p.contains("\nmarker-42\n") && p.contains("exit status: 4; the model gets the command")
    });
    idle(&tmux, "the prompt after the command");
    assert!(fx.chats().is_empty(), "the model was called:\n{pane}");
    assert_eq!(fx.session_files().len(), 1, "the command is in the session");

    tmux.send("what did it print?");
    tmux.wait_pane("the answer", |p| p.contains("it printed the marker"));
    idle(&tmux, "the prompt after the answer");
    let sent = &fx.chats()[0];
    assert_eq!(
        sent.user_texts(),
        [
            "The user ran a shell command and saw its output:\n$ echo marker-$((40 + 2)); exit 4\nexit status: 4\nmarker-42",
            "what did it print?"
        ]
    );
    tmux.send("and now?");
    tmux.wait_pane("the second answer", |p| p.contains("again"));
    idle(&tmux, "the prompt after the second answer");

    tmux.send("/status");
    let pane = tmux.wait_pane("the status", |p| p.contains("file:"));
    let id = session_id_of(&fx.session());
    assert!(
        pane.contains("window:      32768 tokens (configured in "),
        "{pane}"
    );
    assert!(pane.contains(&format!("session:     {id} ")), "{pane}");
    assert!(
        pane.contains("model:       fake (fake-model) · openai · "),
        "{pane}"
    );
    let tokens = pane
        .lines()
        .find(|l| l.starts_with("tokens:"))
        .unwrap_or_else(|| panic!("{pane}"));
    assert!(
        tokens.contains("% cache hits) over 2 requests") && !tokens.contains("cached 0 "),
        "{tokens}"
    );
    assert_eq!(fx.chats().len(), 2, "/status called the model");

    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_no_escapes(&fx);
}
