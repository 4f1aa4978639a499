//! When to compact (docs/compaction.md#trigger): the trigger, the headroom, and the targets a
//! compaction aims for.

use eonyx_core::CompactionConfig;
use eonyx_core::config::FALLBACK_CONTEXT_WINDOW;

use crate::budget::{
    INSTRUCTION_CHARS_PER_TOKEN, reserved_summary_tokens, shared_margin, summary_max_tokens,
};
use crate::shared::longest_instruction_chars;

/// Model limits after config and server detection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Total context window (input + output). `None` = unknown (120,000 is used).
    pub context_window: Option<u64>,
    /// Separate input limit, when the model has one.
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
}

/// The resolved trigger for one model and config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    /// Compact before a provider step whose estimated request exceeds this.
    /// `None` = automatic compaction is off.
    pub tokens: Option<u64>,
    /// The effective context window (fallback applied).
    pub window: u64,
    /// Headroom kept below the window: `buffer_tokens` capped at a quarter
    /// of the window, never less than `max_output_tokens`.
    pub headroom: u64,
    /// Room kept below the window for the shared-prefix summarizer request
    /// ([`summarizer_reserve`]).
    pub reserve: u64,
    /// From this estimate on, an idle session writes the next summary in
    /// the background (docs/compaction.md#ahead-of-time-summaries): the
    /// trigger scaled by `ahead_percent / threshold_percent`. `None` when
    /// `ahead_percent` is 0 or automatic compaction is off.
    pub ahead: Option<u64>,
}

impl Trigger {
    /// The largest request the model can take while leaving the headroom:
    /// the trigger when auto compaction is on, otherwise `window − headroom`.
    pub fn ceiling(&self) -> u64 {
        self.tokens
            .unwrap_or_else(|| self.window.saturating_sub(self.headroom).max(1))
    }
}

/// Headroom for a window: the buffer capped at a quarter of the window, never
/// below the output limit (itself capped at half the window so a
/// misconfigured output limit cannot leave no room at all).
fn headroom(buffer: u64, window: u64, max_output: Option<u64>) -> u64 {
    let out = max_output.unwrap_or(0).min(window / 2);
    buffer.min(window / 4).max(out)
}

/// What the trigger keeps free for the compaction's own shared-prefix
/// request (docs/compaction.md#the-summarizers-reserve): the longest
/// instruction (counted at `INSTRUCTION_CHARS_PER_TOKEN`), the template
/// margin, and [`reserved_summary_tokens`] for the summary.
pub fn summarizer_reserve(cfg: &CompactionConfig, window: u64) -> u64 {
    let instruction =
        (longest_instruction_chars(cfg, window) as f64 / INSTRUCTION_CHARS_PER_TOKEN).ceil() as u64;
    instruction + shared_margin(window) + reserved_summary_tokens(cfg, window)
}

/// docs/compaction.md#trigger: `min(threshold% × window, window − headroom,
/// window − reserve, max_input − buffer)`.
///
/// The input limit already excludes output tokens, so only the (capped)
/// buffer is subtracted from it; the output reserve applies to the total
/// window. This reproduces the seed's figures: 400k window / 272k input /
/// 20k buffer / 128k output at 65% → 252k.
pub fn trigger(cfg: &CompactionConfig, limits: &Limits) -> Trigger {
    let window = limits
        .context_window
        .filter(|w| *w > 0)
        .unwrap_or(FALLBACK_CONTEXT_WINDOW);
    let headroom = headroom(cfg.buffer_tokens, window, limits.max_output_tokens);
    let reserve = summarizer_reserve(cfg, window);
    let tokens = if !cfg.auto {
        None
    } else if let Some(o) = cfg.trigger_tokens_override {
        (o > 0).then_some(o)
    } else {
        let pct = if cfg.threshold_percent.is_finite() {
            cfg.threshold_percent.clamp(1.0, 100.0)
        } else {
            80.0
        };
        let by_pct = (window as f64 * pct / 100.0).round() as u64;
        let mut t = by_pct
            .min(window.saturating_sub(headroom))
            .min(window.saturating_sub(reserve));
        if let Some(input) = limits.max_input_tokens.filter(|i| *i > 0) {
            let buffer = cfg.buffer_tokens.min(input / 4);
            t = t.min(input.saturating_sub(buffer));
        }
        Some(t.max(1))
    };
    let ahead = tokens.and_then(|t| {
        let (a, pct) = (cfg.ahead_percent(), cfg.threshold_percent);
        (a > 0.0 && pct.is_finite() && a < pct)
            .then(|| ((t as f64 * a / pct).round() as u64).clamp(1, t))
    });
    Trigger {
        tokens,
        window,
        headroom,
        reserve,
        ahead,
    }
}

/// What an overflow compaction aims the whole request at. With the limit
/// the provider reported, compact against that (smaller) window; without
/// one, our figures were evidently too optimistic: aim at half the ceiling.
pub fn overflow_target(limit: Option<u64>, trigger: &Trigger) -> u64 {
    match limit.filter(|l| *l > 0) {
        Some(l) => {
            let learned = l.saturating_sub(trigger.headroom.min(l / 4));
            trigger.ceiling().min(learned).max(1)
        }
        None => (trigger.ceiling() / 2).max(1),
    }
}

