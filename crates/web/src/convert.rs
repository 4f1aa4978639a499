//! HTML to Markdown, through `htmd` (ARCHITECTURE.md says why that crate).
//!
//! Invariants:
//! - Never panics and always returns text: a page nested deeper than
//!   [`MAX_NESTING`] (estimated by a scan of its tags) or whose Markdown
//!   would grow past [`MAX_GROWTH`] times the input is read as plain text
//!   (tags stripped, scripts and styles dropped) instead.
//! - The output is at most `MAX_GROWTH * input + SLACK` bytes.
//! - Scripts, styles, navigation and other page chrome are dropped; tables
//!   are written as pipe tables without padding, so their size follows
//!   their content (htmd's own table handler pads every cell to the widest
//!   of its column, which a hostile page can blow up quadratically).

use std::rc::Rc;

use htmd::element_handler::{HandlerResult, Handlers};
use htmd::options::{BulletListMarker, HrStyle, Options};
use htmd::{Element, HtmlToMarkdown};
use markup5ever_rcdom::{Node, NodeData};

/// Elements deeper than this (by a scan that ignores elements HTML closes
/// by itself) make the page plain text: the converter walks the tree
/// recursively.
pub const MAX_NESTING: usize = 256;
/// Markdown longer than this many times the HTML (plus [`SLACK`]) is
/// replaced by the plain text.
pub const MAX_GROWTH: usize = 4;
/// Room for a small page's Markdown to be longer than its HTML.
pub const SLACK: usize = 4096;

/// Stack for the conversion thread: the tree walk is recursive, and
/// [`MAX_NESTING`] levels of it need more than a default thread's stack in
/// a debug build.
const STACK_BYTES: usize = 64 * 1024 * 1024;

/// Elements whose content is never part of the text a reader wants.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "iframe", "svg", "canvas", "object", "embed",
    "form", "button", "select", "dialog", "head",
];

/// The Markdown of `html` (see the module's invariants).
pub fn html_to_markdown(html: &str) -> String {
    if nesting_estimate(html) > MAX_NESTING {
        return plain_text(html);
    }
    let owned = html.to_owned();
    let converted = std::thread::Builder::new()
        .name("eonyx-web-convert".into())
        .stack_size(STACK_BYTES)
        .spawn(move || convert_tree(&owned))
        .ok()
        .and_then(|t| t.join().ok());
    match converted {
        Some(md) if md.len() <= MAX_GROWTH * html.len() + SLACK => md,
        _ => plain_text(html),
    }
}

fn convert_tree(html: &str) -> String {
    let converter = HtmlToMarkdown::builder()
        .options(Options {
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            hr_style: HrStyle::Dashes,
            ..Options::default()
        })
        .skip_tags(DROPPED.to_vec())
        .add_handler(vec!["table"], table)
        .build();
    let markdown = converter.convert(html).unwrap_or_default();
    tidy_blank_lines(&markdown)
}

/// A pipe table: the first row is the header (Markdown tables need one),
/// each row has its own cells, nothing is padded.
fn table(handlers: &dyn Handlers, element: Element) -> Option<HandlerResult> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for child in children(element.node) {
        match tag(&child) {
            Some("tr") => rows.push(cells(handlers, &child)),
            Some("thead" | "tbody" | "tfoot") => rows.extend(
                children(&child)
                    .iter()
                    .filter(|r| tag(r) == Some("tr"))
                    .map(|r| cells(handlers, r)),
            ),
            _ => {}
        }
    }
    rows.retain(|r| !r.is_empty());
    let Some((header, body)) = rows.split_first() else {
        let content = handlers.walk_children(element.node).content;
        let content = content.trim_matches('\n');
        return (!content.is_empty()).then(|| format!("\n\n{content}\n\n").into());
    };
    let mut md = String::from("\n\n");
    push_row(&mut md, header);
    md.push('|');
    for _ in header {
        md.push_str(" --- |");
    }
    md.push('\n');
    for row in body {
        push_row(&mut md, row);
    }
    md.push('\n');
    Some(md.into())
}

