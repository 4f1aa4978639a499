//! The REPL in a real terminal (tmux): shell approval with "always", the
//! prompt, help and a streamed turn; and the [`Tmux`] fixture `repl.rs` and
//! `editing.rs` share.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Command;
use std::time::{Duration, Instant};

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::util::Sandbox;

/// A tmux server of its own (`-L`), killed on drop.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    pub(crate) fn pane(&self) -> String {
        let o = self
            .cmd()
            .args(["capture-pane", "-p", "-J", "-S", "-200", "-t", "repl"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Type `text` literally, then Enter.
    pub(crate) fn send(&self, text: &str) {
        self.keys(&["-l", text]);
        self.keys(&["Enter"]);
    }

    /// Send `line`, then wait (for `what`) until the pane holds `text` and
    /// at least `prompts` prompts: the pane.
    pub(crate) fn send_until(&self, line: &str, what: &str, text: &str, prompts: usize) -> String {
        self.send(line);
        self.wait_pane(what, |p| p.contains(text) && prompt_count(p) >= prompts)
    }

    /// Press keys by tmux name (`Up`, `C-c`, `Tab`, `M-Enter`…), no Enter added.
    pub(crate) fn keys(&self, names: &[&str]) {
        let st = self
            .cmd()
            .args(["send-keys", "-t", "repl"])
            .args(names)
            .status()
            .unwrap();
        assert!(st.success());
    }

    pub(crate) fn wait_pane(&self, what: &str, mut cond: impl FnMut(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let pane = self.pane();
            if cond(&pane) {
                return pane;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; pane:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

pub(crate) fn prompt_count(pane: &str) -> usize {
    pane.lines()
        .filter(|l| {
            l.trim_start().starts_with("{ctx ")
                && l.contains("%} >")
                && l["{ctx ".len()..]
                    .trim_start()
                    .split('%')
                    .next()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count()
}

/// Start a shell line in a new tmux server whose session `repl` runs in the
/// sandbox's work dir. `line(env, bin)` builds it from the sandbox's
/// environment assignments and the binary's path.
pub(crate) fn start_repl(fx: &Fx, line: impl Fn(&str, &str) -> String) -> Tmux {
    start_repl_in(&fx.sb, line)
}

/// A REPL on a new session (`eonyx --new`, its exit code then shown as
/// `EONYX_EXIT=N`), once its first prompt is on the screen.
pub(crate) fn start_new_repl(fx: &Fx) -> Tmux {
    let tmux = start_repl(fx, |env, bin| {
        format!("{env} '{bin}' --new; echo EONYX_EXIT=$?; sleep 60")
    });
    tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    tmux
}

/// [`start_repl`] for any sandbox.
pub(crate) fn start_repl_in(sb: &Sandbox, line: impl Fn(&str, &str) -> String) -> Tmux {
    let tmux = Tmux {
        socket: format!(
            "eonyx-e2e-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ),
    };
    let base = sb.eonyx();
    let mut env = String::from(
        "env -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u XDG_STATE_HOME -u NO_HISTORY -u OPENAI_API_KEY -u OPENAI_BASE_URL -u EONYX_MODEL",
    );
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            env.push_str(&format!(
                " {}='{}'",
                k.to_str().unwrap(),
                v.to_str().unwrap()
            ));
        }
    }
    let script = line(&env, env!("CARGO_BIN_EXE_eonyx"));
    let st = tmux
        .cmd()
        .args([
            "new-session",
            "-d",
            "-s",
            "repl",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
        ])
        .arg(&sb.work)
        .arg(&script)
        .status()
        .unwrap();
    assert!(st.success(), "tmux new-session failed");
    tmux
}

#[test]
fn repl_asks_before_running_a_shell_command_and_remembers_always() {
    let fx = Fx::new();
    let touch = |name: &str| json!({"command": format!("touch {name}")});
    fx.fake
        .push(Reply::tool_call("shell", touch("denied.txt")))
        .push(Reply::text("ok, not run"))
        .push(Reply::tool_call("shell", touch("once.txt")))
        .push(Reply::text("ran once"))
        .push(Reply::tool_call("shell", touch("always1.txt")))
        .push(Reply::tool_call("shell", touch("always2.txt")))
        .push(Reply::text("ran both"));
    let tmux = start_new_repl(&fx);

    tmux.send("make denied.txt");
    tmux.wait_pane("the question", |p| p.matches("[a]lways").count() == 1);
    tmux.send_until("n", "the answer", "ok, not run", 2);
    assert!(!fx.sb.work.join("denied.txt").exists());
    let denied = fx.chats()[1].messages().last().cloned().unwrap();
    assert!(content(&denied).contains("denied"), "{denied}");

    tmux.send("make once.txt");
    tmux.wait_pane("the second question", |p| {
        p.matches("[a]lways").count() == 2
    });
    tmux.send_until("y", "the answer", "ran once", 3);
    assert!(fx.sb.work.join("once.txt").exists());

    // "always" covers the rest of the session: the second call is not asked.
    tmux.send("make two files");
    tmux.wait_pane("the third question", |p| p.matches("[a]lways").count() == 3);
    tmux.send("a");
    let pane = tmux.wait_pane("the answer", |p| {
        p.contains("ran both") && prompt_count(p) >= 4
    });
    assert_eq!(pane.matches("[a]lways").count(), 3, "{pane}");
    assert!(fx.sb.work.join("always1.txt").exists());
    assert!(fx.sb.work.join("always2.txt").exists());

    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
}

#[test]
fn repl_in_a_real_terminal_shows_the_prompt_help_and_streams_a_turn() {
    if Command::new("tmux").arg("-V").output().is_err() {
        panic!("tmux is not installed (`.ci/run` installs it)");
    }
    let fx =
        Fx::replying([Reply::text("streamed words arrive one by one")
            .with_chunk_delay(Duration::from_millis(30))]);
    // First a fresh session, then one that resumes it.
    let tmux = start_repl(&fx, |env, bin| {
        format!(
            "{env} '{bin}' --new; echo EONYX_EXIT=$?; {env} '{bin}'; echo EONYX_EXIT2=$?; sleep 60"
        )
    });
    let pane = tmux.wait_pane("the prompt", |p| prompt_count(p) >= 1);
    assert!(pane.contains("new session 1"), "{pane}");

    tmux.send("/help");
    let pane = tmux.wait_pane("the help", |p| p.contains("/exit") && prompt_count(p) >= 2);
    for cmd in [
        "/compact [focus]",
        "/new",
        "/sessions",
        "/resume ID",
        "/rename TITLE",
        "/context",
    ] {
        assert!(pane.contains(cmd), "/help lists {cmd}:\n{pane}");
    }
    assert!(fx.chats().is_empty(), "/help called the model");

    tmux.send("tell me something");
    let pane = tmux.wait_pane("the streamed answer", |p| {
        p.contains("streamed words arrive one by one") && prompt_count(p) >= 3
    });
    assert_eq!(fx.chats().len(), 1, "{pane}");
    assert_eq!(
        fx.chats()[0].last_user_text().as_deref(),
        Some("tell me something")
    );

    tmux.send("/nonsense");
    tmux.wait_pane("the hint", |p| p.contains("unknown command /nonsense"));
    assert_eq!(fx.chats().len(), 1);

    // Ctrl-C during a slow reply cancels the turn, not the REPL.
    fx.fake
        .push(Reply::text("far too slow").with_delay(Duration::from_secs(8)));
    tmux.send("a slow one");
    wait_for("the slow request", Duration::from_secs(20), || {
        fx.chats().len() == 2
    });
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the interrupt", |p| {
        p.contains("interrupted") && prompt_count(p) >= 5
    });

    tmux.send("/exit");
    tmux.wait_pane("the exit", |p| p.contains("EONYX_EXIT=0"));
    assert_eq!(
        roles(&messages(&fx.session())),
        ["user", "assistant", "user"]
    );

    // Plain `eonyx` resumes the most recent session and says so; Ctrl-C
    // at the prompt exits with 130.
    let pane = tmux.wait_pane("the resumed REPL", |p| {
        p.contains("resumed session 1") && prompt_count(p) >= 6
    });
    assert!(pane.contains("3 messages"), "{pane}");
    tmux.keys(&["C-c"]);
    tmux.wait_pane("the exit on Ctrl-C", |p| p.contains("EONYX_EXIT2=130"));
    assert_eq!(fx.session_files().len(), 1);
}
