//! Text for display: the one place that decides how a long string is
//! shortened (by characters, never inside one, marked with `…`), and how a
//! listing's columns are aligned ([`columns`]).

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
}
