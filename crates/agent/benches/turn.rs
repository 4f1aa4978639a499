//! Per-turn overhead of eonyx itself at a 100k-token context: everything a
//! turn does except waiting for the model (context refresh, appending and
//! fsyncing the user and assistant messages, the compaction check, building
//! the request), measured by driving `Agent::turn` against an in-process
//! provider that answers instantly. Goal: under 5 ms per turn.
//!
//! Baseline, measured in the same run on the same data: serializing the
//! request's JSON once (system prompt + messages), which every HTTP provider
//! call pays anyway. A turn fsyncs two appends (the user message before the
//! model call, the answer after), whose cost is the disk's (~0.1 ms on NVMe,
//! several ms on some virtual disks); so a second line runs the same turns
//! with the session on tmpfs (`/dev/shm`, when present) to show eonyx's own
//! work apart from the disk's latency. `EONYX_BENCH_SCALE` multiplies the number of timed
//! turns (default 1 = 40 turns).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use camino::{Utf8Path, Utf8PathBuf};
use common::Dirs;
use eonyx_agent::{Agent, SessionChoice};
use eonyx_core::provider::CancellationToken;
use eonyx_core::record::{MessageRecord, Record};
use eonyx_core::{Message, SessionId, Usage};
use eonyx_tests::bench::{self, Samples};
use eonyx_tests::{ScriptedProvider, Step};

/// Context size the goal is stated at.
const CONTEXT_TOKENS: usize = 100_000;
/// Characters per token of eonyx's default estimate.
const CHARS_PER_TOKEN: usize = 4;

/// Answers every request at once, streaming one delta (requests are not
/// recorded: copying a 100k-token request would be measured too).
fn instant() -> ScriptedProvider {
    ScriptedProvider::answering(|request| {
        Step::text("ok").usage(Usage {
            prompt_tokens: (CONTEXT_TOKENS + request.messages.len()) as u64,
            completion_tokens: 1,
            ..Usage::default()
        })
    })
    .named("instant")
    .unrecorded()
}

/// Prose-like text of about `chars` characters (varied, so nothing
/// compresses into a trivial case).
fn text(seed: usize, chars: usize) -> String {
    const WORDS: [&str; 12] = [
        "parser",
        "session",
        "the",
        "compaction",
        "returns",
        "error",
        "file",
        "window",
        "tokens",
        "and",
        "fixed",
        "tool",
    ];
    let mut s = String::with_capacity(chars + 16);
    let mut i = seed;
    while s.len() < chars {
        s.push_str(WORDS[i % WORDS.len()]);
        s.push(if i.is_multiple_of(17) { '\n' } else { ' ' });
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

/// A session file of about [`CONTEXT_TOKENS`] tokens of user/assistant turns.
fn write_session(data: &Utf8Path, project: &Utf8Path) -> SessionId {
    let id = SessionId::generate();
    let sessions = data.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let mut out = common::header_line(&id, project.as_str());
    let per_message = 1000;
    let messages = CONTEXT_TOKENS * CHARS_PER_TOKEN / per_message;
    for seq in 1..=messages {
        let body = text(seq, per_message);
        let message = if !seq.is_multiple_of(2) {
            Message::user(body)
        } else {
            Message::assistant(body)
        };
        let rec = Record::Message(MessageRecord {
            seq: seq as u64,
            ts: eonyx_core::time::now_rfc3339(),
            message,
        });
        out.push_str(&rec.to_line());
        out.push('\n');
    }
    std::fs::write(sessions.join(format!("{id}.jsonl")), out).unwrap();
    id
}

struct Measured {
    /// Median wall time of one turn.
    turn: Duration,
    /// Median time to serialize the next request's JSON once.
    serialize: Duration,
    /// Estimated context size at the end.
    tokens: u64,
}

/// Drive `turns` turns of an agent whose project and config live in a temp
/// dir and whose data dir (the session file) lives under `data_parent`.
fn measure(data_parent: Option<&std::path::Path>, turns: usize) -> Measured {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_path_buf()).unwrap();
    let data_tmp = match data_parent {
        Some(p) => tempfile::tempdir_in(p).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let data = Utf8PathBuf::from_path_buf(data_tmp.path().join("data")).unwrap();
    let dirs = Dirs::create(&root, data);
    std::fs::write(
        dirs.project.join("AGENTS.md"),
        "# Project\n\nRun `cargo test` before you finish.\n",
    )
    .unwrap();
    dirs.write_config("");
    let id = write_session(&dirs.data, &dirs.project);
    let opts = dirs.options(instant());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut agent = Agent::open(opts, SessionChoice::Id(id)).await.unwrap();
        let cancel = CancellationToken::new();
        let events = agent.events();
        for i in 0..3 {
            let warm_up = format!("warm-up {i}");
            events
                .deliver(agent.turn(&warm_up, &cancel), drop)
                .await
                .unwrap();
        }
        let mut times = Samples::default();
        for i in 0..turns {
            let input = format!("question {i}: what changed in the parser?");
            let t = Instant::now();
            let outcome = events
                .deliver(agent.turn(&input, &cancel), drop)
                .await
                .unwrap();
            times.0.push(t.elapsed());
            assert_eq!(outcome.text, "ok");
        }
        let tokens = agent.context_status().estimate;
        assert!(
            tokens >= CONTEXT_TOKENS as u64 * 9 / 10,
            "the context is only ~{tokens} tokens"
        );

        // Baseline: serialize what the next request carries, once.
        let (system, messages) = agent.effective_request();
        let serialize = bench::median_of(turns, || {
            serde_json::to_vec(&serde_json::json!({
                "model": "bench-model",
                "system": system.text(),
                "messages": &messages,
            }))
            .unwrap()
        });
        Measured {
            turn: times.median(),
            serialize,
            tokens,
        }
    })
}

fn line(measure: &str, m: &Measured) {
    let measure = format!(
        "{measure} at ~{}k tokens (vs serializing the request once)",
        m.tokens / 1000
    );
    println!(
        "{}",
        bench::Line::timed(measure, m.turn, m.serialize, "< 5 ms")
    );
}

fn main() {
    let turns = 40 * bench::scale();

    // The session on the ordinary temp dir's disk: two fsynced appends per
    // turn included, at whatever this disk charges for them.
    line("agent turn overhead", &measure(None, turns));
    // The session on tmpfs, where fsync is free: eonyx's own work.
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        line(
            "agent turn overhead, session on tmpfs (no disk sync latency)",
            &measure(Some(shm), turns),
        );
    }
}
