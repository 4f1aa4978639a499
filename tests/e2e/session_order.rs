//! Which session is "the most recent" and when a session is born, as a
//! script sees it through the real binary against the fake provider:
//! `run first; run second; run -c third` continues "second" every time,
//! also right after a `kill -9` mid-batch (issue 20), `eonyx sessions`
//! lists the order `-c` uses, and sessions that never got a message
//! (`/new`, an empty batch, an `--new` REPL left at once) take no title
//! number and leave no file (issue 13, part 3).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::io::Write as _;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use eonyx_tests::{FakeServer, Reply};
use serde_json::Value;

use crate::agent::run_with_stdin;
use crate::agent_repl::start_repl_in;
use crate::util::{Sandbox, fake_project, stderr, stdout};

/// A project in `work`, the fake model configured; every reply echoes the
/// user's text, except prompts starting with `hang`, which get no answer
/// for a minute (long enough to be killed mid-turn).
struct Fx {
    sb: Sandbox,
    fake: FakeServer,
}

impl Fx {
    fn new() -> Self {
        let (sb, fake) = fake_project(|c| c);
        fake.set_default_reply(Reply::echo());
        fake.set_responder(|req| {
            req.last_user_text()
                .filter(|t| t.starts_with("hang"))
                .map(|_| Reply::echo().with_delay(Duration::from_secs(60)))
        });
        Self { sb, fake }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.sb.eonyx();
        c.args(args);
        c
    }

    /// Run to completion with `input` on stdin; assert success.
    fn ok(&self, args: &[&str], input: &str) -> Output {
        let o = run_with_stdin(self.cmd(args), input);
        assert!(o.status.success(), "{args:?} failed: {}", stderr(&o));
        o
    }

