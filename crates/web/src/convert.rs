//! HTML to Markdown: one pass over html5gum's tokenizer (`markdown.rs`),
//! with a plain-text fallback.
//!
//! Invariants:
//! - Never panics and always returns text; no recursion, so no page is too
//!   deep to convert.
//! - The output is at most `MAX_GROWTH * input + SLACK` bytes: Markdown
//!   that would grow past that is replaced by the plain text (tags
//!   stripped, scripts and styles dropped), which is never longer than the
//!   input.
//! - Scripts, styles, navigation and other page chrome are dropped; tables
//!   are written as pipe tables without padding, so their size follows
//!   their content.

mod markdown;

/// Markdown longer than this many times the HTML (plus [`SLACK`]) is
/// replaced by the plain text.
pub const MAX_GROWTH: usize = 4;
/// Room for a small page's Markdown to be longer than its HTML.
pub const SLACK: usize = 4096;

/// The Markdown of `html` (see the module's invariants).
pub fn html_to_markdown(html: &str) -> String {
    html_to_markdown_at(html, None)
}

/// The Markdown of `html` fetched from `base`: relative links and images
/// are made absolute against it (`#fragment` links stay as they are).
pub fn html_to_markdown_at(html: &str, base: Option<&url::Url>) -> String {
    let md = markdown::convert(html, base);
    if md.len() <= MAX_GROWTH * html.len() + SLACK {
        md
    } else {
        plain_text(html)
    }
}

/// At most two newlines in a row, no trailing spaces on blank lines.
fn tidy_blank_lines(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut blank = 0;
    for line in md.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
            out.push('\n');
        } else {
            blank = 0;
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_matches('\n').to_owned()
}

fn find_ci(hay: &str, from: usize, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    hay.as_bytes()
        .get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| from + p)
}

/// The page's text with every tag removed and the insides of `script`
/// and `style` dropped; a few entities decoded. Never longer than `html`.
pub fn plain_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len().min(1 << 20));
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..lt]));
        let after = &rest[lt + 1..];
        let lower_start: String = after
            .chars()
            .take(7)
            .collect::<String>()
            .to_ascii_lowercase();
        let skip_to = if after.starts_with("!--") {
            after.find("-->").map(|e| e + 3)
        } else if lower_start.starts_with("script") || lower_start.starts_with("style") {
            let close = if lower_start.starts_with("script") {
                "</script"
            } else {
                "</style"
            };
            find_ci(after, 0, close).and_then(|c| after[c..].find('>').map(|e| c + e + 1))
        } else {
            after.find('>').map(|e| e + 1)
        };
        match skip_to {
            Some(n) => {
                out.push(' ');
                rest = &after[n..];
            }
            None => {
                rest = "";
            }
        }
    }
    out.push_str(&decode_entities(rest));
    let lines: Vec<String> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let mut text = tidy_blank_lines(&lines.join("\n"));
    text.truncate(floor_char_boundary(&text, html.len()));
    text
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// The largest index `<= at` that is a char boundary of `s`.
pub(crate) fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_links_lists_code_and_tables_become_markdown() {
        let md = html_to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body>\
             <nav><a href='/'>Home</a></nav><h1>Title</h1><p>See <a href='https://docs.rs'>docs</a>.</p>\
             <ul><li>one</li><li>two</li></ul><pre><code class='language-rust'>fn main() {}\n</code></pre>\
             <table><tr><th>a</th><th>b|c</th></tr><tr><td>1</td><td>2</td></tr></table>\
             <script>alert(1)</script></body></html>",
        );
        insta::assert_snapshot!(md);
    }

    #[test]
    fn deep_nesting_converts_without_recursion() {
        let html = format!(
            "{}deep &amp; text{}",
            "<div><blockquote><ul><li><b>".repeat(10_000),
            "</b></li></ul></blockquote></div>".repeat(10_000)
        );
        let md = html_to_markdown(&html);
        assert!(md.contains("deep & text"), "{}", &md[..md.len().min(500)]);
        assert!(md.len() <= MAX_GROWTH * html.len() + SLACK);
    }

    #[test]
    fn a_table_with_one_wide_cell_and_many_rows_stays_small() {
        let html = format!(
            "<table><tr><th>{}</th></tr>{}</table>",
            "x".repeat(10_000),
            "<tr><td>y</td></tr>".repeat(10_000)
        );
        let md = html_to_markdown(&html);
        assert!(md.len() < html.len(), "{} vs {}", md.len(), html.len());
        assert!(md.contains("| y |"));
    }

    #[test]
    fn lists_quotes_and_code_keep_their_shape() {
        let md = html_to_markdown(
            "<ol start='3'><li>three<ul><li>nested <em>item</em></li></ul></li><li><p>four</p></li></ol>\
             <blockquote><p>quoted</p><p>twice</p></blockquote>\
             <p>inline <code>a`b</code> and <b> bold </b>.</p>\
             <pre>```\nfenced\n```</pre><dl><dt>term</dt><dd>meaning</dd></dl>\
             <p># not a heading<br>- not a list</p><hr><p>end</p>",
        );
        insta::assert_snapshot!(md);
    }

    #[test]
    fn dropped_elements_leave_nothing_even_when_nested_or_unclosed() {
        let md = html_to_markdown(
            "<head><title>T</title><meta charset=utf-8><p>kept</p>\
             <nav>a<nav>b</nav>c</nav><svg/><p>after svg</p>\
             <script>if (a < b) { document.write('<p>x</p>') }</script>\
             <select><option>o</select><p>last</p><noscript>ns</noscript>",
        );
        assert_eq!(md, "kept\n\nafter svg\n\nlast");
    }

    #[test]
    fn relative_links_and_images_are_made_absolute_against_the_page() {
        let base = url::Url::parse("https://docs.example.org/guide/intro.html").unwrap();
        let md = html_to_markdown_at(
            "<p><a href='setup.html'>setup</a> <a href='/api'>api</a> <a href='#top'>top</a> \
             <a href='https://other.org/x'>x</a> <img src='img/a.png' alt='A [pic]'> \
             <a href='javascript:void(0)'>js</a> <a href=''>empty</a></p>",
            Some(&base),
        );
        assert_eq!(
            md,
            "[setup](https://docs.example.org/guide/setup.html) [api](https://docs.example.org/api) \
             [top](#top) [x](https://other.org/x) ![A pic](https://docs.example.org/guide/img/a.png) js empty"
        );
    }

    #[test]
    fn table_cells_stay_on_their_row() {
        let md = html_to_markdown(
            "<table><caption>cap</caption><tr><td>a|b</td><td><p>one</p><p>two</p></td>\
             <tr><td><code>x|y</code><td>last</table><p>after</p>",
        );
        assert_eq!(
            md,
            "cap\n\n| a\\|b | one two |\n| --- | --- |\n| `x\\|y` | last |\n\nafter"
        );
    }

    #[test]
    fn plain_text_drops_tags_scripts_and_styles() {
        assert_eq!(
            plain_text("<p>a &lt;b&gt;</p><SCRIPT>x()</SCRIPT><style>p{}</style><!-- c -->d"),
            "a <b> d"
        );
    }
}
