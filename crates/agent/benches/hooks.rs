//! What hooks add to a turn (docs/hooks.md): the same turn — a user line,
//! one `read_file` call, the answer — driven through `Agent::turn` against
//! an in-process provider that answers at once, with `UserPromptSubmit`,
//! `PreToolUse` and `PostToolUse` hooks running `true`, against the same
//! turn with no hooks, measured alternately in one run. Each hook is a
//! `sh -c true` process (fork, exec, stdin JSON, wait). Goal: under 15 ms
//! added per turn. `EONYX_BENCH_SCALE` multiplies the number of timed turns
//! (default 1 = 30 per side).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use eonyx_agent::tools::AllowAll;
use eonyx_agent::{Agent, AgentEvent, AgentOptions, SessionChoice};
use eonyx_core::Role;
use eonyx_core::paths::Env;
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

/// A fresh agent in temp dirs; `hooks` adds the three hooks.
async fn agent(root: &camino::Utf8Path, hooks: bool) -> Agent {
    let (config, home, project, data) = (
        root.join("config"),
        root.join("home"),
        root.join("project"),
        root.join("data"),
    );
    for d in [&config, &home, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(project.join("eonyx.json"), "{}\n").unwrap();
    std::fs::write(project.join("notes.md"), "# Notes\n\nThe parser changed.\n").unwrap();
    let mut toml = "model = \"bench\"\n[models.bench]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"bench-model\"\ncontext_window = 1000000\n".to_owned();
    if hooks {
        toml.push_str(HOOKS);
    }
    std::fs::write(config.join("config.toml"), toml).unwrap();
    let env = Env::from_pairs([
        ("HOME", home.as_str()),
        ("EONYX_DATA_DIR", data.as_str()),
        ("EONYX_CONFIG_DIR", config.as_str()),
    ]);
    let opts = AgentOptions {
        cwd: project.clone(),
        env,
        model: None,
        profile: None,
        permissions: eonyx_agent::tools::Permissions::NONE,
        approver: Some(Arc::new(AllowAll)),
        provider: Some(Arc::new(provider())),
        mcp: None,
        mcp_servers: Vec::new(),
        sandbox_helper: None,
    };
    Agent::open(opts, SessionChoice::New).await.unwrap()
}

async fn turn(agent: &mut Agent, i: usize, hook_runs: &mut usize) -> Duration {
    let cancel = CancellationToken::new();
    let mut sink = |ev: AgentEvent| {
        if matches!(ev, AgentEvent::Hook { .. }) {
            *hook_runs += 1;
        }
    };
    let t = Instant::now();
    let outcome = agent
        .turn(&format!("question {i}: what changed?"), &mut sink, &cancel)
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
        let mut hooked = agent(&root.join("hooked"), true).await;
        let mut plain = agent(&root.join("plain"), false).await;
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
