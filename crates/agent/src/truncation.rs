//! Detecting a server that truncates prompts silently (Ollama drops the
//! oldest messages of a prompt over its window without an error and reports
//! only what it kept). The signature: the request grew by a fair amount of
//! text, but the reported `prompt_tokens` stayed at a ceiling — they grew by
//! less than a tenth of what the calibrated estimate expects for the added
//! text (usually they fall, as whole old messages go). No tokenizer is off
//! from the estimate by 10×, so an honest count never looks like this;
//! requests that add images are not judged (their token cost varies).
//!
//! A truncated count is never fed to the estimator: it would learn a wrong
//! chars-per-token ratio and hide the truncation from then on.

use eonyx_compact::{Estimator, RequestSize};

/// The smallest growth (estimated tokens) that is judged.
const MIN_GROWTH_TOKENS: u64 = 32;
/// A report that grew by less than this share of the expected growth (in
/// percent) is at a ceiling.
const CEILING_GROWTH_PERCENT: u64 = 10;

/// Memory of the last untruncated report.
#[derive(Debug, Clone, Default)]
pub struct TruncationCheck {
    prev: Option<(RequestSize, u64)>,
    warned: bool,
}

/// What a report showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated {
    /// The window learned: the largest count the server evidently kept.
    pub window: u64,
    /// What the calibrated estimate expected for the request sent.
    pub expected: u64,
    /// Whether this is the first truncation seen (warn once).
    pub first: bool,
}

impl TruncationCheck {
    /// Judge the report `reported` for a request of `size`. `None`: not a
    /// truncation, and the report may calibrate the estimator.
    pub fn check(
        &mut self,
        size: &RequestSize,
        reported: u64,
        estimator: &Estimator,
    ) -> Option<Truncated> {
        if reported == 0 {
            return None;
        }
        if let Some((sent, kept)) = self.prev
            && size.chars > sent.chars
            && size.images == sent.images
        {
            let added = estimator.tokens_for(RequestSize::new(size.chars - sent.chars, 0));
            let expected = kept + added;
            if added >= MIN_GROWTH_TOKENS
                && reported * 100 <= kept * 100 + added * CEILING_GROWTH_PERCENT
            {
                let first = !self.warned;
                self.warned = true;
                return Some(Truncated {
                    window: kept.max(reported),
                    expected,
                    first,
                });
            }
        }
        self.prev = Some((*size, reported));
        None
    }

    /// Forget the last report (another session).
    pub fn forget(&mut self) {
        self.prev = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> Estimator {
        Estimator::new(4.0, 0)
    }

    #[test]
    fn growing_requests_with_growing_counts_are_fine() {
        let mut c = TruncationCheck::default();
        let e = est();
        for i in 1..=10u64 {
            let size = RequestSize::new((i * 4000) as usize, 0);
            // A tokenizer a bit off from the estimate is no truncation.
            assert_eq!(c.check(&size, i * 1100, &e), None, "step {i}");
        }
    }

    #[test]
    fn a_count_that_stops_growing_is_a_truncation_learned_once() {
        let mut c = TruncationCheck::default();
        let e = est();
        assert_eq!(c.check(&RequestSize::new(12_000, 0), 3000, &e), None);
        assert_eq!(c.check(&RequestSize::new(15_600, 0), 3900, &e), None);
        // Over a 4096 ceiling: the server dropped old messages, kept 3850.
        let t = c.check(&RequestSize::new(17_000, 0), 3850, &e).unwrap();
        assert_eq!((t.window, t.first), (3900, true));
        assert_eq!(t.expected, 3900 + 350);
        // The truncated count did not become the reference: still caught.
        let t = c.check(&RequestSize::new(18_000, 0), 3880, &e).unwrap();
        assert_eq!((t.window, t.first), (3900, false));
    }

    #[test]
    fn a_tokenizer_far_off_the_estimate_or_an_image_is_no_truncation() {
        let mut c = TruncationCheck::default();
        let e = Estimator::new(4.0, 4096);
        assert_eq!(c.check(&RequestSize::new(8_000, 0), 2000, &e), None);
        // A large whitespace-heavy file: 4000 estimated tokens were 1400.
        assert_eq!(c.check(&RequestSize::new(24_000, 0), 3400, &e), None);
        // An image the server counts as 300 tokens, not 4096.
        assert_eq!(c.check(&RequestSize::new(24_400, 1), 3800, &e), None);
    }

    #[test]
    fn small_growth_and_shrinking_requests_are_not_judged() {
        let mut c = TruncationCheck::default();
        let e = est();
        assert_eq!(c.check(&RequestSize::new(12_000, 0), 3000, &e), None);
        assert_eq!(c.check(&RequestSize::new(12_040, 0), 2990, &e), None);
        // After a compaction the request is smaller: a new reference.
        assert_eq!(c.check(&RequestSize::new(4_000, 0), 1000, &e), None);
        assert_eq!(c.check(&RequestSize::new(8_000, 0), 2000, &e), None);
    }
}
