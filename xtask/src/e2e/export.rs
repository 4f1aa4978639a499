//! The export stage of `cargo xtask e2e` (issue 39): a session made by the
//! real binary in batch mode — tool calls, a task, answers that fill a
//! 4,096-token window so it compacts on its own, a manual compaction, a
//! rewind — exported as HTML and Markdown, then the page rendered by
//! headless Chromium when it is installed (`apt-get install chromium`),
//! light and dark. The fake server makes the model's decisions (a 270M
//! base model would not call the tools reliably), so the stage needs no
//! llama-server. The screenshots are left in `target/e2e-export/` for a
//! person to look at; `docs/export-html.png` is one of them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply};
use serde_json::json;

use crate::{local_model, util};

/// What a child's system prompt holds (docs/tools.md#task).
const CHILD_MARK: &str = "# Task";

/// The model's decision for one request.
fn decide(r: &RecordedRequest) -> Reply {
    if r.is_summarizer() {
        return Reply::text(
            "## Goal\nMake the retry logic of the client configurable.\n\n## Done\n- Read notes/plan.md: three steps.\n- A sub-agent found the TODOs in src/net.rs and src/retry.rs.\n\n## Next\n- Add `retry.max_attempts` to the config.",
        );
    }
    let last_is_result = r.roles().last().is_some_and(|role| role == "tool");
    if r.system_text().contains(CHILD_MARK) {
        return if last_is_result {
            Reply::text(
                "Two TODOs: src/net.rs:12 (retry count hard-coded) and src/retry.rs:3 (no jitter).",
            )
        } else {
            Reply::tool_call("grep", json!({"pattern": "TODO", "path": "src"}))
        };
    }
    let user = r.last_user_text().unwrap_or_default();
    if last_is_result {
        return if user.contains("sub-agent") {
            Reply::text(
                "The sub-agent found two TODOs: the retry count is hard-coded in `src/net.rs`, and `src/retry.rs` has no jitter.",
            )
        } else {
            Reply::text(
                "The plan has three steps:\n\n1. make `max_attempts` configurable\n2. add jitter\n3. test it against a flaky server\n\n```rust\nlet delay = base * 2u32.pow(attempt);\n```",
            )
        };
    }
    if user.contains("notes/plan.md") {
        return Reply::tool_call("read_file", json!({"path": "notes/plan.md"}));
    }
    if user.contains("sub-agent") {
        return Reply::tool_call(
            "task",
            json!({"prompt": "Find every TODO under src/ and say what each is about.", "description": "find the TODOs", "profile": "explore"}),
        );
    }
    let topic = user.split(':').next().unwrap_or("it");
    Reply::text(format!(
        "About {topic}: {}",
        "a retry waits longer after each failure, up to a cap, and gives up after max_attempts; jitter spreads the clients out. ".repeat(6)
    ))
}

/// Where the stage leaves the page and its screenshot.
pub(crate) fn out_dir() -> PathBuf {
    util::target_dir().join("e2e-export")
}

/// The lines fed to the binary.
fn lines() -> String {
    let mut out = vec![
        "Read notes/plan.md and tell me the steps.".to_owned(),
        "Use a sub-agent to find every TODO under src/.".to_owned(),
    ];
    for t in [
        "backoff",
        "jitter",
        "caps",
        "timeouts",
        "idempotency",
        "budgets",
    ] {
        out.push(format!("{t}: explain how it applies to our client"));
    }
    out.push("/rewind".to_owned());
    out.push("circuit breakers: explain, and show <b>markup</b> and </script> as text".to_owned());
    for t in ["logging", "metrics"] {
        out.push(format!("{t}: explain how it applies to our client"));
    }
    out.push("/compact keep the TODOs".to_owned());
    out.push("tests: explain how it applies to our client".to_owned());
    out.iter().map(|l| format!("{l}\n")).collect()
}

pub(crate) fn export_stage(bin: &Path) -> Result<()> {
    println!("== export stage: a session exported by `sessions export --format html|markdown`");
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    std::fs::create_dir_all(env.project.join("notes"))?;
    std::fs::create_dir_all(env.project.join("src"))?;
    std::fs::write(
        env.project.join("notes/plan.md"),
        "# Plan\n1. configurable max_attempts\n2. jitter\n3. flaky-server test\n",
    )?;
    std::fs::write(
        env.project.join("src/net.rs"),
        "// TODO: retry count hard-coded\n",
    )?;
    std::fs::write(
        env.project.join("src/retry.rs"),
        "fn retry() {}\n// TODO: no jitter\n",
    )?;
    let fake = FakeServer::try_start().context("starting the fake server")?;
    fake.set_responder(|r| Some(decide(r)));
    let config = FakeConfig::openai(&fake.base_url())
        .set("retries", 0)
        .set("context_window", 4096_i64)
        .merge_model_toml("pricing = { input = 3.0, cached_input = 0.3, output = 15.0 }\n")?
        .merge_top_toml("[compaction]\nkeep_turns = 1\n")?;
    env.write_config(&config)?;
    let out = env
        .command(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))
        .and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                use std::io::Write as _;
                stdin.write_all(lines().as_bytes())?;
            }
            Ok(child.wait_with_output()?)
        })?;
    if !out.status.success() {
        bail!(
            "the batch run failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let listed = env
        .command(bin)
        .args(["sessions", "--json"])
        .output()
        .context("listing the sessions")?;
    let rows: serde_json::Value = serde_json::from_slice(&listed.stdout)
        .context("`eonyx sessions --json` did not print JSON")?;
    let id = rows[0]["id"]
        .as_str()
        .context("the batch run left no session")?
        .to_owned();
    let dir = out_dir();
    std::fs::create_dir_all(&dir)?;
    let html = dir.join("session.html");
    let md = dir.join("session.md");
    for (format, path) in [("html", &html), ("markdown", &md)] {
        let o = env
            .command(bin)
            .args(["sessions", "export", &id, "--format", format, "-o"])
            .arg(path)
            .output()?;
        if !o.status.success() {
            bail!(
                "sessions export --format {format} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    let page = std::fs::read_to_string(&html)?;
    let compactions = page.matches("<a class=\"mark\"").count();
    let points = page.matches("<circle class=\"req").count();
    println!(
        "PASS  export: {} ({} KB, {points} requests charted, {compactions} compaction(s) marked), {}",
        html.display(),
        page.len() / 1024,
        md.display()
    );
    if compactions < 2 {
        bail!(
            "the exported session has {compactions} compaction(s) marked, not the automatic and the manual one the script makes"
        );
    }
    match chromium() {
        None => println!(
            "SKIP  screenshot: no chromium on PATH (`apt-get install chromium` to render the page)"
        ),
        Some(browser) => {
            let shot = dir.join("session.png");
            screenshot(&browser, &html, &shot, false)?;
            let dark = dir.join("session-dark.png");
            screenshot(&browser, &html, &dark, true)?;
            println!(
                "PASS  screenshot: {} and {} (look at them)",
                shot.display(),
                dark.display()
            );
        }
    }
    Ok(())
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(local_model::find_on_path)
}

/// Render `page` headless, with no network, to a PNG.
fn screenshot(browser: &Path, page: &Path, png: &Path, dark: bool) -> Result<()> {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        // Nothing may be fetched: every host resolves nowhere.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--window-size=1100,1500",
    ]);
    if dark {
        cmd.arg("--force-dark-mode")
            .arg("--blink-settings=preferredColorScheme=0");
    }
    let out = cmd
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", browser.display()))?;
    let size = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
    if !out.status.success() || size == 0 {
        bail!(
            "{} could not render {}: {}",
            browser.display(),
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
