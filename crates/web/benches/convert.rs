//! `web_fetch`'s HTML to Markdown conversion on a 1 MiB documentation
//! page, against stripping the same page's tags (the converter's own
//! plain-text fallback) measured in the same run. Prints
//! `BENCH|measure|ours|baseline|ratio|goal`.
//!
//! `EONYX_BENCH_SCALE` (default 1) multiplies the page size.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use eonyx_tests::bench::{self, median_within};
use eonyx_web::convert::{html_to_markdown, plain_text};

/// A documentation page of about `bytes`: navigation, a sidebar, and
/// sections of headings, prose with links and inline code, lists, code
/// blocks and tables, with scripts around them.
fn doc_page(bytes: usize) -> String {
    let mut page = String::from(
        "<!doctype html><html><head><title>crate docs</title>\
         <style>body{font:14px sans-serif}.nav a{color:#333}</style>\
         <script>window.dataLayer=[];function gtag(){dataLayer.push(arguments)}</script></head><body>\
         <nav class=\"nav\"><a href=\"/\">Home</a><a href=\"/guide\">Guide</a><a href=\"/api\">API</a></nav>\
         <div class=\"layout\"><aside><ul>",
    );
    for i in 0..40 {
        let _ = write!(page, "<li><a href=\"#s{i}\">Section {i}</a></li>");
    }
    page.push_str("</ul></aside><main>");
    let mut i = 0;
    while page.len() < bytes {
        let _ = write!(
            page,
            "<section id=\"s{i}\"><h2>Section {i}: <code>Widget::spin</code></h2>\
             <p>The <a href=\"/api/widget/{i}\">widget</a> turns at the configured <em>speed</em>; \
             call <code>spin()</code> after <strong>configure()</strong>. See also \
             <a href=\"https://docs.rs/widget/latest/widget/struct.Widget.html#method.spin\">the API</a>.</p>\
             <ul><li>fast mode skips the checks</li><li>slow mode <b>logs</b> each turn</li>\
             <li><a href=\"/faq#{i}\">FAQ</a></li></ul>\
             <pre><code class=\"language-rust\">let w = Widget::new();\nw.configure(Speed::Fast)?;\nfor _ in 0..{i} {{\n    w.spin();\n}}\n</code></pre>\
             <table><thead><tr><th>option</th><th>type</th><th>default</th></tr></thead><tbody>\
             <tr><td>speed</td><td><code>u32</code></td><td>3</td></tr>\
             <tr><td>mode</td><td><code>Mode</code></td><td>fast</td></tr></tbody></table>\
             <script>track({i})</script></section>"
        );
        i += 1;
    }
    page.push_str("</main></div><footer>© widget authors</footer></body></html>");
    page
}

fn main() {
    let page = doc_page(1024 * 1024 * bench::scale());
    let markdown = html_to_markdown(&page);
    assert!(
        markdown.contains("## Section 3: `Widget::spin`"),
        "{}",
        &markdown[..2000]
    );
    assert!(markdown.contains("| speed | `u32` | 3 |"));
    assert!(!markdown.contains("track("));
    let budget = Duration::from_secs(4);
    let ours = median_within(budget, || {
        black_box(html_to_markdown(black_box(&page))).len()
    });
    let base = median_within(budget, || black_box(plain_text(black_box(&page))).len());
    println!(
        "{}",
        bench::Line::timed(
            format!(
                "web_fetch: 1 MiB documentation page to Markdown (vs stripping tags; {} KiB out)",
                markdown.len() / 1024
            ),
            ours,
            base,
            "< 50 ms",
        )
    );
}
