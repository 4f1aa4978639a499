//! The summary's token budgets (docs/compaction.md#the-summarizers-reserve):
//! its cap, what the trigger keeps free for the shared-prefix summarizer
//! request, and the least that request is sent with.

use eonyx_core::CompactionConfig;

/// The smallest summary budget the trigger keeps free.
pub const MIN_RESERVED_SUMMARY_TOKENS: u64 = 256;

/// The share of the summary's cap the trigger keeps free when that is more
/// than [`MIN_RESERVED_SUMMARY_TOKENS`].
pub const RESERVED_SUMMARY_FRACTION: f64 = 0.5;

/// Characters per token the reserve counts the instruction at: fewer than
/// English prose takes with common tokenizers (about 4), so the reserve
/// errs on the large side.
pub const INSTRUCTION_CHARS_PER_TOKEN: f64 = 3.0;

/// `max_tokens` for the summarizer: `summary_max_tokens`, but at most a
/// quarter of the window (at least 64) so small local models can answer.
pub fn summary_max_tokens(cfg: &CompactionConfig, window: u64) -> u64 {
    u64::from(cfg.summary_max_tokens).min((window / 4).max(64))
}

/// The summary budget the trigger keeps free: the larger of
/// [`MIN_RESERVED_SUMMARY_TOKENS`] and [`RESERVED_SUMMARY_FRACTION`] of
/// [`summary_max_tokens`], never more than that cap.
pub fn reserved_summary_tokens(cfg: &CompactionConfig, window: u64) -> u64 {
    let cap = summary_max_tokens(cfg, window);
    let share = (cap as f64 * RESERVED_SUMMARY_FRACTION).round() as u64;
    share.max(MIN_RESERVED_SUMMARY_TOKENS).min(cap)
}

/// The least room the shared-prefix request is sent with: half the
/// reserved budget. The other half absorbs what one step adds past the
/// trigger (the last reply, a tool result) before the trigger is checked.
pub fn min_shared_budget(cfg: &CompactionConfig, window: u64) -> u64 {
    (reserved_summary_tokens(cfg, window) / 2).max(1)
}

/// Tokens kept free besides the instruction and the summary: the chat
/// template's framing of one more message, and estimation slack.
pub fn shared_margin(window: u64) -> u64 {
    16 + window / 100
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_budget_is_the_larger_of_256_and_half_the_cap() {
        let c = CompactionConfig::default();
        // 200k: cap 4096, half of it.
        assert_eq!(reserved_summary_tokens(&c, 200_000), 2048);
        assert_eq!(min_shared_budget(&c, 200_000), 1024);
        // 4096: cap 1024 → 512; 2048: cap 512 → 256 (the floor).
        assert_eq!(reserved_summary_tokens(&c, 4096), 512);
        assert_eq!(reserved_summary_tokens(&c, 2048), 256);
        assert_eq!(min_shared_budget(&c, 2048), 128);
        // 1000: cap 250 → never above the cap.
        assert_eq!(reserved_summary_tokens(&c, 1000), 250);
        // A small configured cap: 256.
        let small = CompactionConfig {
            summary_max_tokens: 300,
            ..CompactionConfig::default()
        };
        assert_eq!(reserved_summary_tokens(&small, 200_000), 256);
    }
}