    /// `eonyx sessions --json`.
    fn listed(&self) -> Vec<Value> {
        let o = self.ok(&["sessions", "--json"], "");
        serde_json::from_str::<Value>(&stdout(&o))
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// Ids in the order `eonyx sessions` prints them (the table).
    fn table_ids(&self) -> Vec<String> {
        let o = self.ok(&["sessions"], "");
        stdout(&o)
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect()
    }

    /// Every session file has at least one message record.
    fn assert_no_empty_session_file(&self) {
        for e in std::fs::read_dir(self.sb.data.join("sessions")).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(
                text.lines().any(|l| l.contains(r#""type":"message""#)),
                "{} has no message:\n{text}",
                p.display()
            );
        }
    }
}

/// `(title, id)` from the notice `new session TITLE (ID)`.
fn new_session(o: &Output) -> (String, String) {
    let err = stderr(o);
    let rest = err
        .lines()
        .find_map(|l| l.strip_prefix("new session "))
        .unwrap_or_else(|| panic!("no `new session` notice in {err}"));
    let (title, id) = rest.split_once(" (").unwrap();
    (title.to_owned(), id.trim_end_matches(')').to_owned())
}

/// The three-command script; returns whether `-c` continued "second"
/// (checked against the notice, the request and the listing), with the
/// reason when it did not.
fn script(fx: &Fx, tag: &str) -> Result<(), String> {
    fx.ok(&["run", &format!("first {tag}")], "");
    let o = fx.ok(&["run", &format!("second {tag}")], "");
    let (title, id) = new_session(&o);
    // The listing shows, first, the session `-c` is about to continue.
    let listed = fx.listed();
    let table = fx.table_ids();
    let json_ids: Vec<&str> = listed.iter().map(|s| s["id"].as_str().unwrap()).collect();
    if json_ids != table {
        return Err(format!("table {table:?} != json {json_ids:?}"));
    }
    if json_ids.first() != Some(&id.as_str()) {
        return Err(format!("listing starts with {json_ids:?}, not {id}"));
    }
    let o = fx.ok(&["run", "-c", &format!("third {tag}")], "");
    let want = format!("resumed session {title} ({id}, 2 messages)");
    if !stderr(&o).contains(&want) {
        return Err(format!("wanted `{want}`, got: {}", stderr(&o)));
    }
    let sent = fx.fake.last_request().unwrap().user_texts();
    if sent != [format!("second {tag}"), format!("third {tag}")] {
        return Err(format!("-c sent {sent:?}"));
    }
    Ok(())
}

#[test]
fn run_c_continues_the_latest_session_20_of_20_within_the_same_second() {
    let fx = Fx::new();
    let failures: Vec<String> = (0..20)
        .filter_map(|i| script(&fx, &i.to_string()).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of 20 correct:\n{}",
        20 - failures.len(),
        failures.join("\n")
    );
    fx.assert_no_empty_session_file();
}

#[test]
fn run_c_after_a_kill_9_mid_batch_resumes_the_killed_session_then_the_script_holds() {
    let fx = Fx::new();
    for i in 0..5 {
        fx.ok(&["run", &format!("before {i}")], "");
        // A batch killed while it waits for the model's second answer.
        let mut child = fx
            .cmd(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let hang = format!("hang {i}");
        writeln!(child.stdin.as_mut().unwrap(), "batch {i}\n{hang}").unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !fx
            .fake
            .chat_requests()
            .iter()
            .any(|r| r.last_user_text().as_deref() == Some(hang.as_str()))
        {
            assert!(Instant::now() < deadline, "the batch never sent {hang:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap(); // SIGKILL
        let killed = child.wait_with_output().unwrap();
        let (title, id) = new_session(&killed);

        // Right after the crash, -c picks the killed batch's session.
        let o = fx.ok(&["run", "-c", &format!("recover {i}")], "");
        let want = format!("resumed session {title} ({id}, 3 messages)");
        assert!(
            stderr(&o).contains(&want),
            "wanted `{want}`: {}",
            stderr(&o)
        );
        assert_eq!(
            fx.fake.last_request().unwrap().user_texts(),
            [format!("batch {i}"), hang.clone(), format!("recover {i}")]
        );
        script(&fx, &format!("after kill {i}")).unwrap();
    }
    fx.assert_no_empty_session_file();
}

#[test]
fn sessions_that_never_got_a_message_take_no_title_number() {
    let fx = Fx::new();
    let one = new_session(&fx.ok(&["run", "one"], "")).0;
    // `/new` twice: the announced title is the one the session will take.
    let o = fx.ok(&[], "/new\n/new\ntwo\n");
    let err = stderr(&o);
    let announced: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("new session "))
        .map(|r| r.split_once(' ').unwrap().0)
        .collect();
    assert_eq!(announced.len(), 3, "{err}");
    let two = announced[2].to_owned();
    // A batch that only starts a new session, and an empty one.
    fx.ok(&[], "/new\n");
    fx.ok(&["--new"], "");
    fx.ok(&[], "");
    let three = new_session(&fx.ok(&["run", "three"], "")).0;

    let n: Vec<u64> = [&one, &two, &three]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(
        n,
        [n[0], n[0] + 1, n[0] + 2],
        "titles {one}, {two}, {three}"
    );
    let listed = fx.listed();
    let titles: Vec<&str> = listed
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, [three.as_str(), two.as_str(), one.as_str()]);
    assert_eq!(
        std::fs::read_dir(fx.sb.data.join("sessions"))
            .unwrap()
            .count(),
        3
    );
    fx.assert_no_empty_session_file();
}

/// Run `eonyx --new` on a terminal (a tmux server of its own), leave at
/// once with `/exit`, and return the pane.
fn repl_new_left_at_once(fx: &Fx) -> String {
    let tmux = start_repl_in(&fx.sb, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the prompt", |p| p.contains("/exit to leave"));
    tmux.send("/exit");
    tmux.wait_pane("the exit status", |p| p.contains("EONYX_EXIT="))
}

#[test]
fn a_new_repl_left_at_once_leaves_nothing_and_takes_no_title() {
    let fx = Fx::new();
    let pane = repl_new_left_at_once(&fx);
    assert!(pane.contains("new session 1 ("), "{pane}");
    assert!(pane.contains("EONYX_EXIT=0"), "{pane}");
    let left = |dir: &str| {
        std::fs::read_dir(fx.sb.data.join(dir))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!((left("sessions"), left("locks")), (0, 0));
    assert_eq!(new_session(&fx.ok(&["run", "one"], "")).0, "1");
}
