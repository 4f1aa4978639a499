//! What hooks add to a turn (docs/hooks.md): the same turn — a user line,
//! one `read_file` call, the answer — driven through `Agent::turn` against
//! an in-process provider that answers at once, with `UserPromptSubmit`,
//! `PreToolUse` and `PostToolUse` hooks running `true`, against the same
//! turn with no hooks, measured alternately in one run. Each hook is a
//! `sh -c true` process (fork, exec, stdin JSON, wait). Goal: under 15 ms
//! added per turn. `EONYX_BENCH_SCALE` multiplies the number of timed turns
//! (default 1 = 30 per side).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use common::Dirs;
use eonyx_agent::{Agent, AgentEvent, SessionChoice};
use eonyx_core::Role;
use eonyx_core::provider::CancellationToken;
use eonyx_tests::bench::{self, Samples};
use eonyx_tests::{ScriptedProvider, Step};

/// Calls `read_file` after a user line, answers after the result.
fn provider() -> ScriptedProvider {
    ScriptedProvider::answering(|request| match request.messages.last() {
        Some(m) if m.role == Role::User => {
            Step::tool_calls(&[("read_file", serde_json::json!({"path": "notes.md"}))])
        }
        _ => Step::text("ok"),
    })
    .named("instant")
    .unrecorded()
}

/// Which hooks a bench agent's config has.
#[derive(Clone, Copy)]
enum Hooks {
    /// `UserPromptSubmit`, `PreToolUse` and `PostToolUse` (`HOOKS`).
    Three,
    None,
}

const HOOKS: &str = r#"
[[hooks.UserPromptSubmit]]
hooks = [{ type = "command", command = "true" }]
[[hooks.PreToolUse]]
matcher = "Read"
hooks = [{ type = "command", command = "true" }]
[[hooks.PostToolUse]]
matcher = "read_file"
hooks = [{ type = "command", command = "true" }]
"#;

/// A fresh agent in temp dirs under `root`; `hooks` adds the three hooks.
async fn agent(root: &camino::Utf8Path, hooks: Hooks) -> Agent {
    let dirs = Dirs::create(root, root.join("data"));
    std::fs::write(
        dirs.project.join("notes.md"),
        "# Notes\n\nThe parser changed.\n",
    )
    .unwrap();
    dirs.write_config(match hooks {
        Hooks::Three => HOOKS,
        Hooks::None => "",
    });
    Agent::open(dirs.options(provider()), SessionChoice::New)
        .await
        .unwrap()
}

async fn turn(agent: &mut Agent, i: usize, hook_runs: &mut usize) -> Duration {
    let cancel = CancellationToken::new();
    let count = |ev: AgentEvent| {
        if matches!(ev, AgentEvent::Hook { .. }) {
            *hook_runs += 1;
        }
    };
    let events = agent.events();
    let t = Instant::now();
    let question = format!("question {i}: what changed?");
    let outcome = events
        .deliver(agent.turn(&question, &cancel), count)
        .await
        .unwrap();
    let d = t.elapsed();
    assert_eq!(outcome.text, "ok");
    assert_eq!(outcome.steps, 2);
    d
}

fn main() {
    let turns = 30 * bench::scale();
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_path_buf()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (with, without) = rt.block_on(async {
        let mut hooked = agent(&root.join("hooked"), Hooks::Three).await;
        let mut plain = agent(&root.join("plain"), Hooks::None).await;
        let (mut with, mut without) = (Samples::default(), Samples::default());
        let (mut runs, mut none) = (0, 0);
        for i in 0..3 {
            turn(&mut hooked, i, &mut runs).await;
            turn(&mut plain, i, &mut none).await;
        }
        for i in 0..turns {
            with.0.push(turn(&mut hooked, i, &mut runs).await);
            without.0.push(turn(&mut plain, i, &mut none).await);
        }
        assert_eq!(runs, 3 * (turns + 3), "every hook ran on every turn");
        assert_eq!(none, 0);
        (with.median(), without.median())
    });
    let added = with.saturating_sub(without);
    println!(
        "{}",
        bench::Line::timed(
            format!(
                "turn with UserPromptSubmit, PreToolUse and PostToolUse hooks running `true` (vs the same turn with none; adds {})",
                bench::human(added)
            ),
            with,
            without,
            "< 15 ms added",
        )
    );
}
