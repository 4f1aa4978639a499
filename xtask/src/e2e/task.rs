//! The task stage of `cargo xtask e2e`: the same reads done by the main
//! agent itself, then delegated to one `explore` task, and what each costs
//! the parent's window: the prompt tokens llama-server counts for the
//! parent's last request (the window the conversation goes on with).
//!
//! Gemma 3 270M is a base model that does not call tools reliably, so the
//! decisions are scripted: eonyx talks to the fake server, whose responder
//! sends every request eonyx makes to llama-server first (`max_tokens` 1,
//! so llama-server tokenizes it with the model's real chat template and
//! prefills it) and answers with the scripted reply carrying llama-server's
//! usage, which eonyx calibrates its estimates with.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result, bail};
use eonyx_tests::http::post_json;
use eonyx_tests::{FakeConfig, FakeServer, RecordedRequest, Reply, TestEnv, UsageOverride};
use serde_json::{Value, json};

use super::pct;

/// The context of the llama-server this stage starts (the direct reads do
/// not fit the default 2048).
pub(super) const TASK_CTX: u32 = 8192;

/// The files read, and the code word each holds.
const NOTES: [(&str, &str); 4] = [
    ("notes/alpha.md", "CODE-ALPHA-17"),
    ("notes/beta.md", "CODE-BETA-29"),
    ("notes/gamma.md", "CODE-GAMMA-31"),
    ("notes/delta.md", "CODE-DELTA-43"),
];

/// A sentence only the files hold (the child's report never repeats it).
const FILLER: &str = "This paragraph is filler that only the note files contain.";

/// What a child's system prompt says in its `# Task` section.
const CHILD_MARK: &str = "# Task\n\nYou are a sub-agent of eonyx";

const ASK: &str = "Read the four notes under notes/ and tell me each one's code word.";

/// One request eonyx sent, as llama-server counted it.
#[derive(Debug, Clone)]
struct Seen {
    child: bool,
    prompt_tokens: Option<u64>,
    /// The request carried the files' text.
    has_files: bool,
}

/// One run's requests.
#[derive(Debug, Default)]
struct Run {
    seen: Vec<Seen>,
}

impl Run {
    fn last(&self, child: bool) -> Option<u64> {
        self.seen
            .iter()
            .rev()
            .find(|s| s.child == child)
            .and_then(|s| s.prompt_tokens)
    }

    fn count(&self, child: bool) -> usize {
        self.seen.iter().filter(|s| s.child == child).count()
    }
}

fn reads() -> Reply {
    Reply::tool_calls(
        NOTES
            .iter()
            .map(|(path, _)| ("read_file", json!({ "path": path }))),
    )
}

/// The main agent's `task` call: the same reads, in an explore child.
fn delegation() -> Reply {
    let paths = NOTES.map(|(p, _)| p).join(", ");
    Reply::tool_call(
        "task",
        json!({
            "prompt": format!("Read {paths} and report each file's code word."),
            "description": "read the four notes",
            "profile": "explore",
        }),
    )
}

/// The scripted decision for a request: read (directly or in the child),
/// delegate, or answer with the code words the tool results hold.
fn decide(r: &RecordedRequest, delegate: bool) -> Reply {
    if r.is_summarizer() {
        return Reply::text("## Active goal\nread the notes");
    }
    let child = r.system_text().contains(CHILD_MARK);
    let results = r.tool_results().join("\n");
    if results.is_empty() {
        return match (child, delegate) {
            (false, true) => delegation(),
            _ => reads(),
        };
    }
    let found: Vec<String> = NOTES
        .iter()
        .filter(|(_, word)| results.contains(word))
        .map(|(path, word)| format!("{path}: {word}"))
        .collect();
    Reply::text(format!("The code words: {}.", found.join(", ")))
}

/// llama-server's prompt tokens for `body` (prefilled, one token out).
fn count(llama: &str, body: &Value) -> Option<u64> {
    let mut body = body.clone();
    let obj = body.as_object_mut()?;
    obj.insert("stream".into(), json!(false));
    obj.remove("stream_options");
    obj.insert("max_tokens".into(), json!(1));
    let r = post_json(&format!("{llama}/v1/chat/completions"), &body, &[]).ok()?;
    r.json()?.pointer("/usage/prompt_tokens")?.as_u64()
}

