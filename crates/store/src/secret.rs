//! The secret detector (docs/memory.md#secrets): the one check of whether
//! a text holds a secret, used by everything that writes memory (`memory
//! add`, the `memory` tool, mining's proposals and their review) and by
//! mining's transcript, which is redacted with it before it is sent.
//!
//! It finds:
//! - the value of a provider key variable or a configured `api_key_env`
//!   (passed in as `known`), in any case and with spaces removed;
//! - the shapes of well-known tokens, after gitleaks' rules
//!   (github.com/gitleaks/gitleaks, `config/gitleaks.toml`): AWS access
//!   key ids and secret keys, GitHub tokens (`ghp_`, `gho_`, `ghu_`,
//!   `ghs_`, `ghr_`, `github_pat_`), OpenAI (`sk-`, `sk-proj-`) and
//!   Anthropic (`sk-ant-`) keys, Slack tokens (`xox?-`), JWTs, PEM private
//!   keys, URLs with a password (`scheme://user:pass@`), and assignments
//!   to a variable named like a secret (`export X_TOKEN=…`, `password:
//!   …`);
//! - any run of 32 or more token characters (`A-Za-z0-9+/=_-`) that mixes
//!   upper case, lower case and digits with a Shannon entropy of at least
//!   [`ENTROPY_BITS`] bits per character (a base64 blob, a random key);
//!   identifiers, paths and hex digests do not qualify.
//!
//! The patterns are ASCII byte patterns (`regex::bytes`), one pass each;
//! the whole check costs well under 1 ms per 100 KB (`cargo xtask bench`).

use std::sync::LazyLock;

use regex::bytes::Regex;

/// What kind of secret a text holds; said in a refusal, never the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    KeyValue,
    PrivateKey,
    AwsAccessKey,
    AwsSecretKey,
    GitHubToken,
    AnthropicKey,
    OpenAiKey,
    SlackToken,
    Jwt,
    UrlPassword,
    Assignment,
    HighEntropy,
}

impl SecretKind {
    /// As said in a refusal: "it holds an API key value".
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::KeyValue => "the value of an API key variable",
            SecretKind::PrivateKey => "a private key",
            SecretKind::AwsAccessKey => "an AWS access key id",
            SecretKind::AwsSecretKey => "an AWS secret access key",
            SecretKind::GitHubToken => "a GitHub token",
            SecretKind::AnthropicKey => "an Anthropic API key",
            SecretKind::OpenAiKey => "an OpenAI-style API key (sk-…)",
            SecretKind::SlackToken => "a Slack token",
            SecretKind::Jwt => "a JSON web token",
            SecretKind::UrlPassword => "a URL with a password (user:pass@)",
            SecretKind::Assignment => "a value assigned to a secret-named variable",
            SecretKind::HighEntropy => "a random-looking string (a key or token, it seems)",
        }
    }

    /// A short name for `[redacted: …]`.
    pub fn label(self) -> &'static str {
        match self {
            SecretKind::KeyValue => "key",
            SecretKind::PrivateKey => "private key",
            SecretKind::AwsAccessKey | SecretKind::AwsSecretKey => "AWS key",
            SecretKind::GitHubToken => "GitHub token",
            SecretKind::AnthropicKey | SecretKind::OpenAiKey => "API key",
            SecretKind::SlackToken => "Slack token",
            SecretKind::Jwt => "JWT",
            SecretKind::UrlPassword => "URL password",
            SecretKind::Assignment => "secret",
            SecretKind::HighEntropy => "random string",
        }
    }
}

/// Bits per character a token needs to count as random.
pub const ENTROPY_BITS: f64 = 4.2;
/// The shortest token judged by its entropy.
pub const ENTROPY_MIN_CHARS: usize = 32;
/// Known values shorter than this are not looked for.
const MIN_KNOWN_CHARS: usize = 8;

