//! What a session's tokens cost (docs/sessions.md, section "Cost"): the prices of a
//! model (`models.<key>.pricing`, USD per million tokens) applied to the
//! usage the server reported. Nothing here guesses a price: without
//! pricing there is no cost.

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// USD per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Prompt tokens neither read from nor written to the prompt cache.
    pub input: f64,
    /// Prompt tokens served from the prompt cache.
    pub cached_input: f64,
    /// Completion tokens (reasoning included).
    pub output: f64,
    /// Prompt tokens written to the prompt cache (Anthropic).
    pub cache_write: f64,
}

impl Pricing {
    /// The cost of one request's reported usage, in USD. The prompt's
    /// cached and cache-written tokens are priced as such, the rest of the
    /// prompt as input.
    pub fn cost_usd(&self, u: &Usage) -> f64 {
        let fresh = u
            .prompt_tokens
            .saturating_sub(u.cached_tokens)
            .saturating_sub(u.cache_write_tokens);
        (fresh as f64 * self.input
            + u.cached_tokens as f64 * self.cached_input
            + u.cache_write_tokens as f64 * self.cache_write
            + u.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// A sum of costs that stays unknown once one priced part is missing:
/// a total that left out an unpriced model would be a guess.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spend {
    usd: f64,
    /// Some usage had no pricing.
    unpriced: bool,
}

impl Spend {
    /// Add one request's usage under `pricing`.
    pub fn add(&mut self, pricing: Option<&Pricing>, u: &Usage) {
        match pricing {
            Some(p) => self.usd += p.cost_usd(u),
            None => self.unpriced = true,
        }
    }

    /// Add another total (a child session's).
    pub fn merge(&mut self, other: Spend) {
        self.usd += other.usd;
        self.unpriced |= other.unpriced;
    }

    /// The total in USD, or `None` when some usage had no pricing.
    pub fn usd(&self) -> Option<f64> {
        (!self.unpriced).then_some(self.usd)
    }
}

/// `$0.0123`: four decimals under a dollar, two above.
pub fn format_usd(usd: f64) -> String {
    if usd < 1.0 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dollars per million tokens of each kind.
    fn pricing(input: f64, cached_input: f64, output: f64, cache_write: f64) -> Pricing {
        Pricing {
            input,
            cached_input,
            output,
            cache_write,
        }
    }

    #[test]
    fn each_kind_of_token_has_its_price() {
        let p = pricing(3.0, 0.3, 15.0, 3.75);
        let u = Usage {
            prompt_tokens: 2112,
            completion_tokens: 35,
            cached_tokens: 2000,
            cache_write_tokens: 100,
            reasoning_tokens: 0,
        };
        let want = (12.0 * 3.0 + 2000.0 * 0.3 + 100.0 * 3.75 + 35.0 * 15.0) / 1e6;
        assert!((p.cost_usd(&u) - want).abs() < 1e-12);
    }

    #[test]
    fn a_total_with_an_unpriced_part_is_unknown() {
        let p = pricing(1.0, 1.0, 1.0, 1.0);
        let u = Usage {
            prompt_tokens: 1_000_000,
            ..Usage::default()
        };
        let mut s = Spend::default();
        assert_eq!(s.usd(), Some(0.0));
        s.add(Some(&p), &u);
        assert_eq!(s.usd(), Some(1.0));
        let mut child = Spend::default();
        child.add(None, &u);
        s.merge(child);
        assert_eq!(s.usd(), None);
        assert_eq!(format_usd(0.01234), "$0.0123");
        assert_eq!(format_usd(12.345), "$12.35");
    }
}
