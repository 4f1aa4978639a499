//! The secret detector (`store::secret`, docs/memory.md#secrets) on 100 KB
//! of text like what it reads (a mining transcript: prose, commands, paths,
//! JSON, commit ids), once clean and once with a secret at the very end
//! (the whole text is scanned either way), and `redact` on the same text.
//! Goal: at most 1 ms per 100 KB; the baseline column is that budget.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use eonyx_store::secret;
use eonyx_tests::bench::{self, Line, median_of};

fn text_of(bytes: usize) -> String {
    let lines = [
        "#12 user: we use pnpm, never npm; run `pnpm install --frozen-lockfile` first",
        "#13 assistant: Noted. I'll read package.json and the CI config before changing anything.",
        "#14 tool call read_file: {\"path\":\"src/components/Button/Button.test.tsx\"}",
        "#15 tool result: import { render } from '@testing-library/react'; describe('Button', () => { it('renders', () => {",
        "#16 user: commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 broke the build on staging, revert it",
        "#17 tool call shell: {\"command\":\"git log --oneline -n 20 -- crates/web/src/fetch.rs\"}",
        "#18 tool result: exit status: 0 a1b2c3d web fetch: pin the checked addresses",
        "#19 assistant: The password lives in the keyring; the API key is read from OPENAI_API_KEY at start.",
    ];
    let mut out = String::with_capacity(bytes + 200);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(lines[i % lines.len()]);
        out.push('\n');
        i += 1;
    }
    out.truncate(bytes);
    out
}

fn main() {
    let runs = 30 * bench::scale();
    let budget = Duration::from_millis(1);
    let known: Vec<String> = ["sk-live-0123456789abcdef", "AIzaSyB-gemini-value-42"]
        .map(String::from)
        .to_vec();
    let clean = text_of(100 * 1024);
    let mut dirty = clean.clone();
    dirty.push_str(" export X_TOKEN=f00dbabe1234deadbeef");
    for (name, text) in [("clean", &clean), ("a secret at the end", &dirty)] {
        let t = median_of(runs, || secret::find(text, &known));
        println!(
            "{}",
            Line::timed(
                format!("secret detector: find in 100 KB ({name})"),
                t,
                budget,
                "<= 1.00x (1 ms per 100 KB)",
            )
        );
    }
    let t = median_of(runs, || secret::redact(&dirty));
    println!(
        "{}",
        Line::timed(
            "secret detector: redact 100 KB",
            t,
            budget,
            "<= 1.00x (1 ms per 100 KB)",
        )
    );
}
