//! `/model [KEY] [EFFORT]` in batch runs (SPEC section 21; docs/models.md, section
//! "Reasoning models and the Responses API"): the model and the effort the
//! fake receives change from the next request on, the window follows the
//! new model, the session file records the switch and `eonyx run -c`
//! continues with it; unknown keys and efforts are declined clearly and
//! the batch goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::Value;

use crate::agent::{Fx, code, records};
use crate::util::{assert_noticed, notices, stderr};

/// The fake's model (`fake`, 32768 tokens) plus `big` (`big-model`, a
/// 100000-token window with a compaction override of its own).
fn two_models() -> Fx {
    let fx = Fx::new();
    let base = fx.fake.base_url();
    let path = fx.sb.config.join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[models.big]\nprovider = \"openai\"\nbase_url = \"{base}\"\nname = \"big-model\"\ncontext_window = 100000\nmax_output_tokens = 512\nretries = 0\n\n[models.big.compaction]\nthreshold_percent = 50\n"
    ));
    std::fs::write(&path, text).unwrap();
    fx
}

fn effort(r: &RecordedRequest) -> Option<&str> {
    r.body.get("reasoning_effort").and_then(Value::as_str)
}

fn model_records(fx: &Fx) -> Vec<Value> {
    records(&fx.session())
        .into_iter()
        .filter(|r| r["type"] == "model")
        .collect()
}

#[test]
fn model_switches_mid_batch_and_run_continue_keeps_it() {
    let fx = two_models();
    fx.fake
        .push_all((1..=5).map(|i| Reply::text(format!("answer {i}"))));
    let o = fx.run(
        &[],
        "/model\nfirst question\n/model big high\nsecond question\n/model\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "model fake (fake-model) · effort not sent (the server's default) · window 32768 tokens"
        ),
        "{err}"
    );
    assert!(err.contains("models: big, fake"), "{err}");
    assert!(
        err.contains("switched: model big (big-model) · effort high · window 100000 tokens"),
        "{err}"
    );
    // `/model` after the switch shows it.
    assert_eq!(
        err.matches("model big (big-model) · effort high").count(),
        2,
        "{err}"
    );
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].model(), Some("fake-model"));
    assert_eq!(effort(&reqs[0]), None);
    assert_eq!(reqs[1].model(), Some("big-model"));
    assert_eq!(effort(&reqs[1]), Some("high"));
    // The new model's output cap, and the same conversation.
    assert_eq!(reqs[1].max_tokens(), Some(512));
    assert_eq!(reqs[1].user_texts(), ["first question", "second question"]);
    let switches = model_records(&fx);
    assert_eq!(switches.len(), 1, "{switches:?}");
    assert_eq!(switches[0]["key"], "big");
    assert_eq!(switches[0]["reasoning_effort"], "high");

    // `run -c` goes on with the switched model and effort.
    let o = fx.run(&["run", "-c", "third question"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[2].model(), Some("big-model"));
    assert_eq!(effort(&reqs[2]), Some("high"));

    // Switching back drops the effort chosen for `big` (`fake` has none);
    // the next continuation follows that too.
    let o = fx.run(&["-c"], "/model fake\nfourth question\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let o = fx.run(&["run", "-c", "fifth question"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs[3..] {
        assert_eq!(r.model(), Some("fake-model"));
        assert_eq!(effort(r), None);
    }
    assert_eq!(model_records(&fx).len(), 2);

    // `--model` given with `-c` wins over the recorded switch.
    fx.fake.push(Reply::text("answer 6"));
    let o = fx.run(&["run", "-c", "--model", "big", "sixth question"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(fx.agent_requests()[5].model(), Some("big-model"));
}

#[test]
fn an_effort_alone_switches_the_effort_and_a_switch_before_the_first_message_is_kept() {
    let fx = two_models();
    fx.fake
        .push_all((1..=3).map(|i| Reply::text(format!("answer {i}"))));
    // Before the session's first message: no file yet, the switch is kept
    // for it.
    let o = fx.run(&[], "/model big\nhello\n/model low\nagain\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("switched: model big (big-model) · effort low"),
        "{}",
        stderr(&o)
    );
    let recs = records(&fx.session());
    assert_eq!(recs[0]["type"], "session");
    assert_eq!(recs[1]["type"], "model", "{recs:?}");
    assert_eq!(recs[1]["key"], "big");
    assert!(recs[1].get("reasoning_effort").is_none());
    let reqs = fx.agent_requests();
    assert_eq!(reqs[0].model(), Some("big-model"));
    assert_eq!(effort(&reqs[0]), None);
    assert_eq!(reqs[1].model(), Some("big-model"));
    assert_eq!(effort(&reqs[1]), Some("low"));
    let o = fx.run(&["run", "-c", "once more"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let last = fx.agent_requests().pop().unwrap();
    assert_eq!(last.model(), Some("big-model"));
    assert_eq!(effort(&last), Some("low"));
    // `sessions show` marks the switches.
    let path = fx.session();
    let id = path.file_stem().unwrap().to_str().unwrap();
    let o = fx.run(&["sessions", "show", id], "");
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(shown.contains("[model switched to big · "), "{shown}");
    assert!(
        shown.contains("[model switched to big, effort low · "),
        "{shown}"
    );
}

#[test]
fn unknown_models_and_efforts_are_declined_and_the_batch_goes_on() {
    let fx = two_models();
    fx.fake.push(Reply::text("still here"));
    let o = fx.run(
        &["--json"],
        "/model nope\n/model big extreme\n/model big high more\nhello\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let notices = notices(&o.stdout);
    for said in [
        "unknown model \"nope\" for /model; configured models: big, fake",
        "unknown reasoning effort \"extreme\"; use one of none, minimal, low, medium, high, xhigh",
        "usage: /model [KEY] [EFFORT]",
    ] {
        assert_noticed(&notices, said);
    }
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].model(), Some("fake-model"));
    assert_eq!(effort(&reqs[0]), None);
    assert!(model_records(&fx).is_empty());
}

#[test]
fn repl_switches_with_model_and_resuming_keeps_it() {
    use crate::agent_repl::{prompt_count, start_repl};
    let fx = two_models();
    fx.fake.push(Reply::text("answered by the big one"));
    // A fresh session, then the REPL's resume of it.
    let tmux = start_repl(&fx, |env, bin| {
        format!(
            "{env} '{bin}' --new; echo EONYX_EXIT=$?; {env} '{bin}'; echo EONYX_EXIT2=$?; sleep 60"
        )
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    tmux.send_until(
        "/model big high",
        "the switch",
        "switched: model big (big-model) · effort high · window 100000 tokens",
        2,
    );
    tmux.send_until("hello", "the answer", "answered by the big one", 3);
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    tmux.wait_pane("the resumed prompt", |p| prompt_count(p) >= 4);
    tmux.send("/model");
    tmux.wait_pane("the model shown", |p| {
        p.matches("model big (big-model) · effort high").count() >= 2
    });
    tmux.send("/exit");
    tmux.wait_pane("the second exit", |p| p.contains("EONYX_EXIT2=0"));
    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].model(), Some("big-model"));
    assert_eq!(effort(&reqs[0]), Some("high"));
}
