//! A reply the provider blocks or refuses, on each wire, through the real
//! binary (docs/providers.md#blocked-replies): said on stderr with the
//! provider's own reason, kept in the session marked `blocked`, and `run`
//! and batch runs exit 1; the REPL says it and goes on. An empty reply
//! gets a one-line notice.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use camino::Utf8Path;
use eonyx_tests::{FakeConfig, FakeServer, Reply};

use crate::agent::{Fx, code, messages, run_with_stdin};
use crate::agent_repl::start_new_repl;
use crate::util::{Sandbox, json_lines, stderr, stdout};

#[derive(Debug, Clone, Copy)]
enum Wire {
    Chat,
    Anthropic,
    Responses,
}

impl Wire {
    /// The reason as this wire's server gives it.
    fn reason(self) -> &'static str {
        match self {
            Wire::Anthropic => "refusal",
            Wire::Chat | Wire::Responses => "content_filter",
        }
    }
}

/// A project on the fake server speaking `wire`.
fn project(wire: Wire) -> Fx {
    let sb = Sandbox::new();
    sb.write("work/eonyx.json", "{}\n");
    let fake = FakeServer::start();
    let config = match wire {
        Wire::Anthropic => FakeConfig::anthropic(&fake.base_url()),
        Wire::Chat => FakeConfig::openai(&fake.base_url()),
        Wire::Responses => FakeConfig::openai(&fake.base_url()).set("api", "responses"),
    };
    config
        .set("retries", 0)
        .write(Utf8Path::from_path(&sb.config).unwrap())
        .unwrap();
    Fx { sb, fake }
}

#[test]
fn a_blocked_reply_is_said_with_its_reason_kept_and_run_exits_1_on_each_wire() {
    for wire in [Wire::Chat, Wire::Anthropic, Wire::Responses] {
        let fx = project(wire);
        fx.fake.push(Reply::blocked(""));
        let o = fx.run(&["run", "tell me something forbidden"], "");
        let err = stderr(&o);
        assert_eq!(code(&o), Some(1), "{wire:?}: {err}");
        assert!(
            err.contains("the provider blocked the model's reply")
                && err.contains(&format!("reason: {}", wire.reason())),
            "{wire:?}: {err}"
        );
        assert_eq!(stdout(&o), "", "{wire:?}");
        // Kept in the session, marked with the provider's reason.
        let saved = messages(&fx.session());
        let last = saved.last().unwrap();
        assert_eq!(last["role"], "assistant", "{wire:?}: {saved:?}");
        assert_eq!(last["blocked"], wire.reason(), "{wire:?}: {last}");

        // --json: the turn with its finish reason, then the error event.
        fx.fake.push(Reply::blocked("Partial"));
        let o = fx.run(&["run", "--json", "-c", "again"], "");
        assert_eq!(code(&o), Some(1), "{wire:?}: {}", stderr(&o));
        let events = json_lines(&o.stdout);
        let done = events
            .iter()
            .find(|e| e["type"] == "turn_completed")
            .unwrap_or_else(|| panic!("{wire:?}: {events:?}"));
        assert_eq!(done["finish_reason"], "content_filter", "{wire:?}");
        let error = events.iter().find(|e| e["type"] == "error").unwrap();
        assert_eq!(error["class"], "blocked", "{wire:?}: {error}");
        // What was streamed before the block is kept too.
        let saved = messages(&fx.session());
        let last = saved.last().unwrap();
        assert_eq!(last["blocked"], wire.reason(), "{wire:?}: {last}");
        assert!(last.to_string().contains("Partial"), "{wire:?}: {last}");

        // The next turn goes on from it: the blocked marker is never sent.
        fx.fake.push(Reply::text("fine"));
        let o = fx.run(&["run", "-c", "something else"], "");
        assert_eq!(code(&o), Some(0), "{wire:?}: {}", stderr(&o));
        let last_request = fx.chats().pop().unwrap();
        assert!(
            !last_request.body.to_string().contains("\"blocked\""),
            "{wire:?}"
        );
    }
}

#[test]
fn a_batch_stops_at_a_blocked_reply_and_exits_1() {
    let fx = project(Wire::Chat);
    fx.fake
        .push(Reply::text("first answer"))
        .push(Reply::blocked(""))
        .push(Reply::text("never asked"));
    let o = run_with_stdin(fx.cmd(&[]), "one\ntwo\nthree\n");
    let err = stderr(&o);
    assert_eq!(code(&o), Some(1), "{err}");
    assert!(err.contains("reason: content_filter"), "{err}");
    assert_eq!(stdout(&o), "first answer\n");
    assert_eq!(
        fx.chats().len(),
        2,
        "the batch stopped at the blocked reply"
    );
}

#[test]
fn an_empty_reply_gets_a_one_line_notice() {
    for wire in [Wire::Chat, Wire::Anthropic, Wire::Responses] {
        let fx = project(wire);
        fx.fake.push(Reply::text(""));
        let o = fx.run(&["run", "say nothing"], "");
        let err = stderr(&o);
        assert_eq!(code(&o), Some(0), "{wire:?}: {err}");
        assert_eq!(
            err.matches("the model's reply was empty").count(),
            1,
            "{wire:?}: {err}"
        );
        assert_eq!(stdout(&o), "", "{wire:?}");
    }
}

#[test]
fn the_repl_says_a_blocked_reply_and_goes_on() {
    let fx = project(Wire::Anthropic);
    fx.fake
        .push(Reply::blocked(""))
        .push(Reply::text("back to normal"));
    let tmux = start_new_repl(&fx);
    tmux.send_until(
        "something refused",
        "the blocked reply said",
        "the provider blocked the model's reply (reason: refusal)",
        2,
    );
    tmux.send_until("something fine", "the next answer", "back to normal", 3);
    // The model received the conversation with the blocked turn in it.
    let asked = fx.chats();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        asked[1].user_texts(),
        ["something refused", "something fine"]
    );
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

#[test]
fn a_goal_pauses_at_a_blocked_reply_and_run_exits_1() {
    let fx = project(Wire::Chat);
    fx.fake
        .push(Reply::blocked(""))
        .push(Reply::text("never asked"));
    let o = fx.run(&["run", "--goal", "write the forbidden thing"], "");
    let err = stderr(&o);
    assert_eq!(code(&o), Some(1), "{err}");
    assert!(err.contains("reason: content_filter"), "{err}");
    assert_eq!(
        fx.chats().len(),
        1,
        "no continuation after the blocked reply"
    );
    let goal = crate::agent::records(&fx.session())
        .into_iter()
        .rfind(|r| r["type"] == "goal")
        .unwrap();
    assert_eq!(goal["status"], "paused", "{goal}");
}