/// Run the stage against llama-server at `llama` (its root URL, started
/// with [`TASK_CTX`]); prints the figures and returns the failed checks.
pub(super) fn task_stage(bin: &Path, llama: &str) -> Result<usize> {
    println!(
        "== task stage: {} reads of notes/*.md, by the main agent vs delegated to one explore task",
        NOTES.len()
    );
    println!(
        "   (decisions scripted by the fake server; every request prefilled by llama-server, n_ctx {TASK_CTX}, whose usage eonyx sees)"
    );
    let env = TestEnv::new().context("creating temporary directories")?;
    for (path, word) in NOTES {
        let mut text = format!("# {path}\n\nThe code word of this note is {word}.\n\n");
        for i in 0..6 {
            text.push_str(&format!(
                "{FILLER} It describes part {i} of the project at some length, so that reading it fills a little of the window.\n"
            ));
        }
        let file = env.project.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, text)?;
    }
    let fake = FakeServer::try_start().context("starting the fake server")?;
    let delegate = Arc::new(AtomicBool::new(false));
    let log: Arc<Mutex<Run>> = Arc::default();
    {
        let (delegate, log, llama) = (delegate.clone(), log.clone(), llama.to_owned());
        fake.set_responder(move |r| {
            let prompt_tokens = count(&llama, &r.body);
            let child = r.system_text().contains(CHILD_MARK);
            if !r.is_summarizer() {
                log.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .seen
                    .push(Seen {
                        child,
                        prompt_tokens,
                        has_files: r.raw_body.contains(FILLER),
                    });
            }
            let reply = decide(r, delegate.load(Ordering::SeqCst));
            Some(match prompt_tokens {
                Some(p) => reply.with_usage(UsageOverride {
                    prompt_tokens: Some(p),
                    completion_tokens: Some(1),
                    cached_tokens: Some(0),
                }),
                None => reply,
            })
        });
    }
    let config = FakeConfig::openai(&fake.base_url())
        .set("retries", 0)
        .set("context_window", i64::from(TASK_CTX))
        .set("max_output_tokens", 128);
    env.write_config(&config)?;

    let mut runs = Vec::new();
    for delegated in [false, true] {
        delegate.store(delegated, Ordering::SeqCst);
        let out = env
            .command(bin)
            .args(["run", ASK])
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", bin.display()))?;
        if !out.status.success() {
            bail!(
                "eonyx run ({}) failed: {}",
                if delegated { "delegated" } else { "direct" },
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let run = std::mem::take(&mut *log.lock().unwrap_or_else(PoisonError::into_inner));
        runs.push(run);
    }
    let (direct, delegated) = (&runs[0], &runs[1]);
    let window = u64::from(TASK_CTX);
    let line = |name: &str, run: &Run| {
        let parent = run.last(false).unwrap_or(0);
        let mut s = format!(
            "{name:<10} parent: last request {parent} tokens ({:.1}% of {window}), {} requests",
            pct(parent, window),
            run.count(false)
        );
        if run.count(true) > 0 {
            s.push_str(&format!(
                "; child: last request {} tokens, {} requests",
                run.last(true).unwrap_or(0),
                run.count(true)
            ));
        }
        s
    };
    println!("{}", line("direct", direct));
    println!("{}", line("delegated", delegated));

    let mut failed = 0;
    let mut check = |ok: bool, what: String| {
        println!("{}  {what}", if ok { "PASS" } else { "FAIL" });
        failed += usize::from(!ok);
    };
    let counted = |run: &Run| run.seen.iter().all(|s| s.prompt_tokens.is_some());
    check(
        counted(direct) && counted(delegated),
        "llama-server counted every request (none over its window)".into(),
    );
    let (d, t) = (
        direct.last(false).unwrap_or(0),
        delegated.last(false).unwrap_or(0),
    );
    check(
        t > 0 && t < d,
        format!(
            "the parent's window with delegation: {t} of {d} tokens ({:.1}%, {} fewer)",
            pct(t, d),
            d.saturating_sub(t)
        ),
    );
    check(
        delegated.count(true) >= 2
            && delegated.seen.iter().any(|s| s.child && s.has_files)
            && !delegated.seen.iter().any(|s| !s.child && s.has_files),
        "delegated: the files' text reached the child's requests and no parent request".into(),
    );
    check(
        direct.seen.iter().any(|s| !s.child && s.has_files),
        "direct: the files' text is in the parent's window".into(),
    );
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_reads_delegates_and_reports_the_code_words() {
        let body = |system: &str, tool: Option<&str>| {
            let mut messages = vec![
                json!({"role": "system", "content": system}),
                json!({"role": "user", "content": ASK}),
            ];
            if let Some(t) = tool {
                messages.push(json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}));
                messages.push(json!({"role": "tool", "tool_call_id": "c", "content": t}));
            }
            json!({"model": "m", "messages": messages})
        };
        let req = |v: Value| RecordedRequest {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            headers: Default::default(),
            raw_body: v.to_string(),
            body: v,
            prompt_tokens: 0,
        };
        let parent = req(body("You are eonyx.", None));
        assert_eq!(decide(&parent, false), reads());
        assert_eq!(decide(&parent, true), delegation());
        let child = req(body(&format!("x\n\n{CHILD_MARK} (profile explore)"), None));
        assert_eq!(decide(&child, true), reads());
        let done = req(body(
            &format!("x\n\n{CHILD_MARK}"),
            Some("The code word of this note is CODE-BETA-29."),
        ));
        assert_eq!(
            decide(&done, true),
            Reply::text("The code words: notes/beta.md: CODE-BETA-29.")
        );
    }
}
