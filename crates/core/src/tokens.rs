//! Token estimation primitives. Policy (learning the ratio, incremental
//! estimates of whole requests) lives in the compact crate; this is the one
//! place that turns characters into tokens.

/// Default characters per token before any provider usage is known.
pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;

/// Estimated tokens for `chars` characters at `chars_per_token`
/// (rounded up; a non-positive or non-finite ratio falls back to 4.0).
pub fn estimate(chars: usize, chars_per_token: f64) -> u64 {
    let ratio = if chars_per_token.is_finite() && chars_per_token > 0.0 {
        chars_per_token
    } else {
        DEFAULT_CHARS_PER_TOKEN
    };
    (chars as f64 / ratio).ceil() as u64
}

/// Estimated tokens for a text.
pub fn estimate_text(text: &str, chars_per_token: f64) -> u64 {
    estimate(text.chars().count(), chars_per_token)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rounds_up_and_guards_ratio() {
        assert_eq!(super::estimate(0, 4.0), 0);
        assert_eq!(super::estimate(1, 4.0), 1);
        assert_eq!(super::estimate(8, 4.0), 2);
        assert_eq!(super::estimate(8, 0.0), 2);
        assert_eq!(super::estimate(9, 3.0), 3);
        assert_eq!(super::estimate_text("héllo", 5.0), 1);
    }
}
