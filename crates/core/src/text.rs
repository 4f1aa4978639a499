//! Text for display: the one place that decides how a long string is
//! shortened (by characters, never inside one, marked with `…`), and how a
//! listing's columns are aligned ([`columns`]), and how a command shown
//! for a yes is escaped so it cannot rewrite the screen
//! ([`escape_controls`]).

/// The first `max_chars` characters of `s` when it is longer than that,
/// else `None`. For a cut that is marked differently than [`ellipsize`].
pub fn cut_chars(s: &str, max_chars: usize) -> Option<&str> {
    s.char_indices().nth(max_chars).map(|(i, _)| &s[..i])
}

/// `s` when it has at most `max_chars` characters, else its first
/// `max_chars` characters followed by `…`.
/// A header and rows as lines, each column padded to its widest cell
/// (counted in characters) and two spaces apart; the last column is not
/// padded.
pub fn columns<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> Vec<String> {
    let header = header.map(str::to_owned);
    let mut widths = [0usize; N];
    for r in std::iter::once(&header).chain(rows) {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    std::iter::once(&header)
        .chain(rows)
        .map(|r| {
            let mut line = String::new();
            for (i, (c, w)) in r.iter().zip(widths).enumerate() {
                if i + 1 == N {
                    line.push_str(c);
                } else {
                    line.push_str(&format!("{c:<w$}  "));
                }
            }
            line
        })
        .collect()
}

pub fn ellipsize(s: &str, max_chars: usize) -> String {
    match cut_chars(s, max_chars) {
        Some(head) => format!("{head}…"),
        None => s.to_owned(),
    }
}

/// A character that could hide or rewrite what the user reads: control
/// characters other than tab and newline (C0, DEL, C1), Unicode spaces
/// other than ` `, and invisible format characters (zero-width spaces and
/// joiners, bidirectional overrides, the byte-order mark, soft hyphen).
pub fn is_hidden_char(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || (c.is_whitespace() && !matches!(c, ' ' | '\t' | '\n'))
        || matches!(
            c,
            '\u{00AD}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// `s` as shown for a yes (an approval question, the echo of a command, a
/// rule listing, ACP's permission request): unchanged when nothing in it
/// is hidden; else every hidden character ([`is_hidden_char`]) escaped
/// (`\r`, `\x1b`, `\u{200b}`), backslashes doubled so an escape cannot
/// be faked, and, when `one_line`, newlines and tabs escaped too (`\n`,
/// `\t`). The one escaping function for every such display.
pub fn escape_controls(s: &str, one_line: bool) -> std::borrow::Cow<'_, str> {
    let needs = |c: char| is_hidden_char(c) || (one_line && matches!(c, '\n' | '\t'));
    if !s.chars().any(needs) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if !needs(c) => out.push(c),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(ellipsize("", 0), "");
        assert_eq!(ellipsize("abc", 3), "abc");
        assert_eq!(cut_chars("abc", 3), None);
    }

    #[test]
    fn long_text_is_cut_by_characters_with_an_ellipsis() {
        assert_eq!(ellipsize("abcd", 3), "abc…");
        assert_eq!(ellipsize("abcd", 0), "…");
        // Multi-byte characters are counted as one and never split.
        assert_eq!(ellipsize("ééé😀x", 4), "ééé😀…");
        assert_eq!(cut_chars("ééé😀x", 3), Some("ééé"));
    }

    #[test]
    fn hidden_characters_are_escaped_and_backslashes_doubled_then() {
        assert_eq!(escape_controls("git status", true), "git status");
        assert_eq!(escape_controls("a\\b\nc", false), "a\\b\nc");
        assert_eq!(
            escape_controls("npm test \r# ; x\u{1b}[2K\\r", false),
            "npm test \\r# ; x\\x1b[2K\\\\r"
        );
        assert_eq!(escape_controls("a\nb\tc", true), "a\\nb\\tc");
        assert_eq!(escape_controls("a\u{200b}b", false), "a\\u{200b}b");
        assert_eq!(escape_controls("a\u{a0}b", false), "a\\u{a0}b");
    }
}
