//! Estimating the size of a request in tokens, calibrated by what the
//! provider reports.

use std::ops::{Add, AddAssign};

use eonyx_core::{Message, SystemPrompt, ToolDef};

/// The size of (part of) a request: characters of text and number of images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestSize {
    pub chars: usize,
    pub images: usize,
}

impl RequestSize {
    pub fn new(chars: usize, images: usize) -> Self {
        Self { chars, images }
    }

    /// Size of one message as sent.
    pub fn of_message(m: &Message) -> Self {
        Self {
            chars: m.chars(),
            images: m.content.image_count(),
        }
    }
}

impl Add for RequestSize {
    type Output = RequestSize;
    fn add(self, o: RequestSize) -> RequestSize {
        RequestSize {
            chars: self.chars + o.chars,
            images: self.images + o.images,
        }
    }
}

impl AddAssign for RequestSize {
    fn add_assign(&mut self, o: RequestSize) {
        self.chars += o.chars;
        self.images += o.images;
    }
}

/// Size of a whole request: system prompt (both parts), messages with their
/// tool calls and results, tool definitions. A full scan; during a session
/// use [`crate::ContextView::size`] plus the system and tool sizes instead.
pub fn request_size(system: &SystemPrompt, messages: &[Message], tools: &[ToolDef]) -> RequestSize {
    let mut s = RequestSize::new(system.chars(), 0);
    for m in messages {
        s += RequestSize::of_message(m);
    }
    for t in tools {
        s.chars += t.chars();
    }
    s
}

/// Learned ratios are clamped to this range.
pub const MIN_CHARS_PER_TOKEN: f64 = 1.0;
pub const MAX_CHARS_PER_TOKEN: f64 = 8.0;

/// Per-model token estimator.
///
/// An estimate starts from the last provider-reported prompt tokens and adds
/// an estimate for the characters (and images) added since; when the request
/// shrank (after a compaction) it falls back to the learned ratio. The
/// chars-per-token ratio is learned from every usage report: the first one
/// replaces the configured guess, later ones are averaged in (half weight).
#[derive(Debug, Clone, PartialEq)]
pub struct Estimator {
    ratio: f64,
    image_tokens: u64,
    observations: u64,
    anchor: Option<(RequestSize, u64)>,
}

fn sane(r: f64) -> f64 {
    if r.is_finite() && r > 0.0 {
        r.clamp(MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN)
    } else {
        eonyx_core::tokens::DEFAULT_CHARS_PER_TOKEN
    }
}

impl Estimator {
    pub fn new(chars_per_token: f64, image_tokens: u64) -> Self {
        Self {
            ratio: sane(chars_per_token),
            image_tokens,
            observations: 0,
            anchor: None,
        }
    }

    /// Start from a ratio learned earlier (e.g. persisted by the agent); it
    /// counts as calibrated, so the next report is averaged in.
    pub fn with_learned_ratio(mut self, ratio: f64) -> Self {
        self.ratio = sane(ratio);
        self.observations = self.observations.max(1);
        self
    }

    /// The current chars-per-token ratio.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// Whether at least one usage report (or a seeded ratio) calibrated it.
    pub fn calibrated(&self) -> bool {
        self.observations > 0
    }

    pub fn image_tokens(&self) -> u64 {
        self.image_tokens
    }

    /// Tokens for a size by the ratio alone (no anchor).
    pub fn tokens_for(&self, size: RequestSize) -> u64 {
        eonyx_core::tokens::estimate(size.chars, self.ratio)
            + size.images as u64 * self.image_tokens
    }

    /// Estimated prompt tokens of a request of `size` (the whole request:
    /// system, messages, tools). O(1).
    pub fn estimate(&self, size: &RequestSize) -> u64 {
        match self.anchor {
            Some((sent, reported)) if size.chars >= sent.chars && size.images >= sent.images => {
                let added = RequestSize::new(size.chars - sent.chars, size.images - sent.images);
                reported + self.tokens_for(added)
            }
            _ => self.tokens_for(*size),
        }
    }

