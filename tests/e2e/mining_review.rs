//! Reviewing mined memories (docs/memory.md#review) through the real
//! binary: nothing reaches memory until accepted, rejected proposals never
//! return, `eonyx memory review` reads one answer a line, and `/memory
//! review` asks in the REPL and takes the flags in a batch and in ACP.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::{Fx, run_with_stdin};
use crate::mining_fixture::{extractor, mx, mx_extracting};
use crate::util::{json_lines, stderr, stdout};

#[test]
fn review_keeps_memory_unchanged_until_accepted_and_accepted_entries_name_their_source() {
    let fx = mx_extracting(
        "",
        json!([
            {"text": "We use pnpm, never npm", "scope": "project", "evidence_seq": 1},
            {"text": "Generated files are never edited by hand", "scope": "project", "evidence_seq": 999},
            {"text": "we use   PNPM, never npm", "scope": "project", "evidence_seq": 3},
        ]),
    );
    let id = fx.past_session("s", &["we use pnpm", "never npm", "ok"]);
    fx.fake.push(Reply::text("hi"));
    let out = fx.eonyx_ok(&["run", "--json", "hello"]);
    let events = json_lines(&out.stdout);
    let mined: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "memory_mined")
        .collect();
    assert_eq!(mined.len(), 1, "{events:#?}");
    assert_eq!(mined[0]["session"], id.as_str());
    assert_eq!(mined[0]["proposals"], 2, "the duplicate is dropped");
    assert!(mined[0]["tokens"].as_u64().unwrap() > 0);
    let proposed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "memory_proposed")
        .collect();
    assert_eq!(proposed.len(), 2);

    // Nothing reached # Memory yet.
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "second"]);
    assert!(!fx.turns().last().unwrap().system_text().contains("pnpm"));

    let list = fx.review_json();
    assert_eq!(list.len(), 2, "{list:#?}");
    assert_eq!(list[0]["session"], id.as_str());
    assert_eq!(list[0]["seq"], 1);
    assert_eq!(
        list[1]["seq"],
        Value::Null,
        "an evidence_seq that does not exist keeps the session only"
    );
    let shown = stderr(&fx.eonyx_ok(&["memory", "review", "--accept-all"]));
    assert!(shown.contains("accepted"), "{shown}");
    assert!(fx.review_json().is_empty());

    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "third"]);
    let system = fx.turns().last().unwrap().system_text();
    assert!(system.contains("We use pnpm, never npm"), "{system}");
    let entries: Value =
        serde_json::from_str(&stdout(&fx.eonyx_ok(&["memory", "--json"]))).unwrap();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert!(
        entries.iter().all(|e| e["session"] == id.as_str()),
        "{entries:#?}"
    );
}

#[test]
fn rejected_proposals_never_return_and_leave_no_text() {
    let fx = mx_extracting(
        "",
        json!([
            {"text": "Deploy on Fridays", "scope": "project", "evidence_seq": 1},
        ]),
    );
    fx.past_session("a", &["one", "two", "three"]);
    fx.eonyx_ok(&["memory", "mine"]);
    let list = fx.review_json();
    assert_eq!(list.len(), 1);
    let pid = list[0]["id"].as_str().unwrap().to_owned();
    fx.eonyx_ok(&["memory", "review", "--reject", &pid]);

    let b = fx.past_session("b", &["four", "five", "six"]);
    fx.eonyx_ok(&["memory", "mine", "--session", &b]);
    assert_eq!(fx.miners().len(), 2);
    assert!(
        fx.review_json().is_empty(),
        "a rejected proposal is never proposed again"
    );
    let state = std::fs::read_to_string(fx.sb.data.join("mining/state.json")).unwrap();
    assert!(!state.contains("Fridays"), "{state}");
}

#[test]
fn interactive_review_reads_one_answer_a_line_off_a_terminal() {
    let fx = mx_extracting(
        "",
        json!([
            {"text": "Use pnpm", "scope": "project", "evidence_seq": 1},
            {"text": "Tabs not spaces", "scope": "global", "evidence_seq": 1},
            {"text": "Skip me", "scope": "project", "evidence_seq": 1},
        ]),
    );
    fx.past_session("a", &["one", "two", "three"]);
    fx.eonyx_ok(&["memory", "mine"]);
    let out = run_with_stdin(
        fx.cmd(&["memory", "review"]),
        "e Use pnpm, never npm\nr\ns\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("3 memories proposed"), "{err}");
    assert!(
        err.contains("mining so far: 1 request"),
        "the cost is shown: {err}"
    );
    let entries: Value =
        serde_json::from_str(&stdout(&fx.eonyx_ok(&["memory", "--json"]))).unwrap();
    let texts: Vec<&str> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Use pnpm, never npm"]);
    let left = fx.review_json();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["text"], "Skip me");
}

/// A project with one mined session that proposed three memories; the
/// session's id.
fn three_proposals(fx: &Fx) -> String {
    fx.fake.set_extractor(extractor(json!([
        {"text": "We use pnpm, never npm", "scope": "project", "evidence_seq": 1},
        {"text": "Deploy on Fridays", "scope": "project", "evidence_seq": 3},
        {"text": "Generated files live in gen/", "scope": "project", "evidence_seq": 5},
    ])));
    let id = fx.past_session("three", &["one", "two", "three"]);
    fx.eonyx_ok(&["memory", "mine"]);
    assert_eq!(fx.review_json().len(), 3);
    id
}

