//! The mining tests' fixture (docs/memory.md#mining): a project that mines
//! at once, sessions written by hand, and what the fake server was asked.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};

use eonyx_tests::{FakeConfig, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::{Fx, run_with_stdin};
use crate::util::{stderr, stdout};

pub(crate) const OLD: &str = "2026-11-01T10:00:00Z";

/// A fixture that mines at once (`mine_idle_hours = 0`) up to ten
/// sessions a start, with `extra` TOML added to `[memory]`.
pub(crate) fn mx(extra: &str) -> Fx {
    let memory = format!("[memory]\nmine_idle_hours = 0\nmine_per_start = 10\n{extra}");
    Fx::with(|c: FakeConfig| c.merge_top_toml(&memory).unwrap())
}

/// [`mx`] whose extractor proposes `memories` from every session mined.
pub(crate) fn mx_extracting(extra: &str, memories: Value) -> Fx {
    let fx = mx(extra);
    fx.fake.set_extractor(extractor(memories));
    fx
}

/// What a hand-written session holds.
#[derive(Default)]
pub(crate) struct Spec<'a> {
    pub(crate) users: &'a [&'a str],
    /// The last record's time (default: long ago).
    pub(crate) ts: Option<String>,
    pub(crate) parent: Option<&'a str>,
    /// `forked_from`: (id, seq): the first `seq` records are a copy.
    pub(crate) fork: Option<(&'a str, u64)>,
    /// Extra raw lines after the messages.
    pub(crate) tail: &'a str,
}

static NEXT: AtomicU32 = AtomicU32::new(1);

impl Fx {
    pub(crate) fn project_root(&self) -> String {
        std::fs::canonicalize(&self.sb.work)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// Write a session file by hand (user message, assistant reply, …);
    /// its id.
    pub(crate) fn write_session(&self, title: &str, spec: &Spec<'_>) -> String {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let id = format!("20261101T1000{:02}-{:08x}", n % 60, 0xa000_0000u32 + n);
        let project = self.project_root();
        let ts = spec.ts.clone().unwrap_or_else(|| OLD.to_owned());
        let mut header = json!({"type": "session", "version": 1, "id": id, "title": title,
            "created": OLD, "cwd": project, "project": project});
        if let Some(p) = spec.parent {
            header["parent"] = json!(p);
        }
        if let Some((f, seq)) = spec.fork {
            header["forked_from"] = json!({"id": f, "seq": seq});
        }
        let mut lines = vec![header.to_string()];
        let mut seq = 0;
        for u in spec.users {
            seq += 1;
            lines.push(
                json!({"type": "message", "seq": seq, "ts": ts, "role": "user", "content": u})
                    .to_string(),
            );
            seq += 1;
            lines.push(
                json!({"type": "message", "seq": seq, "ts": ts, "role": "assistant", "content": "noted"})
                    .to_string(),
            );
        }
        let mut text = lines.join("\n");
        text.push('\n');
        text.push_str(spec.tail);
        self.sb.write(
            self.sb.data.join("sessions").join(format!("{id}.jsonl")),
            text,
        );
        id
    }

    /// Write a session of `users`' messages (each answered "noted"), last
    /// written long ago; its id.
    pub(crate) fn past_session(&self, title: &str, users: &[&str]) -> String {
        self.write_session(
            title,
            &Spec {
                users,
                ..Spec::default()
            },
        )
    }

    pub(crate) fn eonyx_ok(&self, args: &[&str]) -> Output {
        let out = run_with_stdin(self.cmd(args), "");
        assert_eq!(
            out.status.code(),
            Some(0),
            "eonyx {args:?}: {}",
            stderr(&out)
        );
        out
    }

    pub(crate) fn miners(&self) -> Vec<RecordedRequest> {
        self.fake.miner_requests()
    }

    /// The agent's own requests (not mining, not compaction).
    pub(crate) fn turns(&self) -> Vec<RecordedRequest> {
        self.agent_requests()
            .into_iter()
            .filter(|r| !r.is_miner())
            .collect()
    }

    pub(crate) fn review_json(&self) -> Vec<Value> {
        let out = self.eonyx_ok(&["memory", "review", "--json"]);
        serde_json::from_str::<Value>(&stdout(&out))
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }
}

/// The text of a mining request's user message.
pub(crate) fn mined_text(r: &RecordedRequest) -> String {
    r.user_texts().join("\n")
}

pub(crate) fn extractor(
    memories: Value,
) -> impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static {
    move |_| Reply::text(json!({ "memories": memories }).to_string())
}
