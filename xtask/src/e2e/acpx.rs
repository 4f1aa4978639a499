//! The ACP stage of `cargo xtask e2e`: with Node and npm on PATH, `acpx`
//! (a headless Agent Client Protocol client no one here wrote) is
//! installed from npm under `target/acpx` and runs one prompt against
//! `eonyx acp` and llama-server; it must print an answer, end the turn
//! with `end_turn`, and leave an eonyx session holding it. Skipped with a
//! message without npm (`--acpx-only` runs only this stage).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{local_model, util};

/// The version installed (0.x: pinned, its CLI may change).
const ACPX: &str = "acpx@0.19.1";

pub(super) fn acpx_stage(server_port: u16, bin: &Path) -> Result<()> {
    let (Some(npm), Some(_node)) = (
        local_model::find_on_path("npm"),
        local_model::find_on_path("node"),
    ) else {
        println!(
            "SKIP  acpx: Node and npm are not on PATH; install them to run a prompt through acpx"
        );
        return Ok(());
    };
    println!("== ACP stage: acpx runs a prompt against `eonyx acp`");
    let dir = util::target_dir().join("acpx");
    let acpx = dir.join("node_modules/.bin/acpx");
    if !acpx.is_file() {
        std::fs::create_dir_all(&dir)?;
        let status = Command::new(npm)
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(ACPX)
            .status()
            .context("running npm install acpx")?;
        if !status.success() || !acpx.is_file() {
            bail!("`npm install {ACPX}` failed ({status})");
        }
    }
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    std::fs::create_dir_all(&env.config_dir)?;
    std::fs::write(
        env.config_dir.join("config.toml"),
        local_model::config_snippet(server_port),
    )
    .context("writing the ACP stage's config")?;
    let agent = format!("{} acp", bin.display());
    let out = env
        .command(&acpx)
        .args(["--agent", &agent, "--approve-all", "--format", "text"])
        .args([
            "--timeout",
            "300",
            "exec",
            "Say hello in one short sentence.",
        ])
        .output()
        .context("running acpx")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !stdout.contains("end_turn") {
        bail!(
            "acpx did not finish a turn ({}): stdout: {stdout}; stderr: {stderr}",
            out.status
        );
    }
    let answer = stdout
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('['))
        .collect::<Vec<_>>()
        .join(" ");
    if answer.trim().is_empty() {
        bail!("acpx showed no answer: {stdout}");
    }
    let sessions = env
        .command(bin)
        .args(["sessions", "--json"])
        .output()
        .context("running eonyx sessions")?;
    let listed: serde_json::Value = serde_json::from_slice(&sessions.stdout)
        .context("`eonyx sessions --json` printed no JSON")?;
    let count = listed.as_array().map_or(0, Vec::len);
    if count != 1 {
        bail!("expected the one session acpx made, found {count}: {listed}");
    }
    println!(
        "PASS  {:<44} {}",
        "acpx: a prompt through eonyx acp",
        eonyx_core::text::ellipsize(answer.trim(), 80)
    );
    Ok(())
}