/// [`three_proposals`]' proposal ids, in review order.
fn three_proposal_ids(fx: &Fx) -> Vec<String> {
    three_proposals(fx);
    fx.review_json()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The memory entries' texts, as `eonyx memory --json` lists them.
fn entry_texts(fx: &Fx) -> Vec<String> {
    let v: Value = serde_json::from_str(&stdout(&fx.eonyx_ok(&["memory", "--json"]))).unwrap();
    let mut texts: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect();
    texts.sort();
    texts
}

#[test]
fn memory_review_in_the_repl_asks_each_proposal_and_the_next_session_has_what_was_accepted() {
    use crate::agent_repl::{prompt_count, start_repl};
    let fx = mx("");
    let id = three_proposals(&fx);
    fx.fake.push(Reply::text("hello back"));
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the waiting line", |p| {
        p.contains("3 memories proposed from earlier sessions: /memory review")
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    tmux.send("/memory review");
    tmux.wait_pane("the first question", |p| {
        p.contains("We use pnpm, never npm") && p.contains("[a/r/e TEXT/s]")
    });
    tmux.send("e We use pnpm for everything");
    tmux.wait_pane("the second question", |p| p.contains("Deploy on Fridays"));
    tmux.send("what");
    tmux.wait_pane("the complaint", |p| p.contains("`what` is not an answer"));
    tmux.send("r");
    tmux.wait_pane("the third question", |p| {
        p.contains("Generated files live in gen/")
    });
    tmux.send("s");
    let pane = tmux.wait_pane("the end of the review", |p| {
        p.contains("skipped [") && prompt_count(p) >= 2
    });
    assert!(pane.contains("accepted ["), "{pane}");
    assert!(pane.contains("rejected ["), "{pane}");
    // Nothing reached this session's `# Memory`; a new session has it.
    tmux.send("/new");
    tmux.wait_pane("the new session", |p| prompt_count(p) >= 3);
    tmux.send("hello");
    tmux.wait_pane("the reply", |p| p.contains("hello back"));
    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));

    let system = fx.turns().last().unwrap().system_text();
    assert!(system.contains("We use pnpm for everything"), "{system}");
    assert!(!system.contains("never npm"), "{system}");
    assert!(!system.contains("Deploy on Fridays"), "{system}");
    assert!(!system.contains("gen/"), "{system}");
    assert_eq!(entry_texts(&fx), ["We use pnpm for everything"]);
    let v: Value = serde_json::from_str(&stdout(&fx.eonyx_ok(&["memory", "--json"]))).unwrap();
    assert_eq!(v[0]["session"], id.as_str());
    // The skipped one waits; the rejected one is gone for good.
    let waiting = fx.review_json();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["text"], "Generated files live in gen/");
}

#[test]
fn memory_review_in_a_batch_lists_and_takes_the_flags() {
    let fx = mx("");
    let ids = three_proposal_ids(&fx);
    let input = format!(
        "/memory review\n/memory review --accept nope\n/memory review --reject {}\n/memory review --accept {}\n/memory review --accept-all\n/memory review\n/memory reviews\n",
        ids[1], ids[0]
    );
    let o = run_with_stdin(fx.cmd(&["--new"]), &input);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    // Listed with how to answer, not asked.
    assert!(
        err.contains("3 memories proposed from earlier sessions"),
        "{err}"
    );
    assert!(
        err.contains("/memory review --accept ID… | --reject ID… | --accept-all"),
        "{err}"
    );
    assert!(!err.contains("[a/r/e TEXT/s]"), "{err}");
    assert!(err.contains("nope"), "{err}");
    assert!(err.contains(&format!("rejected [{}]", ids[1])), "{err}");
    assert!(err.contains(&format!("accepted [{}]", ids[0])), "{err}");
    assert!(err.contains(&format!("accepted [{}]", ids[2])), "{err}");
    assert!(
        err.contains("no memories proposed from earlier sessions"),
        "{err}"
    );
    assert!(err.contains("usage: /memory [review"), "{err}");
    assert!(fx.review_json().is_empty());
    assert_eq!(
        entry_texts(&fx),
        ["Generated files live in gen/", "We use pnpm, never npm"]
    );
    fx.fake.push(Reply::text("hi"));
    fx.eonyx_ok(&["run", "next"]);
    let system = fx.turns().last().unwrap().system_text();
    assert!(system.contains("We use pnpm, never npm"), "{system}");
    assert!(!system.contains("Deploy on Fridays"), "{system}");
}

#[test]
fn memory_review_in_an_acp_session_lists_and_takes_the_flags() {
    let fx = mx("");
    let ids = three_proposal_ids(&fx);
    let (mut c, s) = crate::acp_util::started(&fx);
    let mut said = |line: &str| c.said(&s, line);
    let t = said("/memory review");
    assert!(t.contains("Deploy on Fridays"), "{t}");
    assert!(t.contains("--accept-all"), "{t}");
    let t = said(&format!("/memory review --reject {}", ids[1]));
    assert!(t.contains("never proposed again"), "{t}");
    let t = said("/memory review --accept-all");
    assert!(t.contains(&format!("accepted [{}]", ids[0])), "{t}");
    assert!(t.contains(&format!("accepted [{}]", ids[2])), "{t}");
    c.finish_ok();
    assert!(fx.review_json().is_empty());
    assert_eq!(
        entry_texts(&fx),
        ["Generated files live in gen/", "We use pnpm, never npm"]
    );
}
