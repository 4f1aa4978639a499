//! Every slash command through every frontend (issue 44): the REPL in a
//! real terminal (tmux), a batch run and an ACP session each run every
//! command they offer with a good and a bad argument, and end each the
//! same way: the good one goes on, the bad one is declined with the same
//! reason (stderr in the REPL, a `notice` event in a batch, the reply's
//! text in ACP). In the batch a line follows every bad one and is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::time::{Duration, Instant};

use crate::acp_util::started;
use crate::agent::{Fx, code, session_id_of};
use crate::agent_repl::{Tmux, start_repl};
use crate::util::{json_lines, stderr};

/// One line and how every frontend must end it.
struct Case {
    line: String,
    /// `Some(reason)`: declined, saying `reason`; `None`: it went on.
    declined: Option<&'static str>,
    /// Whether ACP offers it (the others are the terminal's: a session
    /// switch, `/exit`, the `/summarize` alias).
    acp: bool,
}

fn good(line: &str) -> Case {
    Case {
        line: line.to_owned(),
        declined: None,
        acp: true,
    }
}

fn bad(line: &str, reason: &'static str) -> Case {
    Case {
        line: line.to_owned(),
        declined: Some(reason),
        acp: true,
    }
}

fn terminal(mut c: Case) -> Case {
    c.acp = false;
    c
}

const NO_ARGUMENT: &str = "it takes no argument";

/// The script: turns, then every command with a good and a bad argument.
/// `seed` is a session to `/resume`.
fn cases(seed: &str) -> Vec<Case> {
    let mut v = vec![
        bad("/compact", "nothing to compact"),
        bad("/goal pause", "no goal is set"),
        good("first turn"),
        good("second turn"),
        bad("/rewind many", "usage: /rewind"),
        good("/rewind 1"),
        good("another second turn"),
        terminal(bad("/summarize now", NO_ARGUMENT)),
        terminal(good("/summarize")),
        good("third turn"),
        good("/compact keep the third turn"),
        good("/rename Better title"),
        bad("/rename", "usage: /rename TITLE"),
        good("/remember the sky is blue"),
        bad("/remember", "usage: /remember TEXT"),
        good("/model"),
        bad("/model no-such-model", "no-such-model"),
        good("/export out.md"),
        bad("/export no-such-dir/out.md", "could not write the export"),
        good("/permissions"),
        bad("/permissions please", "usage: /permissions [forget N]"),
        bad("/permissions forget 3", "there is no permission rule 3"),
        good("/pin keep the vendored copy"),
        bad("/pin", "usage: /pin TEXT"),
        bad("/unpin 9", "there is no pin 9"),
        bad("/unpin x", "usage: /unpin N"),
        good("/unpin 1"),
    ];
    v.extend([
        good("/memory"),
        good("/memory review"),
        bad("/memory please", "usage: /memory [review"),
        bad(
            "/memory review --accept nope",
            "no proposed memory with id nope",
        ),
    ]);
    for name in [
        "/sessions",
        "/context",
        "/skills",
        "/hooks",
        "/status",
        "/plan",
        "/pins",
        "/help",
    ] {
        v.push(good(name));
        v.push(bad(&format!("{name} please"), NO_ARGUMENT));
    }
    v.extend([
        bad("/fork x", "usage: /fork"),
        good("/fork"),
        good("/goal"),
        good("/goal reach the end"),
        bad("/goal pause", "not active: nothing to pause"),
        terminal(bad("/new x", NO_ARGUMENT)),
        terminal(good("/new")),
        terminal(bad("/resume not-a-session", "not-a-session")),
        terminal(good(&format!("/resume {seed}"))),
        terminal(bad("/exit now", NO_ARGUMENT)),
        terminal(good("/exit")),
    ]);
    v
}

