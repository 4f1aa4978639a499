//! `eonyx sessions export` of one 10,000-message session (tool calls and
//! results, usage on every reply, a compaction every 500 messages), the
//! whole command as a user runs it: `--format html` (the page with its
//! chart) and `--format markdown` against `--format jsonl` (the file byte
//! for byte) in the same run. Goal: HTML within 5x the JSONL export.
//!
//! Each measure is the best of its nine runs, the three formats taking
//! turns. `EONYX_BENCH_SCALE` (default 1.0) scales the number of messages.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::io::Write as _;
use std::path::Path;

use eonyx_tests::Sandbox;
use eonyx_tests::bench::{self, Line, Samples, session_id};

/// Write a session of `n` messages: turns of user, assistant with a
/// `read_file` call, its result (about 1 KB), assistant text.
fn write_session(dir: &Path, id: &str, n: u64) -> u64 {
    let f = std::fs::File::create(dir.join(format!("{id}.jsonl"))).unwrap();
    let mut w = std::io::BufWriter::new(f);
    writeln!(
        w,
        r#"{{"type":"session","version":1,"id":"{id}","title":"1","created":"2025-06-15T12:00:00Z","cwd":"/home/u/p","project":"/home/u/p","model":"default"}}"#
    )
    .unwrap();
    let result: String = (0..24)
        .map(|i| format!("{i:4}  fn line_{i}() {{ let x = \\\"<tag>\\\"; }}\\n"))
        .collect();
    let (mut seq, mut written, mut tokens) = (0u64, 0u64, 2000u64);
    while written < n {
        let turn = written / 4;
        for k in 0..4 {
            seq += 1;
            written += 1;
            tokens += 300;
            let line = match k {
                0 => format!(
                    r#"{{"type":"message","seq":{seq},"ts":"2025-06-15T12:00:00Z","role":"user","content":"turn {turn}: look at part {turn} of the code and explain what it does"}}"#
                ),
                1 => format!(
                    r#"{{"type":"message","seq":{seq},"ts":"2025-06-15T12:00:01Z","role":"assistant","content":"","tool_calls":[{{"id":"c{turn}","name":"read_file","arguments":{{"path":"src/part{turn}.rs"}}}}],"usage":{{"prompt_tokens":{tokens},"completion_tokens":30,"cached_tokens":{}}}}}"#,
                    tokens - 300
                ),
                2 => format!(
                    r#"{{"type":"message","seq":{seq},"ts":"2025-06-15T12:00:02Z","role":"tool","content":"{result}","tool_call_id":"c{turn}"}}"#
                ),
                _ => format!(
                    r#"{{"type":"message","seq":{seq},"ts":"2025-06-15T12:00:03Z","role":"assistant","content":"Part {turn} reads the file and returns **early** when `x < y`; nothing else.","usage":{{"prompt_tokens":{tokens},"completion_tokens":40,"cached_tokens":{}}}}}"#,
                    tokens - 300
                ),
            };
            writeln!(w, "{line}").unwrap();
        }
        if written % 500 == 0 {
            seq += 1;
            writeln!(
                w,
                r#"{{"type":"compaction","seq":{seq},"ts":"2025-06-15T12:00:04Z","summary":"goal: explain the code part by part","first_kept_seq":{},"trigger":"auto","tokens_before":{tokens},"tokens_after":3000}}"#,
                seq - 8
            )
            .unwrap();
            tokens = 3000;
        }
    }
    w.flush().unwrap();
    std::fs::metadata(dir.join(format!("{id}.jsonl")))
        .unwrap()
        .len()
}

fn main() {
    let n = ((10_000.0 * bench::scale_f64(1.0)) as u64).max(100);
    let bin = Path::new(env!("CARGO_BIN_EXE_eonyx"));
    let sandbox = Sandbox::try_new().unwrap();
    let sessions = sandbox.data.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let id = session_id(0).to_string();
    let bytes = write_session(&sessions, &id, n);
    let export = |format: &str| -> usize {
        let out = sandbox
            .command(bin)
            .args(["sessions", "export", &id, "--format", format])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout.len()
    };
    // Once each before timing (the index, the page caches).
    assert_eq!(export("jsonl") as u64, bytes);
    let html_len = export("html");
    let md_len = export("markdown");
    // The three interleaved, round after round, so that a change in the
    // machine's load hits all of them alike.
    let (mut jsonl, mut html, mut markdown) =
        (Samples::default(), Samples::default(), Samples::default());
    for _ in 0..9 {
        jsonl.time(|| export("jsonl"));
        html.time(|| export("html"));
        markdown.time(|| export("markdown"));
    }
    let (jsonl, html, markdown) = (jsonl.best(), html.best(), markdown.best());
    let mb = bytes as f64 / 1e6;
    eprintln!(
        "export of {n} messages ({mb:.1} MB): html {} KB, markdown {} KB",
        html_len / 1024,
        md_len / 1024
    );
    println!(
        "{}",
        Line::timed(
            format!("sessions_export_html_{n}_messages_vs_jsonl"),
            html,
            jsonl,
            "<= 5.0x"
        )
    );
    println!(
        "{}",
        Line::timed(
            format!("sessions_export_markdown_{n}_messages_vs_jsonl"),
            markdown,
            jsonl,
            "<= 5.0x"
        )
    );
}
