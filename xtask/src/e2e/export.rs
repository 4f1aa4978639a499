//! The export stage of `cargo xtask e2e` (issue 39): a real session
//! against llama-server (turns that compact, a manual compaction, a
//! rewind), exported as HTML and Markdown by the binary, then the page
//! rendered by headless Chromium when it is installed (`apt-get install
//! chromium`). The screenshot is left in `target/e2e-export/` for a person
//! to look at; `docs/export-html.png` is one such screenshot.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{local_model, util};

/// Where the stage leaves the page and its screenshot.
pub(crate) fn out_dir() -> PathBuf {
    util::target_dir().join("e2e-export")
}

/// The lines fed to the binary: turns that fill the window, a manual
/// compaction and a rewind among them.
fn lines(turns: usize) -> String {
    let mut out = super::turn_lines(turns);
    let at = out
        .match_indices('\n')
        .nth(turns / 2)
        .map_or(out.len(), |(i, _)| i + 1);
    out.insert_str(at, "/compact keep the code words\n/rewind\n");
    out.push_str("What was code word 1? Answer with <b>markup</b> and </script> as plain text.\n");
    out
}

pub(crate) fn export_stage(bin: &Path, port: u16, turns: usize) -> Result<()> {
    println!("== export stage: {turns} turns, then sessions export --format html|markdown");
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    std::fs::create_dir_all(&env.config_dir)?;
    let config = format!(
        "{}\npricing = {{ input = 0.10, cached_input = 0.01, output = 0.40 }}\n",
        local_model::config_snippet(port)
    );
    std::fs::write(env.config_dir.join("config.toml"), config).context("writing the config")?;
    let mut child = env
        .command(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        if let Err(e) = stdin.write_all(lines(turns).as_bytes()) {
            eprintln!("note: eonyx stopped reading its stdin early ({e})");
        }
    }
    let out = child.wait_with_output()?;
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
    if compactions == 0 {
        bail!("the exported session has no compaction to mark; raise --turns");
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
