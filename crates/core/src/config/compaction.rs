//! The resolved `[compaction]` settings (docs/compaction.md) and
//! `compaction.native`.

use serde::{Deserialize, Serialize};

use super::ReasoningEffort;

/// `compaction.native` / `models.<key>.compaction_native`: whether the
/// provider may write the compacted part itself (docs/compaction.md#native-compaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NativeMode {
    /// eonyx's own summarizer, always.
    #[default]
    Off,
    /// The provider compacts where its wire offers it (OpenAI Responses,
    /// Anthropic); eonyx's summarizer elsewhere and as the fallback.
    Auto,
}

impl NativeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NativeMode::Off => "off",
            NativeMode::Auto => "auto",
        }
    }
}

/// Resolved compaction settings (defaults: docs/config.md, section "Configuration reference").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionConfig {
    pub auto: bool,
    pub prune: bool,
    /// Percent of the effective context window, `1..=100`, fractional ok.
    pub threshold_percent: f64,
    /// Where a summary starts being written in the background, in percent
    /// of the window (docs/compaction.md#ahead-of-time-summaries); `None`:
    /// derived from `threshold_percent` ([`CompactionConfig::ahead_percent`]);
    /// `Some(0.0)`: off.
    pub ahead_percent: Option<f64>,
    pub buffer_tokens: u64,
    pub keep_turns: u32,
    /// Cap on the verbatim tail, 0 = no cap.
    pub keep_tokens: u64,
    pub summary_max_tokens: u32,
    pub chars_per_token: f64,
    pub image_tokens: u64,
    /// 0 = collapse off.
    pub tool_result_budget_chars: u64,
    pub keep_recent_results: u32,
    pub max_consecutive: u32,
    /// Summarizer model key; empty = the session's model.
    pub model: String,
    /// Summarizer temperature; `None` = the summarizer's default. A model
    /// that refuses it gets none (never a failed compaction).
    pub temperature: Option<f32>,
    /// `EONYX_AUTO_COMPACT_TOKENS`: a fixed trigger overriding the computed
    /// one; `Some(0)` disables auto compaction.
    pub trigger_tokens_override: Option<u64>,
    /// The summarizer's reasoning effort (default `low`), for models that
    /// reason; the summary request of a model configured without an effort
    /// carries none.
    pub reasoning_effort: ReasoningEffort,
    /// Who writes the compacted part where the wire offers it
    /// (`compaction.native`; `models.<key>.compaction_native` wins).
    pub native: NativeMode,
    /// `compaction.user_words_tokens`: the budget of `## What the user
    /// said` (docs/compaction.md#what-the-user-said); `None`: a fifth of
    /// the window, at most 20,000; `Some(0)`: off.
    pub user_words_tokens: Option<u64>,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            auto: true,
            prune: true,
            threshold_percent: 80.0,
            ahead_percent: None,
            buffer_tokens: 20_000,
            keep_turns: 3,
            keep_tokens: 0,
            summary_max_tokens: 4096,
            chars_per_token: 4.0,
            image_tokens: 4096,
            tool_result_budget_chars: 100_000,
            keep_recent_results: 6,
            max_consecutive: 3,
            model: String::new(),
            temperature: None,
            trigger_tokens_override: None,
            reasoning_effort: ReasoningEffort::Low,
            native: NativeMode::Off,
            user_words_tokens: None,
        }
    }
}

impl CompactionConfig {
    /// The ahead-of-time point in percent of the window: the configured
    /// `ahead_percent`, else `threshold_percent − 10` (half the threshold
    /// when that is less, so a low threshold still gets one). 0 = off.
    pub fn ahead_percent(&self) -> f64 {
        match self.ahead_percent {
            Some(p) if p.is_finite() => p.max(0.0),
            _ => (self.threshold_percent - 10.0).max(self.threshold_percent / 2.0),
        }
    }
}