/// The token shapes, most specific first (the first that matches names
/// the kind).
static RULES: LazyLock<Vec<(SecretKind, Regex)>> = LazyLock::new(|| {
    [
        (
            SecretKind::PrivateKey,
            // The whole block, to its END line (or the text's end).
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)",
        ),
        (
            SecretKind::AwsAccessKey,
            r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
        ),
        (
            SecretKind::AwsSecretKey,
            r#"(?i)aws.{0,20}(?:secret|key).{0,20}?['"]?\s*[:=]\s*['"]?[A-Za-z0-9/+=]{40}\b"#,
        ),
        (
            SecretKind::GitHubToken,
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        ),
        (SecretKind::AnthropicKey, r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        (
            SecretKind::OpenAiKey,
            r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        ),
        (SecretKind::SlackToken, r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        (
            SecretKind::Jwt,
            r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        ),
        (
            SecretKind::UrlPassword,
            r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s/:@]{1,100}:[^\s/@]{1,200}@[^\s/@]",
        ),
        (
            SecretKind::Assignment,
            r#"(?i)\b[A-Z0-9_]{0,40}(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_]{0,40}['"]?\s*[:=]\s*['"]?[^\s'"$<{(\[][^\s'"]{7,}"#,
        ),
    ]
    .into_iter()
    .filter_map(|(kind, pattern)| {
        // ASCII-only classes and word boundaries: one fast pass each.
        Regex::new(&format!("(?-u){pattern}")).ok().map(|re| (kind, re))
    })
    .collect()
});

/// The secret `text` holds, if any: one of `known` (key values), a token
/// shape, or a random-looking string.
pub fn find(text: &str, known: &[String]) -> Option<SecretKind> {
    if holds_known(text, known) {
        return Some(SecretKind::KeyValue);
    }
    let bytes = text.as_bytes();
    if let Some((kind, _)) = RULES.iter().find(|(_, re)| re.is_match(bytes)) {
        return Some(*kind);
    }
    random_tokens(bytes).next().map(|_| SecretKind::HighEntropy)
}

/// `text` with every token shape and random-looking string replaced by
/// `[redacted: LABEL]` (known values are the caller's: a redactor that
/// names their variables).
pub fn redact(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut spans: Vec<(usize, usize, SecretKind)> = Vec::new();
    for (kind, re) in RULES.iter() {
        spans.extend(re.find_iter(bytes).map(|m| (m.start(), m.end(), *kind)));
    }
    spans.extend(random_tokens(bytes).map(|(s, e)| (s, e, SecretKind::HighEntropy)));
    if spans.is_empty() {
        return text.to_owned();
    }
    spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, kind) in spans {
        if start < at {
            continue;
        }
        // Byte patterns are ASCII, so a match starts and ends on a char
        // boundary; checked anyway.
        if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str("[redacted: ");
        out.push_str(kind.label());
        out.push(']');
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether `text` holds one of `known`, compared in lower case with all
/// whitespace removed on both sides (ASCII case and spaces: key values are
/// ASCII; one byte pass, no per-char allocation).
fn holds_known(text: &str, known: &[String]) -> bool {
    let squash = |s: &str| -> Vec<u8> {
        s.bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .map(|b| b.to_ascii_lowercase())
            .collect()
    };
    let values: Vec<Vec<u8>> = known
        .iter()
        .map(|k| squash(k))
        .filter(|k| k.len() >= MIN_KNOWN_CHARS)
        .collect();
    if values.is_empty() {
        return false;
    }
    let squashed = squash(text);
    values
        .iter()
        .any(|v| memchr::memmem::find(&squashed, v).is_some())
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
}

/// The spans of random-looking tokens in `bytes`.
fn random_tokens(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            while i < bytes.len() && !is_token_byte(bytes[i]) {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && is_token_byte(bytes[i]) {
                i += 1;
            }
            if i - start >= ENTROPY_MIN_CHARS && looks_random(&bytes[start..i]) {
                return Some((start, i));
            }
        }
        None
    })
}

/// Upper case, lower case and digits mixed, at [`ENTROPY_BITS`] or more.
fn looks_random(token: &[u8]) -> bool {
    let upper = token.iter().any(u8::is_ascii_uppercase);
    let lower = token.iter().any(u8::is_ascii_lowercase);
    let digit = token.iter().any(u8::is_ascii_digit);
    if !(upper && lower && digit) {
        return false;
    }
    let mut counts = [0u32; 256];
    for b in token {
        counts[usize::from(*b)] += 1;
    }
    let n = token.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum();
    bits >= ENTROPY_BITS
}

#[cfg(test)]
pub(crate) mod tests;