/// A project whose goals get one continuation and whose compactions keep
/// the last user turn, with one earlier session (`seed`) to resume.
fn fixture() -> (Fx, String) {
    let fx = Fx::with(|c| {
        c.merge_model_toml("compaction.keep_turns = 1")
            .unwrap()
            .merge_top_toml("[goals]\nmax_turns = 1")
            .unwrap()
    });
    let o = fx.run(&["run", "seed the store"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let seed = session_id_of(&fx.session());
    (fx, seed)
}

/// What a frontend did with a line: declined (its text) or went on.
fn assert_ends(surface: &str, case: &Case, said: &str) {
    match case.declined {
        Some(reason) => assert!(
            said.contains(reason),
            "{surface}: {:?} was not declined with {reason:?}:\n{said}",
            case.line
        ),
        None => {
            for c in cases("") {
                if let Some(reason) = c.declined {
                    assert!(
                        !said.contains(reason) && !said.contains("usage:"),
                        "{surface}: {:?} was declined:\n{said}",
                        case.line
                    );
                }
            }
        }
    }
}

#[test]
fn every_command_ends_alike_in_a_batch() {
    let (fx, seed) = fixture();
    let cases = cases(&seed);
    // A line after each bad one: sent, the batch went on.
    let mut input = String::new();
    let mut after = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        input.push_str(&c.line);
        input.push('\n');
        if c.declined.is_some() {
            let line = format!("after bad line {i}");
            input.push_str(&line);
            input.push('\n');
            after.push(line);
        }
    }
    let o = fx.run(&["--json", "--new"], &input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let events = json_lines(&o.stdout);
    assert!(
        !events.iter().any(|e| e["type"] == "error"),
        "{}",
        stderr(&o)
    );
    // Each declined line's notice, in order; no other notice says a
    // reason of the script (a good line was never declined).
    let reasons: Vec<&str> = cases.iter().filter_map(|c| c.declined).collect();
    let notices: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .filter(|m| reasons.iter().any(|r| m.contains(r)) || m.contains("usage:"))
        .collect();
    assert_eq!(notices.len(), reasons.len(), "{notices:#?}");
    for (case, notice) in cases.iter().filter(|c| c.declined.is_some()).zip(&notices) {
        assert_ends("batch", case, notice);
    }
    let sent: Vec<String> = fx
        .agent_requests()
        .iter()
        .filter_map(|r| r.last_user_text())
        .collect();
    for line in &after {
        assert!(sent.contains(line), "{line} was not sent: {sent:#?}");
    }
    assert!(fx.sb.work.join("out.md").exists(), "/export wrote nothing");
}

#[test]
fn every_command_ends_alike_in_an_acp_session() {
    let (fx, seed) = fixture();
    let (mut c, s) = started(&fx);
    for case in cases(&seed).iter().filter(|c| c.acp) {
        c.forget_seen();
        let r = c.prompt(&s, &case.line);
        assert!(
            r["result"]["stopReason"] == "end_turn",
            "{}: {r}",
            case.line
        );
        let text = c.answer_text(&s);
        if case.line.starts_with('/') {
            assert_ends("acp", case, &text);
        }
    }
    c.finish_ok();
    assert!(fx.sb.work.join("out.md").exists(), "/export wrote nothing");
}

/// The whole scrollback, wrapped lines joined.
fn scrollback(tmux: &Tmux) -> String {
    let o = tmux
        .cmd()
        .args(["capture-pane", "-p", "-J", "-S", "-", "-t", "repl"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn is_prompt(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("{ctx ") && t.contains("%} >")
}

/// What the REPL showed after the line typed at its `n`-th prompt (0: the
/// first) up to the next prompt, once that one is there.
fn wait_after_prompt(tmux: &Tmux, n: usize, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = scrollback(tmux);
        let lines: Vec<&str> = all.lines().collect();
        let prompts: Vec<usize> = (0..lines.len()).filter(|&i| is_prompt(lines[i])).collect();
        if prompts.len() > n + 1 {
            return lines[prompts[n] + 1..prompts[n + 1]].join("\n");
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{all}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_command_ends_alike_in_the_repl() {
    let (fx, seed) = fixture();
    let tmux = start_repl(&fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the prompt", |p| p.lines().any(is_prompt));
    let cases = cases(&seed);
    let (last, rest) = cases.split_last().unwrap();
    for (n, case) in rest.iter().enumerate() {
        tmux.send(&case.line);
        if case.line == "/rewind 1" {
            tmux.wait_pane("the rewind question", |p| p.contains("rewind? [y]es"));
            tmux.send("y");
        }
        let shown = wait_after_prompt(&tmux, n, &case.line);
        assert_ends("repl", case, &shown);
    }
    assert_eq!(last.line, "/exit");
    tmux.send(&last.line);
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert!(fx.sb.work.join("out.md").exists(), "/export wrote nothing");
}