fn push_row(md: &mut String, row: &[String]) {
    md.push('|');
    for cell in row {
        md.push(' ');
        md.push_str(cell);
        md.push_str(" |");
    }
    md.push('\n');
}

fn cells(handlers: &dyn Handlers, row: &Rc<Node>) -> Vec<String> {
    children(row)
        .iter()
        .filter(|c| matches!(tag(c), Some("td" | "th")))
        .map(|c| {
            let content = handlers.walk_children(c).content;
            let one_line = content.split_whitespace().collect::<Vec<_>>().join(" ");
            one_line.replace('|', "\\|")
        })
        .collect()
}

fn children(node: &Rc<Node>) -> Vec<Rc<Node>> {
    node.children.borrow().iter().cloned().collect()
}

fn tag(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.as_ref()),
        _ => None,
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

/// Elements that never hold others, or that HTML closes by itself when
/// the next one starts: not counted as nesting.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "thead", "tbody", "tfoot",
    "colgroup", "rb", "rt", "rp", "optgroup", "!doctype",
];

/// The deepest nesting of elements a scan of the tags suggests (an
/// over-estimate for sloppy HTML, never an under-estimate for the elements
/// counted). Comments and the insides of `script`/`style` are skipped.
fn nesting_estimate(html: &str) -> usize {
    let bytes = html.as_bytes();
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, 0usize);
    while let Some(off) = bytes[i..].iter().position(|&b| b == b'<') {
        i += off + 1;
        if bytes[i..].starts_with(b"!--") {
            i = find(bytes, i, b"-->").map_or(bytes.len(), |e| e + 3);
            continue;
        }
        let closing = bytes.get(i) == Some(&b'/');
        let start = if closing { i + 1 } else { i };
        let end = bytes[start..]
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'!' || *b == b'-'))
            .map_or(bytes.len(), |e| start + e);
        let name = html.get(start..end).unwrap_or("").to_ascii_lowercase();
        if name.is_empty() || NOT_NESTING.contains(&name.as_str()) {
            continue;
        }
        let tag_end = find(bytes, end, b">").unwrap_or(bytes.len());
        let self_closing = tag_end > 0 && bytes.get(tag_end - 1) == Some(&b'/');
        if closing {
            depth = depth.saturating_sub(1);
        } else if !self_closing {
            if name == "script" || name == "style" {
                let close = format!("</{name}");
                i = find_ci(html, tag_end, &close).unwrap_or(bytes.len());
                continue;
            }
            depth += 1;
            deepest = deepest.max(depth);
        }
        i = tag_end.min(bytes.len());
    }
    deepest
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
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
    fn deep_nesting_falls_back_to_plain_text() {
        let html = format!(
            "{}deep &amp; text{}",
            "<div>".repeat(MAX_NESTING + 10),
            "</div>".repeat(MAX_NESTING + 10)
        );
        assert!(nesting_estimate(&html) > MAX_NESTING);
        assert_eq!(html_to_markdown(&html), "deep & text");
    }

    #[test]
    fn self_closing_paragraphs_and_list_items_do_not_count_as_nesting() {
        let html = "<p>a<p>b<li>c<li>d<br><img src=x>".repeat(1000);
        assert_eq!(nesting_estimate(&html), 0);
        assert_eq!(nesting_estimate("<div><div></div><span></span></div>"), 2);
        assert_eq!(
            nesting_estimate("<div><script><div><div></script></div>"),
            1
        );
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
    fn plain_text_drops_tags_scripts_and_styles() {
        assert_eq!(
            plain_text("<p>a &lt;b&gt;</p><SCRIPT>x()</SCRIPT><style>p{}</style><!-- c -->d"),
            "a <b> d"
        );
    }
}
