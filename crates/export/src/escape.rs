//! The one HTML escape: every text of a session that reaches the page goes
//! through [`escape`], so `</script>` or markup in a message is shown as
//! text. The page puts session text only in element content (never in an
//! attribute value), where `&`, `<` and `>` are all that need replacing;
//! quotes stay as they are. No crate needed.

/// Eight copies of a byte in a word.
const fn splat(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

/// Whether any byte of the word `w` is `&`, `<` or `>` (the exact test
/// for a zero byte, `(x - 0x01…) & !x & 0x80…`, on `w` xor each of them).
fn has_special(w: u64) -> bool {
    let zero = |x: u64| x.wrapping_sub(splat(1)) & !x & splat(0x80);
    (zero(w ^ splat(b'&')) | zero(w ^ splat(b'<')) | zero(w ^ splat(b'>'))) != 0
}

/// `s` with `&`, `<` and `>` replaced by their character references, in
/// one pass: eight bytes at a time while none of them is special, the runs
/// between special bytes copied whole (they are ASCII, so a run is whole
/// UTF-8).
pub(crate) fn escape(out: &mut String, s: &str) {
    let b = s.as_bytes();
    out.reserve(s.len());
    let (mut last, mut i) = (0, 0);
    while i < b.len() {
        if let Some(word) = b.get(i..i + 8) {
            let mut w = [0; 8];
            w.copy_from_slice(word);
            if !has_special(u64::from_le_bytes(w)) {
                i += 8;
                continue;
            }
        }
        let rep = match b[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        i += 1;
        last = i;
    }
    out.push_str(&s[last..]);
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_becomes_text() {
        let mut out = String::new();
        super::escape(&mut out, "</script><b a=\"x\" b='y'>&amp; é");
        assert_eq!(out, "&lt;/script&gt;&lt;b a=\"x\" b='y'&gt;&amp;amp; é");
    }

    #[test]
    fn every_position_of_every_special_byte_in_a_word_is_found() {
        let plain = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        for len in 0..40 {
            for at in 0..len {
                for c in ['&', '<', '>', '"', 'é', '\u{3c}'] {
                    let s: String = (0..len).map(|i| if i == at { c } else { 'a' }).collect();
                    let mut out = String::new();
                    super::escape(&mut out, &s);
                    assert_eq!(out, plain(&s), "{s:?}");
                }
            }
        }
        // Bytes next to the special ones (0x25, 0x27, 0x3b, 0x3d, 0x3f)
        // and high bytes are no false alarm.
        let near = "%'=;?\u{7f}\u{80}\u{ff}ȼ¼>".repeat(9);
        let mut out = String::new();
        super::escape(&mut out, &near);
        assert_eq!(out, plain(&near));
    }
}
