//! Attachments and `!command` in batch runs and `run` (issue 29): `run
//! --image`, an oversized image refused before anything is sent, a model
//! that refuses images getting the turn without them (remembered), `@path`
//! lines in batch input (text files, a missing file, outside the root),
//! `!command` output in the next request, and `/status` as a JSON event.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{RecordedRequest, Refuse, Reply};
use serde_json::Value;

use crate::agent::*;
use crate::util::{json_lines, stderr, stdout};

/// A real 1×1 png, 67 bytes.
pub(crate) const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// [`PNG`] as the data URL OpenAI's `image_url` carries.
pub(crate) const PNG_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

/// The `image_url` URLs of a request's user messages, in order.
pub(crate) fn image_urls(r: &RecordedRequest) -> Vec<String> {
    r.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array().cloned())
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .map(|p| p["image_url"]["url"].as_str().unwrap().to_owned())
        .collect()
}

/// The image parts of the session file's user messages.
fn stored_images(fx: &Fx) -> Vec<Value> {
    messages(&fx.session())
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array().cloned())
        .flatten()
        .filter(|p| p["type"] == "image")
        .collect()
}

#[test]
fn run_image_sends_an_image_part_stored_in_the_session_and_shown_in_transcripts() {
    let fx = Fx::replying([Reply::text("a tiny picture")]);
    fx.sb.write("work/shots/tiny.png", PNG);
    let o = fx.run(
        &[
            "run",
            "--image",
            "shots/tiny.png",
            "what is in this picture?",
        ],
        "",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "a tiny picture\n");
    assert!(
        stderr(&o).contains("attached shots/tiny.png [image png 67 B]"),
        "{}",
        stderr(&o)
    );
    let sent = &fx.chats()[0];
    assert_eq!(image_urls(sent), [PNG_URL]);
    assert_eq!(
        sent.last_user_text().as_deref(),
        Some("what is in this picture?\n\nAttached: shots/tiny.png (image/png, 67 B)")
    );
    let stored = stored_images(&fx);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["media_type"], "image/png");
    assert_eq!(
        format!(
            "data:image/png;base64,{}",
            stored[0]["data"].as_str().unwrap()
        ),
        PNG_URL
    );
    let id = session_id_of(&fx.session());
    let show = fx.run(&["sessions", "show", &id], "");
    assert!(
        stdout(&show).contains("Attached: shots/tiny.png (image/png, 67 B)\n[image png 67 B]"),
        "{}",
        stdout(&show)
    );

    // Not an image: refused before anything is sent.
    fx.sb.write("work/notes.txt", "plain text");
    let o = fx.run(&["run", "--image", "notes.txt", "look"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot attach notes.txt: it is not a png, jpeg, gif or webp image"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fx.chats().len(), 1);
}

#[test]
fn anthropic_gets_the_image_as_a_base64_image_block() {
    let fx = Fx::with(|c| c.set("provider", "anthropic"));
    fx.fake.push(Reply::text("seen"));
    fx.sb.write("work/tiny.png", PNG);
    let o = fx.run(&["run", "--image", "tiny.png", "and this?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let sent = &fx.chats()[0];
    assert!(sent.is_anthropic(), "{}", sent.path);
    let blocks = sent.messages()[0]["content"].as_array().cloned().unwrap();
    assert_eq!(
        blocks[0]["text"],
        "and this?\n\nAttached: tiny.png (image/png, 67 B)"
    );
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["source"]["type"], "base64");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
    assert_eq!(
        format!(
            "data:image/png;base64,{}",
            blocks[1]["source"]["data"].as_str().unwrap()
        ),
        PNG_URL
    );
}

#[test]
fn an_image_over_max_image_bytes_is_refused_before_anything_is_sent() {
    let fx = Fx::with(|c| c.merge_top_toml("[tools]\nmax_image_bytes = 66").unwrap());
    fx.sb.write("work/tiny.png", PNG);
    let o = fx.run(&["--json", "run", "--image", "tiny.png", "describe"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    let err = "cannot attach tiny.png: the image is 67 B (67 bytes), over tools.max_image_bytes (66 bytes); make it smaller or raise the limit";
    assert!(stderr(&o).contains(err), "{}", stderr(&o));
    let events = json_lines(&o.stdout);
    let errors: Vec<&Value> = events.iter().filter(|e| e["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["class"], "usage");
    assert!(fx.chats().is_empty(), "a request was sent");
    assert!(fx.session_files().is_empty(), "a session was written");
    // The same through `@` in a batch line.
    let o = fx.run(&[], "what is @tiny.png\n");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("over tools.max_image_bytes"),
        "{}",
        stderr(&o)
    );
    assert!(fx.chats().is_empty());
}

#[test]
fn an_image_counts_compaction_image_tokens_toward_the_trigger() {
    // Window 8192: automatic compaction from ~6144 tokens. A short first
    // turn is far below; the image's budget alone takes the second over.
    let run = |image_tokens: u64| {
        let fx = Fx::with(|c| {
            c.set("context_window", 8192)
                .merge_model_toml(&format!(
                    "compaction.keep_turns = 1\ncompaction.image_tokens = {image_tokens}"
                ))
                .unwrap()
        });
        fx.fake
            .set_summarizer(|_| Reply::text("## Active goal\nlook at a picture"));
        fx.sb.write("work/tiny.png", PNG);
        let o = fx.run(&["--json"], "hello\nwhat is @tiny.png\n");
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        json_lines(&o.stdout)
            .into_iter()
            .filter(|e| e["type"] == "compaction")
            .count()
    };
    assert_eq!(
        run(6000),
        1,
        "the image's budget did not trigger a compaction"
    );
    assert_eq!(run(100), 0);
}

#[test]
fn a_model_that_refuses_images_gets_the_turn_without_them_once_and_remembers() {
    let fx = Fx::replying([Reply::text("I cannot see images"), Reply::text("second")]);
    fx.fake.refuse_parameters(Refuse {
        images: true,
        ..Default::default()
    });
    fx.sb.write("work/tiny.png", PNG);
    let o = fx.run(&["run", "--image", "tiny.png", "what is this?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "I cannot see images\n");
    assert!(
        stderr(&o).contains("fake-model does not accept images (")
            && stderr(&o).contains("sending the turn again without them"),
        "{}",
        stderr(&o)
    );
    // Refused once (llama-server's 500 is not retried as a server error),
    // then the same turn without the image, a note in its place.
    assert_eq!(fx.fake.refusals(), 1);
    let chats = fx.chats();
    assert_eq!(chats.len(), 2, "{chats:#?}");
    assert_eq!(image_urls(&chats[0]), [PNG_URL]);
    assert!(image_urls(&chats[1]).is_empty());
    assert!(
        chats[1]
            .all_text()
            .contains("[image not sent: this model does not accept images]"),
        "{}",
        chats[1].raw_body
    );
    // The same turn: the typed text and its `Attached:` line as before.
    let text_part = |r: &RecordedRequest| r.messages().last().unwrap()["content"][0].clone();
    assert_eq!(text_part(&chats[0]), text_part(&chats[1]));
    // The session file keeps the image (lossless).
    assert_eq!(stored_images(&fx).len(), 1);
    // Remembered: the next run sends no image and is not refused; the
    // effective request says so too.
    let id = session_id_of(&fx.session());
    let o = fx.run(&["run", "-c", "and now?"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.fake.refusals(), 1);
    assert!(image_urls(&fx.chats()[2]).is_empty());
    let shown = fx.run(&["sessions", "show", &id, "--effective", "--json"], "");
    assert!(!stdout(&shown).contains("image_url"), "{}", stdout(&shown));
    let limits = std::fs::read_to_string(fx.sb.data.join("limits.json")).unwrap();
    assert!(limits.contains("\"no_images\": true"), "{limits}");
}

#[test]
fn batch_lines_attach_files_inside_the_project_and_refuse_others() {
    let fx = Fx::replying([Reply::text("read it")]);
    fx.sb.write("work/src/notes.md", "the port is 8443\n");
    fx.sb.write("outside.txt", "not for the model");
    let o = fx.run(
        &[],
        "summarize @src/notes.md, and tell bob@example.com \\@here\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("attached src/notes.md (17 B)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some(
            "summarize @src/notes.md, and tell bob@example.com @here\n\nAttached: src/notes.md\nthe port is 8443\n"
        )
    );

    // A missing file, and one outside the root: errors, nothing sent.
    for (line, err) in [
        ("look at @nope.md\n", "cannot attach @nope.md: no such file"),
        (
            "look at @../outside.txt\n",
            "is outside the project root, and only the REPL can ask about that",
        ),
    ] {
        let o = fx.run(&[], line);
        assert_eq!(code(&o), Some(2), "{line}: {}", stderr(&o));
        assert!(stderr(&o).contains(err), "{line}: {}", stderr(&o));
    }
    assert_eq!(fx.chats().len(), 1);
    assert_eq!(fx.session_files().len(), 1);
}

#[test]
fn batch_command_output_goes_ahead_of_the_next_message_and_status_is_one_event() {
    let fx = Fx::replying([Reply::text("it said hello"), Reply::text("fine")]);
    // The provider key is set for eonyx; the command runs without it.
    let mut cmd = fx.cmd(&["--json"]);
    cmd.env("OPENAI_API_KEY", "sk-e2e-not-for-commands");
    let o = run_with_stdin(
        cmd,
        "!echo hello-from-sh; echo \"key=$OPENAI_API_KEY\"; exit 3\n!\nwhat did it print?\nand again\n/status\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let events: Vec<Value> = json_lines(&o.stdout)
        .into_iter()
        .filter(|e| e["type"] != "text")
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session",
            "command",
            "turn_started",
            "turn_completed",
            "turn_started",
            "turn_completed",
            "status"
        ],
        "{events:#?}"
    );
    let cmd = &events[1];
    assert_eq!(cmd["outcome"], "exit status: 3");
    assert_eq!(cmd["is_error"], true);
    // With --json the output goes to stderr; stdout holds only events.
    assert!(stderr(&o).contains("hello-from-sh\n"), "{}", stderr(&o));
    // The model was not called for it; the next request holds it, ahead
    // of the user's message.
    let chats = fx.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(
        chats[0].user_texts(),
        [
            "The user ran a shell command and saw its output:\n$ echo hello-from-sh; echo \"key=$OPENAI_API_KEY\"; exit 3\nexit status: 3\nhello-from-sh\nkey=",
            "what did it print?"
        ]
    );
    // `/status` as one event: the window, tokens, cache and session.
    let st = &events[6];
    assert_eq!(st["model"], "fake");
    assert_eq!(st["model_name"], "fake-model");
    assert_eq!(st["window"], 32768);
    assert!(
        st["window_source"]
            .as_str()
            .unwrap()
            .starts_with("configured in "),
        "{st}"
    );
    assert_eq!(st["usage"]["requests"], 2);
    let usage = &st["usage"];
    let (prompt, cached) = (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["cached_tokens"].as_u64().unwrap(),
    );
    assert!(cached > 0 && cached < prompt, "{st}");
    let hit = usage["cache_hit_percent"].as_f64().unwrap();
    assert!(
        (hit - cached as f64 * 100.0 / prompt as f64).abs() < 0.1,
        "{st}"
    );
    assert_eq!(st["session"], events[0]["id"]);
    assert_eq!(st["compactions"], 0);
    assert!(
        st["path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{}.jsonl", events[0]["id"].as_str().unwrap())),
        "{st}"
    );
}

#[test]
fn command_output_is_cut_at_the_cap_and_key_values_are_redacted() {
    const KEY: &str = "sk-e2e-0123456789abcdef";
    let fx = Fx::with(|c| c.merge_top_toml("[tools]\noutput_cap_bytes = 64").unwrap());
    fx.fake.push(Reply::text("ok"));
    fx.sb.write("work/.env", format!("OPENAI_API_KEY={KEY}\n"));
    let mut cmd = fx.cmd(&[]);
    cmd.env("OPENAI_API_KEY", KEY);
    let o = run_with_stdin(cmd, "!cat .env; seq 1 100\nwhat now?\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    // The user sees all of it on stdout, before the answer.
    assert!(stdout(&o).contains("\n99\n100\n"), "{}", stdout(&o));
    assert!(stdout(&o).ends_with("ok\n"), "{}", stdout(&o));
    assert!(
        stderr(&o)
            .contains("exit status: 0; the model gets the command and its output (64 of its "),
        "{}",
        stderr(&o)
    );
    let sent = fx.chats()[0].user_texts();
    let ran = &sent[0];
    assert!(!ran.contains(KEY), "{ran}");
    assert!(
        ran.starts_with("The user ran a shell command and saw its output:\n$ cat .env; seq 1 100\nexit status: 0\nOPENAI_API_KEY=[redacted: OPENAI_API_KEY]\n"),
        "{ran}"
    );
    assert!(
        ran.contains("left out (tools.output_cap_bytes)]") && !ran.contains("\n100"),
        "{ran}"
    );
    assert_eq!(sent[1], "what now?");
}
