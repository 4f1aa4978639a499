//! The one HTML escape: every text of a session that reaches the page goes
//! through [`escape`] (text and attribute values alike), so `</script>` or
//! markup in a message is shown as text. Five characters; no crate needed.

/// Which bytes [`escape`] replaces (all ASCII, so a run between two of
/// them is whole UTF-8).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'&' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'"' as usize] = true;
    t[b'\'' as usize] = true;
    t
};

/// `s` with `& < > " '` replaced by their character references, in one
/// pass: the runs between them are copied whole.
pub(crate) fn escape(out: &mut String, s: &str) {
    out.reserve(s.len());
    let mut last = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if !SPECIAL[usize::from(b)] {
            continue;
        }
        out.push_str(&s[last..i]);
        out.push_str(match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#39;",
        });
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_becomes_text() {
        let mut out = String::new();
        super::escape(&mut out, "</script><b a=\"x\" b='y'>&amp; é");
        assert_eq!(
            out,
            "&lt;/script&gt;&lt;b a=&quot;x&quot; b=&#39;y&#39;&gt;&amp;amp; é"
        );
    }
}