/// What a proactive or manual compaction aims the whole request at: three
/// quarters of the ceiling, so the next few steps do not compact again.
pub fn request_target(trigger: &Trigger) -> u64 {
    (trigger.ceiling() / 4 * 3).max(1)
}

/// Budget for the retained messages (the `target_tokens` of
/// [`crate::plan`]): the request target minus everything that is not a
/// message (`overhead_tokens`: system prompt without the old summary, tool
/// definitions) and minus room for the new summary.
pub fn tail_budget(
    request_target: u64,
    overhead_tokens: u64,
    cfg: &CompactionConfig,
    window: u64,
) -> u64 {
    request_target
        .saturating_sub(overhead_tokens)
        .saturating_sub(summary_max_tokens(cfg, window))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pct: f64) -> CompactionConfig {
        CompactionConfig {
            threshold_percent: pct,
            ..CompactionConfig::default()
        }
    }

    fn lim(w: Option<u64>, i: Option<u64>, o: Option<u64>) -> Limits {
        Limits {
            context_window: w,
            max_input_tokens: i,
            max_output_tokens: o,
        }
    }

    #[test]
    fn seed_200k_at_65_percent_is_130k() {
        let t = trigger(&cfg(65.0), &lim(Some(200_000), None, None));
        assert_eq!(t.tokens, Some(130_000));
        assert_eq!(t.headroom, 20_000);
    }

    #[test]
    fn seed_subscription_limits_give_252k() {
        // 400k window, 272k input, 20k buffer, 65%: 260k by percent, but the
        // input limit minus the buffer is lower. Also with the 128k output cap.
        let t = trigger(&cfg(65.0), &lim(Some(400_000), Some(272_000), None));
        assert_eq!(t.tokens, Some(252_000));
        let t = trigger(
            &cfg(65.0),
            &lim(Some(400_000), Some(272_000), Some(128_000)),
        );
        assert_eq!(t.tokens, Some(252_000));
    }

    #[test]
    fn seed_api_catalog_gives_682_5k() {
        // The documented formula: min(0.65 × 1,050,000 = 682,500; 1,050,000 − 20,000;
        // 922,000 − 20,000) = 682,500: the docs and the seed agree.
        let t = trigger(&cfg(65.0), &lim(Some(1_050_000), Some(922_000), None));
        assert_eq!(t.tokens, Some(682_500));
        let t = trigger(
            &cfg(65.0),
            &lim(Some(1_050_000), Some(922_000), Some(128_000)),
        );
        assert_eq!(t.tokens, Some(682_500));
    }

    #[test]
    fn hundred_percent_keeps_the_buffer() {
        let t = trigger(&cfg(100.0), &lim(Some(200_000), None, None));
        assert_eq!(t.tokens, Some(180_000));
        let t = trigger(&cfg(100.0), &lim(Some(200_000), None, Some(32_000)));
        assert_eq!(t.tokens, Some(168_000));
        // Out-of-range percentages are clamped, never past the headroom.
        let t = trigger(&cfg(250.0), &lim(Some(200_000), None, None));
        assert_eq!(t.tokens, Some(180_000));
    }

    #[test]
    fn unknown_window_uses_fallback() {
        let t = trigger(&cfg(80.0), &Limits::default());
        assert_eq!(t.window, 120_000);
        assert_eq!(t.tokens, Some(96_000));
    }

    #[test]
    fn small_local_windows_get_a_sensible_trigger() {
        // 2k window, 256 output: buffer capped at 512 → 2048 − 512 = 1536
        // (below 80% = 1638); the summarizer's reserve (its instruction,
        // the margin and a 256-token summary) fits in that headroom.
        let t = trigger(&cfg(80.0), &lim(Some(2048), None, Some(256)));
        assert_eq!(t.headroom, 512);
        assert_eq!(t.reserve, summarizer_reserve(&cfg(80.0), 2048));
        assert!((400..=512).contains(&t.reserve), "{}", t.reserve);
        assert_eq!(t.tokens, Some(1536));
        // 4k window with a 1500-token output limit: the output limit wins
        // over the quarter-window cap.
        let t = trigger(&cfg(80.0), &lim(Some(4096), None, Some(1500)));
        assert_eq!(t.headroom, 1500);
        assert_eq!(t.tokens, Some(2596));
        // 8k at 65%: 5325 by percent, headroom 2048.
        let t = trigger(&cfg(65.0), &lim(Some(8192), None, None));
        assert_eq!(t.tokens, Some(5325));
        // Every small window leaves room for the output and a positive trigger.
        for w in [2048u64, 3000, 4096, 8192] {
            let t = trigger(&cfg(100.0), &lim(Some(w), None, Some(512)));
            let tok = t.tokens.unwrap_or(0);
            assert!(tok > w / 2 && tok + 512 <= w, "window {w}: {tok}");
            assert!(tok + t.reserve <= w, "window {w}: {tok}");
        }
    }

    #[test]
    fn the_trigger_keeps_room_for_the_shared_prefix_summarizer() {
        // The setup: 4096 window, 80%, 256-token buffer, 64-token
        // output cap. The trigger is 80% (3277) or lower, so that the
        // instruction and a 512-token summary fit above it.
        let c = CompactionConfig {
            threshold_percent: 80.0,
            buffer_tokens: 256,
            ..CompactionConfig::default()
        };
        let t = trigger(&c, &lim(Some(4096), None, Some(64)));
        assert_eq!(t.headroom, 256);
        let instruction = (crate::shared::longest_instruction_chars(&c, 4096) as f64 / 3.0).ceil();
        assert_eq!(t.reserve, instruction as u64 + 16 + 40 + 512);
        assert_eq!(t.tokens, Some((4096 - t.reserve).min(3277)));
        // At 95% the reserve decides.
        let high = CompactionConfig {
            threshold_percent: 95.0,
            ..c.clone()
        };
        let t = trigger(&high, &lim(Some(4096), None, Some(64)));
        assert_eq!(t.reserve, summarizer_reserve(&high, 4096));
        assert!(t.tokens < Some(3891), "{:?}", t.tokens);
        assert_eq!(t.tokens, Some(4096 - t.reserve));
        // At 2048 the summary part of the reserve is the 256-token floor.
        let t = trigger(&c, &lim(Some(2048), None, Some(64)));
        let instruction = (crate::shared::longest_instruction_chars(&c, 2048) as f64 / 3.0).ceil();
        assert_eq!(t.reserve, instruction as u64 + 16 + 20 + 256);
        // Large windows: the percentage decides, as before.
        let t = trigger(&c, &lim(Some(200_000), None, None));
        assert_eq!(t.tokens, Some(160_000));
        assert!(t.reserve < 5_000, "{}", t.reserve);
    }

    #[test]
    fn override_and_auto_off() {
        let mut c = cfg(65.0);
        c.trigger_tokens_override = Some(5000);
        assert_eq!(trigger(&c, &Limits::default()).tokens, Some(5000));
        c.trigger_tokens_override = Some(0);
        assert_eq!(trigger(&c, &Limits::default()).tokens, None);
        let mut c = cfg(65.0);
        c.auto = false;
        let t = trigger(&c, &lim(Some(10_000), None, None));
        assert_eq!(t.tokens, None);
        assert_eq!(t.ceiling(), 7_500);
    }

    #[test]
    fn the_ahead_point_sits_below_the_trigger_as_the_percentages_say() {
        // Default: ten points below the threshold, of the window.
        let t = trigger(&cfg(80.0), &lim(Some(200_000), None, None));
        assert_eq!((t.tokens, t.ahead), (Some(160_000), Some(140_000)));
        // A trigger lowered by the headroom lowers it in proportion.
        let t = trigger(&cfg(80.0), &lim(Some(4096), None, Some(1500)));
        assert_eq!(t.tokens, Some(2596));
        assert_eq!(t.ahead, Some(2272));
        // Set explicitly; 0 is off; so is auto compaction off.
        let mut c = cfg(80.0);
        c.ahead_percent = Some(50.0);
        let t = trigger(&c, &lim(Some(200_000), None, None));
        assert_eq!(t.ahead, Some(100_000));
        c.ahead_percent = Some(0.0);
        assert_eq!(trigger(&c, &lim(Some(200_000), None, None)).ahead, None);
        let mut c = cfg(80.0);
        c.auto = false;
        assert_eq!(trigger(&c, &lim(Some(200_000), None, None)).ahead, None);
        // A fixed trigger (EONYX_AUTO_COMPACT_TOKENS) keeps the ratio.
        let mut c = cfg(80.0);
        c.trigger_tokens_override = Some(8000);
        assert_eq!(trigger(&c, &Limits::default()).ahead, Some(7000));
    }

    #[test]
    fn overflow_target_uses_the_reported_limit() {
        let t = trigger(&cfg(80.0), &lim(Some(8192), None, None));
        assert_eq!(t.tokens, Some(6144));
        // The server says 4096: compact to 4096 − min(2048, 1024) = 3072.
        assert_eq!(overflow_target(Some(4096), &t), 3072);
        // A larger reported limit never raises the target.
        assert_eq!(overflow_target(Some(100_000), &t), 6144);
        assert_eq!(overflow_target(None, &t), 3072);
    }

    #[test]
    fn targets_leave_room_for_the_summary() {
        let c = cfg(80.0);
        assert_eq!(summary_max_tokens(&c, 200_000), 4096);
        assert_eq!(summary_max_tokens(&c, 2048), 512);
        let t = trigger(&c, &lim(Some(200_000), None, None));
        assert_eq!(request_target(&t), 120_000);
        assert_eq!(tail_budget(120_000, 10_000, &c, 200_000), 105_904);
        assert_eq!(tail_budget(1000, 10_000, &c, 200_000), 0);
    }
}
