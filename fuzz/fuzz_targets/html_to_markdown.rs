//! Fuzz web_fetch's HTML to Markdown conversion: arbitrary HTML never
//! panics, never hangs, and the Markdown stays within the bound the
//! converter promises (`MAX_GROWTH` times the input plus `SLACK`).
#![no_main]

use eonyx_web::convert::{MAX_GROWTH, SLACK, html_to_markdown, plain_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    let markdown = html_to_markdown(&html);
    assert!(
        markdown.len() <= MAX_GROWTH * html.len() + SLACK,
        "{} bytes of Markdown from {} of HTML",
        markdown.len(),
        html.len()
    );
    assert!(plain_text(&html).len() <= html.len());
});
