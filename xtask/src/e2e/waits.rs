//! The paced stage of `cargo xtask e2e` (docs/compaction.md#ahead-of-time-summaries):
//! the binary fed one line at a time, with a pause between an answer and the
//! next line (a user reading and typing), once with summaries written ahead
//! (the default `ahead_percent`) and once with `ahead_percent = 0`; the
//! user-visible wait of each compacting turn against a steady turn.
//! Measured, not asserted: a slow summarizer on a one-slot server may not
//! finish within the pause, and is then cancelled by the next line.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use eonyx_tests::Paced;
use serde_json::Value;

use crate::local_model;

/// The paced stage's config beyond the e2e one: on a slow or loaded
/// machine, shorter answers and summaries (a summary written ahead on a
/// one-slot server must finish within the pause) and an earlier trigger
/// (fewer turns to a compaction).
#[derive(Debug, Default, Clone)]
pub(super) struct Tuning {
    /// Answers capped at N tokens, summaries at 2N.
    pub max_tokens: Option<u32>,
    /// `compaction.threshold_percent` (`ahead_percent` follows it).
    pub threshold_percent: Option<f64>,
}

impl Tuning {
    /// The config with these caps and `ahead_percent = 0` when `ahead_off`.
    fn config(&self, server_port: u16, ahead_off: bool) -> String {
        let mut config = local_model::config_snippet(server_port);
        if let Some(n) = self.max_tokens {
            config = config.replace(
                "max_output_tokens = 128",
                &format!("max_output_tokens = {n}"),
            );
        }
        config.push_str("\n\n[compaction]");
        if let Some(n) = self.max_tokens {
            config.push_str(&format!("\nsummary_max_tokens = {}", 2 * n));
        }
        if let Some(p) = self.threshold_percent {
            config.push_str(&format!("\nthreshold_percent = {p}"));
        }
        if ahead_off {
            config.push_str("\nahead_percent = 0");
        }
        config
    }
}

/// What one paced run saw.
struct Run {
    steady: Vec<Duration>,
    /// Wait and compaction modes of each turn that compacted.
    compacting: Vec<(Duration, Vec<String>)>,
    started: usize,
    saved: usize,
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn paced(
    bin: &Path,
    server_port: u16,
    lines: &[String],
    pause: Duration,
    tuning: &Tuning,
    ahead_off: bool,
) -> Result<Run> {
    let env = eonyx_tests::TestEnv::new().context("creating temporary directories")?;
    let config = tuning.config(server_port, ahead_off);
    std::fs::create_dir_all(&env.config_dir)?;
    std::fs::write(env.config_dir.join("config.toml"), format!("{config}\n"))
        .context("writing the paced-stage config")?;
    let mut cmd = env.command(bin);
    cmd.arg("--json");
    let mut child =
        Paced::spawn(&mut cmd).with_context(|| format!("starting {}", bin.display()))?;
    let mut run = Run {
        steady: Vec::new(),
        compacting: Vec::new(),
        started: 0,
        saved: 0,
    };
    for line in lines {
        let sent = Instant::now();
        child.send(line).context("writing a line to eonyx")?;
        let Ok(events) = child.wait_for(|e| e["type"] == "turn_completed" || e["type"] == "error")
        else {
            bail!("eonyx stopped before the turn ended");
        };
        let waited = sent.elapsed();
        if events.last().is_some_and(|e| e["type"] == "error") {
            bail!(
                "a turn failed: {}",
                events.last().map_or_else(String::new, Value::to_string)
            );
        }
        let modes: Vec<String> = events
            .iter()
            .filter(|e| e["type"] == "compaction")
            .map(|e| e["mode"].as_str().unwrap_or("?").to_owned())
            .collect();
        eprintln!(
            "paced: turn waited {}{}",
            secs(waited),
            if modes.is_empty() {
                String::new()
            } else {
                format!(" (compacted: {})", modes.join("+"))
            }
        );
        if modes.is_empty() {
            run.steady.push(waited);
        } else {
            run.compacting.push((waited, modes));
        }
        std::thread::sleep(pause);
    }
    let (status, stderr, events) = child.finish().context("waiting for eonyx")?;
    run.started = events
        .iter()
        .filter(|e| e["type"] == "summary_draft_started")
        .count();
    run.saved = events
        .iter()
        .filter(|e| e["type"] == "summary_draft")
        .count();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
        bail!(
            "eonyx failed ({status}): {}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(run)
}

/// Run both configurations on `lines` and describe the waits.
pub(super) fn paced_stage(
    bin: &Path,
    server_port: u16,
    lines: &[String],
    pause: Duration,
    tuning: &Tuning,
) -> Result<Vec<String>> {
    let mut out = vec![format!(
        "== paced stage: {} turns, {} pause between an answer and the next line; {:?}",
        lines.len(),
        secs(pause),
        tuning
    )];
    for (label, off) in [
        ("summaries written ahead", false),
        ("ahead_percent = 0", true),
    ] {
        let run = paced(bin, server_port, lines, pause, tuning, off)?;
        let steady = median(&run.steady);
        let waits: Vec<String> = run
            .compacting
            .iter()
            .map(|(d, m)| {
                format!(
                    "{} ({}, {:.2}x)",
                    secs(*d),
                    m.join("+"),
                    d.as_secs_f64() / steady.as_secs_f64().max(1e-9)
                )
            })
            .collect();
        let worst = run
            .compacting
            .iter()
            .map(|(d, _)| *d)
            .max()
            .unwrap_or_default();
        out.push(format!(
            "{label}: steady turn {} (median of {}); compacting turns: {}; worst {:.2}x a steady turn (target 1.2x); summaries started ahead {}, saved {}",
            secs(steady),
            run.steady.len(),
            if waits.is_empty() {
                "none".to_owned()
            } else {
                waits.join(", ")
            },
            worst.as_secs_f64() / steady.as_secs_f64().max(1e-9),
            run.started,
            run.saved
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_caps_answers_and_summaries_and_sets_the_threshold() {
        let t = Tuning {
            max_tokens: Some(24),
            threshold_percent: Some(50.0),
        };
        let c = t.config(8089, true);
        assert!(c.contains("max_output_tokens = 24"), "{c}");
        assert!(!c.contains("max_output_tokens = 128"), "{c}");
        assert!(
            c.ends_with(
                "[compaction]\nsummary_max_tokens = 48\nthreshold_percent = 50\nahead_percent = 0"
            ),
            "{c}"
        );
        let plain = Tuning::default().config(8089, false);
        assert!(plain.contains("max_output_tokens = 128"), "{plain}");
        assert!(plain.ends_with("[compaction]"), "{plain}");
    }
}
