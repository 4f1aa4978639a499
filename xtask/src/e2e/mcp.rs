//! The MCP stage of `cargo xtask e2e`: with the reference time server from
//! PyPI installed (`pip install mcp-server-time`), `eonyx mcp --json` must
//! find it ready with its tools, and one `eonyx run --allow-mcp` turn
//! against llama-server (through the logging proxy) must carry its tools
//! (their definitions, or with deferral `mcp_describe`/`mcp_call` and the
//! `# MCP tools` listing) in every request, the same tools array each time,
//! and `eonyx mcp` afterwards (the window now detected) must agree on
//! whether the schemas are deferred. Skipped with a message when the server is not installed.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::proxy::start_proxy;
use crate::local_model;

/// The server's name on PATH after `pip install mcp-server-time`.
const TIME_SERVER: &str = "mcp-server-time";
const TOOL: &str = "mcp__time__get_current_time";

pub(super) fn mcp_stage(server_port: u16, bin: &Path) -> Result<()> {
    let Some(server) = local_model::find_on_path(TIME_SERVER) else {
        println!(
            "SKIP  mcp: `{TIME_SERVER}` is not on PATH; `pip install {TIME_SERVER}` to run a turn with it"
        );
        return Ok(());
    };
    println!("== MCP stage: {} over stdio", server.display());
    let (proxy_port, log) = start_proxy(server_port)?;
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    let config = format!(
        "{}\n\n[mcp_servers.time]\ncommand = {}\nargs = [\"--local-timezone\", \"UTC\"]\n# Python servers start slowly on a busy machine.\nstartup_timeout_secs = 60\n",
        local_model::config_snippet(proxy_port),
        Value::String(server.to_string_lossy().into_owned())
    );
    std::fs::create_dir_all(&env.config_dir)?;
    std::fs::write(env.config_dir.join("config.toml"), config)
        .context("writing the MCP stage's config")?;

    let listed = env
        .command(bin)
        .args(["mcp", "--json"])
        .output()
        .context("running eonyx mcp")?;
    let report: Value = serde_json::from_slice(&listed.stdout).with_context(|| {
        format!(
            "`eonyx mcp --json` printed no JSON; stderr: {}",
            String::from_utf8_lossy(&listed.stderr)
        )
    })?;
    let time = &report["servers"][0];
    let tools: Vec<&str> = time["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    if time["state"] != "ready" || !tools.contains(&TOOL) {
        bail!(
            "`eonyx mcp` did not find the time server ready with {TOOL}: {time}; stderr: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
    }
    println!(
        "PASS  {:<44} {} tools, ~{} tokens per request, deferred: {}",
        "mcp: eonyx mcp lists the time server",
        tools.len(),
        report["tokens"],
        report["deferred"]
    );

    let turn = env
        .command(bin)
        .args([
            "run",
            "--allow-mcp",
            "What is the current time in UTC? Use the get_current_time tool.",
        ])
        .output()
        .context("running eonyx run")?;
    let stderr = String::from_utf8_lossy(&turn.stderr);
    if !turn.status.success() {
        bail!(
            "`eonyx run` with the time server failed ({}): {stderr}",
            turn.status
        );
    }
    let entries = log.lock().map(|l| l.clone()).unwrap_or_default();
    let turns: Vec<_> = entries
        .iter()
        .filter(|e| e.path.ends_with("/chat/completions") && !e.summarizer)
        .collect();
    let Some(first) = turns.first() else {
        bail!("no chat request reached llama-server");
    };
    // `eonyx mcp` asks no model server, so before this first run it sized
    // the deferral limit with the fallback window; the run detected the
    // server's (n_ctx) and may defer where `eonyx mcp` did not.
    let direct = first.tools.contains(&format!("\"{TOOL}\""));
    let deferred = first.tools.contains("\"mcp_call\"")
        && first
            .stable_prefix
            .as_deref()
            .is_some_and(|p| p.contains(&format!("- {TOOL} — ")));
    if !direct && !deferred {
        bail!(
            "the first request offers neither {TOOL} nor mcp_call with it listed under # MCP tools; tools: {}",
            first.tools
        );
    }
    // With the window now detected and cached, `eonyx mcp` agrees.
    let again: Value = env
        .command(bin)
        .args(["mcp", "--json"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .context("`eonyx mcp --json` after the turn printed no JSON")?;
    if (again["deferred"] == true) != deferred {
        bail!(
            "after the turn `eonyx mcp` says deferred: {}, but the turn's requests {}",
            again["deferred"],
            if deferred {
                "deferred"
            } else {
                "did not defer"
            }
        );
    }
    if turns.iter().any(|e| e.tools != first.tools) {
        bail!("the tools array changed between the requests of one turn");
    }
    let called = stderr.contains("→ mcp");
    println!(
        "PASS  {:<44} {} request(s), one tools array, deferred: {deferred}; the model {}",
        "mcp: a turn carries the time server's tools",
        turns.len(),
        if called {
            "called an MCP tool"
        } else {
            "answered without calling it (a small base model)"
        }
    );
    Ok(())
}
