//! What `## What the user said` costs a compaction
//! (docs/compaction.md#what-the-user-said): `/compact` of a long session
//! (300 user turns, a 22 KB file read every fifth turn, about 1.5 MB of
//! session file) against an in-process summarizer that answers at once,
//! with the section at its default budget (20,000 tokens at this window,
//! far less than the user said: head, tail and the line between) and with
//! `compaction.user_words_tokens = 0`. The difference is eonyx's own work
//! for the section: reading the user messages back from the session file
//! and building it. Goal: at most 2 ms more. Each compaction runs on a
//! fresh copy of the session, opened outside the timed part.
//! `EONYX_BENCH_SCALE` multiplies the number of compactions (default 1 =
//! 11 of each).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use common::Dirs;
use eonyx_agent::{Agent, SessionChoice};
use eonyx_core::provider::CancellationToken;
use eonyx_core::record::{MessageRecord, Record};
use eonyx_core::{Message, SessionId, ToolCall};
use eonyx_tests::bench::{self, Samples};
use eonyx_tests::{ScriptedProvider, Step};

/// User turns in the session.
const TURNS: usize = 300;

/// Answers every request (the summarizer's) at once.
fn instant() -> ScriptedProvider {
    ScriptedProvider::answering(|_| Step::text("## Active goal\nnone\n## Progress\nnone"))
        .named("instant")
        .unrecorded()
}

/// The session file's lines: user turns of 200 to 1,000 characters, an
/// answer each, and every fifth turn a `read_file` call with a 20 KB
/// result.
fn session_lines(id: &SessionId, project: &str) -> String {
    let mut out = common::header_line(id, project);
    let mut seq = 0u64;
    let mut push = |out: &mut String, message: Message| {
        seq += 1;
        let rec = Record::Message(MessageRecord {
            seq,
            ts: eonyx_core::time::now_rfc3339(),
            message,
        });
        out.push_str(&rec.to_line());
        out.push('\n');
    };
    let file: String = (0..400)
        .map(|i| format!("{i:04}: fn handler() -> Result<(), Error> {{ todo!() }}\n"))
        .collect();
    for t in 0..TURNS {
        let words = "please keep the parser strict and the errors exact ";
        let said = format!("turn {t}: {}", words.repeat(4 + t % 17));
        push(&mut out, Message::user(said));
        if t % 5 == 0 {
            let mut call = Message::assistant("");
            call.tool_calls = vec![ToolCall {
                id: format!("call_{t}"),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": format!("src/file_{t}.rs")}),
            }];
            push(&mut out, call);
            push(
                &mut out,
                Message::tool_result(format!("call_{t}"), file.clone()),
            );
        }
        push(&mut out, Message::assistant(format!("done with turn {t}")));
    }
    out
}

/// The median time of `runs` `/compact`s of fresh copies of the session,
/// with `extra` config, and the user messages the last one kept.
fn measure(extra: &str, runs: usize) -> (Duration, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_path_buf()).unwrap();
    let dirs = Dirs::create(&root, root.join("data"));
    dirs.write_config(extra);
    let sessions = dirs.data.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut times = Samples::default();
    let mut kept = 0;
    for _ in 0..runs {
        let id = SessionId::generate();
        std::fs::write(
            sessions.join(format!("{id}.jsonl")),
            session_lines(&id, dirs.project.as_str()),
        )
        .unwrap();
        let opts = dirs.options(instant());
        rt.block_on(async {
            let mut agent = Agent::open(opts, SessionChoice::Id(id)).await.unwrap();
            let cancel = CancellationToken::new();
            let events = agent.events();
            let t = Instant::now();
            let record = events
                .deliver(agent.compact_now(None, &cancel), drop)
                .await
                .unwrap();
            times.0.push(t.elapsed());
            kept = record.user_words.map_or(0, |u| u.kept);
        });
    }
    (times.median(), kept)
}

fn main() {
    let runs = 11 * bench::scale();
    let (without, none) = measure("[compaction]\nuser_words_tokens = 0\n", runs);
    assert_eq!(none, 0);
    let (with, kept) = measure("", runs);
    assert!(kept > 10 && kept < TURNS as u64, "kept {kept}");
    let more = with.saturating_sub(without);
    println!(
        "{}",
        bench::Line::timed(
            format!(
                "/compact with a full `## What the user said` ({kept} of {TURNS} messages kept; +{} eonyx time) vs without",
                bench::human(more)
            ),
            with,
            without,
            "at most +2 ms",
        )
    );
}