    /// Learn from a usage report: `sent` is the size of the request that was
    /// sent, `reported_prompt_tokens` what the provider counted for it.
    pub fn observe(&mut self, sent: &RequestSize, reported_prompt_tokens: u64) {
        if reported_prompt_tokens == 0 {
            return;
        }
        self.anchor = Some((*sent, reported_prompt_tokens));
        let image_part = sent.images as u64 * self.image_tokens;
        let text_tokens = reported_prompt_tokens.saturating_sub(image_part);
        // Tiny requests say more about per-message overhead than about the
        // ratio; learn only from requests with some substance.
        if text_tokens < 16 || sent.chars < 64 {
            return;
        }
        let sample = sane(sent.chars as f64 / text_tokens as f64);
        self.ratio = if self.observations == 0 {
            sample
        } else {
            sane(0.5 * self.ratio + 0.5 * sample)
        };
        self.observations += 1;
    }

    /// Forget the last report (the request it described no longer exists,
    /// e.g. after switching models). Compaction does not need this: a
    /// smaller request falls back to the ratio by itself.
    pub fn reset_anchor(&mut self) {
        self.anchor = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tokenizer counting 3 chars per token.
    fn true_count(chars: usize) -> u64 {
        (chars as u64).div_ceil(3)
    }

    #[test]
    fn one_observation_calibrates_to_within_5_percent() {
        let mut e = Estimator::new(4.0, 4096);
        let first = RequestSize::new(30_000, 0);
        // Uncalibrated, 4 chars/token under-counts by a quarter.
        assert_eq!(e.estimate(&first), 7_500);
        e.observe(&first, true_count(30_000));
        assert!((e.ratio() - 3.0).abs() < 0.01, "{}", e.ratio());
        for chars in [31_000usize, 45_000, 90_000, 12_000, 2_000] {
            let est = e.estimate(&RequestSize::new(chars, 0)) as f64;
            let truth = true_count(chars) as f64;
            assert!(
                (est - truth).abs() / truth <= 0.05,
                "{chars}: est {est} vs {truth}"
            );
        }
    }

    #[test]
    fn estimate_starts_from_the_reported_count() {
        let mut e = Estimator::new(4.0, 1000);
        let sent = RequestSize::new(4000, 1);
        e.observe(&sent, 2500);
        // The report wins for what was sent, images are added at image_tokens.
        assert_eq!(e.estimate(&sent), 2500);
        let grown = RequestSize::new(4000 + 300, 2);
        let per = e.tokens_for(RequestSize::new(300, 0));
        assert_eq!(e.estimate(&grown), 2500 + per + 1000);
        // Shrunk (after a compaction): ratio only.
        let small = RequestSize::new(1000, 0);
        assert_eq!(e.estimate(&small), e.tokens_for(small));
    }

    #[test]
    fn ratio_is_smoothed_and_clamped() {
        let mut e = Estimator::new(4.0, 0);
        e.observe(&RequestSize::new(1000, 0), 500); // 2.0
        assert!((e.ratio() - 2.0).abs() < 1e-9);
        e.observe(&RequestSize::new(1000, 0), 250); // 4.0 → averaged to 3.0
        assert!((e.ratio() - 3.0).abs() < 1e-9);
        e.observe(&RequestSize::new(100_000, 0), 20); // 5000 → clamped at 8
        assert!(e.ratio() <= MAX_CHARS_PER_TOKEN);
        let mut e = Estimator::new(0.0, 0);
        assert_eq!(e.ratio(), 4.0);
        e.observe(&RequestSize::new(100, 0), 100_000); // 0.001 → clamped at 1
        assert_eq!(e.ratio(), 1.0);
        let e = Estimator::new(4.0, 0).with_learned_ratio(2.5);
        assert!(e.calibrated());
        assert_eq!(e.ratio(), 2.5);
    }

    #[test]
    fn request_size_counts_everything_sent() {
        let sys = SystemPrompt {
            stable: "abc".into(),
            suffix: "de".into(),
        };
        let mut img = Message::user("");
        img.content = eonyx_core::Content::Parts(vec![
            eonyx_core::Part::Text { text: "see".into() },
            eonyx_core::Part::Image {
                media_type: None,
                data: Some("AAAA".repeat(1000)),
                url: None,
            },
        ]);
        let msgs = vec![Message::user("hello"), img];
        let tools = vec![ToolDef {
            name: "t".into(),
            description: "d".into(),
            parameters: serde_json::json!({}),
        }];
        let s = request_size(&sys, &msgs, &tools);
        assert_eq!(s.images, 1);
        // base64 transport is not counted as text
        assert_eq!(s.chars, (3 + 2 + 2) + 5 + 3 + (1 + 1 + 2));
    }
}
