//! `eonyx sessions export --format markdown|html`, `/export` and the
//! session's cost (issue 39, docs/sessions.md, section "Export and cost"), through
//! the real binary: a session with two compactions, a rewind, a task and
//! tool calls, read back as a user would.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::Path;

use eonyx_tests::Reply;
use html5gum::{DefaultEmitter, Token, Tokenizer};
use serde_json::{Value, json};

use crate::agent::*;
use crate::tasks::{parent_and_child, task};
use crate::util::{stderr, stdout};

/// What a user typed that must come out as text, never as markup.
const HOSTILE: &str = "look </script><script>alert(1)</script> <b>bold</b> <!-- x --> ```";
/// A reply that opens a code fence and never closes it.
const UNCLOSED: &str = "ANSWER-THREE\n```rust\nfn unclosed() {";
/// Text of a reply that holds markup and a long backtick run.
const HOSTILE_ANSWER: &str = "ANSWER-FIVE </style><img src=x onerror=alert(2)> ```` done";

/// One session with everything an export shows: a tool call, a task, a
/// compaction, a rewound turn holding hostile text, a second compaction.
fn rich_session() -> Fx {
    let fx = Fx::with(|c| {
        c.context_window(Some(8192))
            .merge_top_toml("[compaction]\nkeep_turns = 1\n")
            .unwrap()
    });
    fx.sb.write("work/notes.txt", "hello from the notes file\n");
    let summaries = std::sync::atomic::AtomicUsize::new(0);
    fx.fake.set_summarizer(move |_| {
        let n = summaries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Reply::text(format!("SUMMARY-{n} keeps what matters"))
    });
    fx.fake.push_all([
        Reply::tool_call("read_file", json!({"path": "notes.txt"})),
        Reply::text("The notes say hello. ANSWER-ONE"),
        Reply::tool_call(
            "task",
            task("look for the notes", "find the notes", Some("explore")),
        ),
        Reply::text("CHILD-ANSWER the notes are in notes.txt"),
        Reply::text("Delegated. ANSWER-TWO"),
        Reply::text(UNCLOSED),
        Reply::text("ANSWER-FOUR"),
        Reply::text(HOSTILE_ANSWER),
    ]);
    let input = format!(
        "read the notes CODEWORD-ALPHA\ndelegate a search CODEWORD-BETA\n/compact\n{HOSTILE}\n/rewind\nafter the rewind CODEWORD-GAMMA\n/compact\nlast one CODEWORD-DELTA\n"
    );
    let o = fx.run(&[], &input);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    fx
}

/// The message texts of a session file (user and assistant), in order.
fn texts(path: &Path) -> Vec<String> {
    records(path)
        .into_iter()
        .filter(|r| r["type"] == "message" && r["role"] != "tool")
        .filter_map(|r| r["content"].as_str().map(str::to_owned))
        .filter(|t| !t.is_empty())
        .collect()
}

fn count(path: &Path, kind: &str, role: Option<&str>) -> usize {
    records(path)
        .iter()
        .filter(|r| r["type"] == kind && role.is_none_or(|w| r["role"] == w))
        .count()
}

fn export(fx: &Fx, id: &str, format: &str) -> String {
    let o = fx.run(&["sessions", "export", id, "--format", format], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn markdown_holds_every_message_the_tool_calls_the_task_the_compactions_and_the_rewind() {
    let fx = rich_session();
    let ((parent, _), (_, child)) = parent_and_child(&fx);
    let id = session_id_of(&parent);
    let md = export(&fx, &id, "markdown");
    // Read as CommonMark: every line of every message is text of the
    // document (none swallowed by a fence or a raw HTML block), and each
    // message and compaction is its own heading.
    let doc = commonmark(&md);
    for t in texts(&parent) {
        for line in t.lines().filter(|l| !l.trim_start().starts_with("```")) {
            assert!(doc.text.contains(line), "missing {line:?} in\n{md}");
        }
    }
    let headed = count(&parent, "message", Some("user"))
        + count(&parent, "message", Some("assistant"))
        + count(&parent, "compaction", None);
    assert_eq!(doc.h2, headed, "{:?}", doc.text);
    assert!(
        doc.html.is_empty(),
        "raw HTML in the document: {:?}",
        doc.html
    );
    assert!(md.contains(&format!("| id | {id} |")), "{md}");
    // The tool call with its arguments, and its result.
    assert!(md.contains("**Tool call** `read_file`"), "{md}");
    assert!(md.contains("\"path\": \"notes.txt\""), "{md}");
    assert!(md.contains("hello from the notes file"), "{md}");
    // The child task named with its session id and its own export.
    let child_id = child["id"].as_str().unwrap();
    assert!(
        md.contains(&format!(
            "eonyx sessions export {child_id} --format markdown"
        )),
        "{md}"
    );
    // Each compaction at its place, with its summary quoted.
    assert_eq!(md.matches("## Compaction · #").count(), 2, "{md}");
    assert!(md.contains("> SUMMARY-1 keeps what matters"), "{md}");
    assert!(md.contains("> SUMMARY-2 keeps what matters"), "{md}");
    let first = md.find("## Compaction").unwrap();
    assert!(md.find("ANSWER-TWO").unwrap() < first && first < md.find("ANSWER-THREE").unwrap());
    // The rewind marked, and the turn it left out.
    assert!(md.contains("### Rewind · #"), "{md}");
    assert!(md.contains(" · rewound · "), "{md}");
    // The reply's unclosed fence is closed, so what follows is not code.
    assert!(
        md.contains("fn unclosed() {\n```\n\n### Rewind · #"),
        "{md}"
    );
    // A longer backtick run than the reply holds fences nothing here, but
    // the reply's own run stays intact.
    assert!(md.contains("````"), "{md}");
}

#[test]
fn html_parses_holds_the_texts_loads_nothing_escapes_and_charts_every_request() {
    let fx = rich_session();
    let ((parent, _), _) = parent_and_child(&fx);
    let id = session_id_of(&parent);
    let html = export(&fx, &id, "html");
    let page = parse(&html);
    assert!(page.errors.is_empty(), "parse errors: {:?}", page.errors);
    // Everything the session said is there as text.
    for t in texts(&parent) {
        assert!(page.text.contains(&t), "missing {t:?}");
    }
    assert!(page.text.contains(HOSTILE) && page.text.contains(HOSTILE_ANSWER));
    // Nothing runs and nothing is loaded: no script, no element that
    // fetches, no link off the page, no url() in the CSS.
    for tag in [
        "script", "img", "link", "iframe", "object", "embed", "base", "b",
    ] {
        assert!(
            !page.tags.iter().any(|(t, _)| t == tag),
            "a <{tag}> element"
        );
    }
    for (tag, attrs) in &page.tags {
        assert!(!attrs.contains_key("src"), "<{tag}> with src");
        if let Some(h) = attrs.get("href") {
            assert!(h.starts_with('#'), "<{tag}> links to {h}");
        }
        assert!(
            attrs.keys().all(|k| !k.starts_with("on")),
            "<{tag}> {attrs:?}"
        );
    }
    assert!(!html.contains("url(") && !html.contains("@import"));
    assert!(html.contains("prefers-color-scheme: dark"));
    // Tool output and the details fold.
    assert!(
        page.tags
            .iter()
            .any(|(t, a)| t == "details" && a.get("class").is_some_and(|c| c.contains("tool")))
    );
    // One point per request of the session, each compaction marked and
    // linked to its place in the transcript.
    let points = page
        .tags
        .iter()
        .filter(|(t, a)| t == "circle" && a.get("class").is_some_and(|c| c.starts_with("req")))
        .count();
    assert_eq!(points, count(&parent, "message", Some("assistant")));
    let marks: Vec<&String> = page
        .tags
        .iter()
        .filter(|(t, a)| t == "a" && a.get("class").is_some_and(|c| c == "mark"))
        .map(|(_, a)| &a["href"])
        .collect();
    assert_eq!(marks.len(), count(&parent, "compaction", None));
    for m in marks {
        let target = &m[1..];
        assert!(
            page.tags
                .iter()
                .any(|(_, a)| a.get("id").is_some_and(|i| i == target)),
            "{m} points nowhere"
        );
    }
    assert!(html.contains("window 8192"), "the window line");
    assert!(html.contains("class=\"threshold\""), "the threshold line");
}

/// A Markdown document as a CommonMark parser reads it.
struct Doc {
    /// Text and code, a newline at each line break and block end.
    text: String,
    /// Level-2 headings outside block quotes.
    h2: usize,
    /// Raw HTML outside `<details>`/`<summary>` (which fold reasoning).
    html: Vec<String>,
}

fn commonmark(md: &str) -> Doc {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
    let mut doc = Doc {
        text: String::new(),
        h2: 0,
        html: Vec::new(),
    };
    // Headings inside quotes are a summary's own.
    let mut quoted = 0;
    for ev in Parser::new(md) {
        match ev {
            Event::Text(t) | Event::Code(t) => doc.text.push_str(&t),
            Event::Start(Tag::BlockQuote(_)) => quoted += 1,
            Event::End(TagEnd::BlockQuote(_)) => {
                quoted -= 1;
                doc.text.push('\n');
            }
            Event::SoftBreak | Event::HardBreak | Event::End(_) => doc.text.push('\n'),
            Event::Start(Tag::Heading {
                level: HeadingLevel::H2,
                ..
            }) if quoted == 0 => doc.h2 += 1,
            Event::Html(h) | Event::InlineHtml(h)
                if !["<details>", "</details>", "<summary>"]
                    .iter()
                    .any(|ok| h.trim_start().starts_with(ok)) =>
            {
                doc.html.push(h.to_string())
            }
            _ => {}
        }
    }
    doc
}

/// A page as the tokenizer sees it.
struct Page {
    errors: Vec<String>,
    /// Every start tag with its attributes.
    tags: Vec<(String, std::collections::BTreeMap<String, String>)>,
    /// The text outside `<style>`, entities decoded.
    text: String,
}

fn parse(html: &str) -> Page {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut page = Page {
        errors: Vec::new(),
        tags: Vec::new(),
        text: String::new(),
    };
    let mut in_style = false;
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for token in Tokenizer::new_with_emitter(html, emitter) {
        match token.unwrap() {
            Token::StartTag(t) => {
                let name = s(&t.name);
                in_style = name == "style";
                let attrs = t
                    .attributes
                    .iter()
                    .map(|(k, v)| (s(k), s(&v.value)))
                    .collect();
                page.tags.push((name, attrs));
            }
            Token::EndTag(_) => in_style = false,
            Token::String(t) if !in_style => page.text.push_str(&s(&t.value)),
            Token::Error(e) => page.errors.push(format!("{:?}", e.value)),
            _ => {}
        }
    }
    page
}

#[test]
fn jsonl_stays_the_file_and_o_writes_a_file_and_bad_input_says_what_to_do() {
    let fx = rich_session();
    let ((parent, _), _) = parent_and_child(&fx);
    let id = session_id_of(&parent);
    let o = fx.run(&["sessions", "export", &id], "");
    assert_eq!(o.stdout, std::fs::read(&parent).unwrap(), "byte for byte");
    let out = fx.sb.work.join("s.html");
    let o = fx.run(
        &[
            "sessions",
            "export",
            &id,
            "--format",
            "html",
            "-o",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );

    let o = fx.run(&["sessions", "export", &id, "--format", "pdf"], "");
    assert_eq!(code(&o), Some(2));
    assert!(
        stderr(&o).contains("jsonl, markdown, html"),
        "{}",
        stderr(&o)
    );
    let missing = "20200101T000000-00000000";
    let o = fx.run(&["sessions", "export", missing, "--format", "markdown"], "");
    assert_eq!(code(&o), Some(2));
    assert!(stderr(&o).contains(missing), "{}", stderr(&o));

    // A torn tail: what is readable is exported, and stderr says so.
    eonyx_tests::tear_tail(&parent, 99).unwrap();
    let o = fx.run(&["sessions", "export", &id, "--format", "markdown"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("CODEWORD-DELTA"));
    assert!(stderr(&o).contains("torn"), "{}", stderr(&o));

    // A config that no longer loads does not stop an export: the JSONL
    // needs none, the readable formats go without the window and cost.
    std::fs::write(fx.sb.config.join("config.toml"), "model = \n").unwrap();
    let o = fx.run(&["sessions", "export", &id], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, std::fs::read(&parent).unwrap());
    let o = fx.run(&["sessions", "export", &id, "--format", "html"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("CODEWORD-DELTA"));
    assert!(
        stderr(&o).contains("without the window and the cost"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn slash_export_writes_markdown_or_html_by_extension() {
    let fx = Fx::replying([Reply::text("ANSWER-X")]);
    let o = fx.run(&[], "question CODEWORD-X\n/export\n/export page.html\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let id = session_id_of(&fx.session());
    let md = std::fs::read_to_string(fx.sb.work.join(format!("{id}.md"))).unwrap();
    assert!(md.starts_with("# Session ") && md.contains("CODEWORD-X") && md.contains("ANSWER-X"));
    let html = std::fs::read_to_string(fx.sb.work.join("page.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("ANSWER-X"));
    assert!(stderr(&o).contains("page.html"), "{}", stderr(&o));
}

#[test]
fn a_goal_shows_when_set_and_when_achieved_but_not_at_each_continuation() {
    let fx = Fx::replying([
        Reply::text("working on it"),
        Reply::tool_call(
            "goal_update",
            json!({"status": "achieved", "evidence": "GOAL-EVIDENCE-7"}),
        ),
        Reply::text("done"),
    ]);
    let o = fx.run(&[], "/goal make GOAL-TEXT-3 true\n/export\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let id = session_id_of(&fx.session());
    let md = std::fs::read_to_string(fx.sb.work.join(format!("{id}.md"))).unwrap();
    let goal_lines: Vec<&str> = md.lines().filter(|l| l.starts_with("*Goal ")).collect();
    assert_eq!(goal_lines.len(), 2, "{md}");
    assert!(
        goal_lines[0].starts_with("*Goal set: make GOAL-TEXT-3 true"),
        "{md}"
    );
    assert!(
        goal_lines[1]
            .starts_with("*Goal achieved: make GOAL-TEXT-3 true (evidence: GOAL-EVIDENCE-7)"),
        "{md}"
    );
}

#[test]
fn reasoning_is_folded_in_both_formats() {
    let fx = Fx::replying([Reply::text("ANSWER-R").with_reasoning("REASONING-TEXT-9")]);
    let o = fx.run(&[], "question\n/export\n/export page.html\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let id = session_id_of(&fx.session());
    let md = std::fs::read_to_string(fx.sb.work.join(format!("{id}.md"))).unwrap();
    let folded = md.find("<summary>Reasoning</summary>").expect(&md);
    let thought = md.find("REASONING-TEXT-9").expect(&md);
    let answer = md.find("ANSWER-R").expect(&md);
    assert!(folded < thought && thought < answer, "{md}");
    let html = std::fs::read_to_string(fx.sb.work.join("page.html")).unwrap();
    assert!(html.contains("REASONING-TEXT-9"), "{html}");
}

/// Prices of `[models.fake]` (USD per million tokens).
const PRICING: &str = "pricing = { input = 2.0, cached_input = 0.5, output = 8.0 }\n";

fn usage(prompt: u64, completion: u64, cached: u64) -> eonyx_tests::UsageOverride {
    eonyx_tests::UsageOverride {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        cached_tokens: Some(cached),
    }
}

/// A turn with a task: three requests with known usage, two of the parent
/// and one of the child.
fn priced_run(pricing: bool) -> (Fx, Vec<Value>) {
    let fx = Fx::with(|c| {
        if pricing {
            c.merge_model_toml(PRICING).unwrap()
        } else {
            c
        }
    });
    fx.fake.push_all([
        Reply::tool_call("task", task("count", "count things", Some("explore")))
            .with_usage(usage(1000, 100, 400)),
        Reply::text("child done").with_usage(usage(300, 50, 0)),
        Reply::text("parent done").with_usage(usage(1500, 20, 1000)),
    ]);
    let o = fx.run(&["run", "--json", "count things"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    (fx, crate::util::json_lines(&o.stdout))
}

/// USD of one request at [`PRICING`].
fn usd(prompt: u64, completion: u64, cached: u64) -> f64 {
    ((prompt - cached) as f64 * 2.0 + cached as f64 * 0.5 + completion as f64 * 8.0) / 1e6
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn cost_is_reported_tokens_times_prices_children_included() {
    let (fx, events) = priced_run(true);
    let want = usd(1000, 100, 400) + usd(300, 50, 0) + usd(1500, 20, 1000);
    let done = events
        .iter()
        .find(|e| e["type"] == "turn_completed")
        .unwrap();
    let turn = done["usage"]["cost_usd"].as_f64().unwrap();
    assert!(close(turn, want), "{turn} != {want}");

    let ((parent, _), (child, _)) = parent_and_child(&fx);
    let id = session_id_of(&parent);
    let o = fx.run(&["sessions", "--json"], "");
    let listed: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let row = listed.iter().find(|r| r["id"] == id.as_str()).unwrap();
    assert!(close(row["cost_usd"].as_f64().unwrap(), want), "{row}");
    let o = fx.run(&["sessions", "--json", "--all"], "");
    let listed: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let child_row = listed
        .iter()
        .find(|r| r["id"] == session_id_of(&child).as_str())
        .unwrap();
    assert!(close(
        child_row["cost_usd"].as_f64().unwrap(),
        usd(300, 50, 0)
    ));

    let o = fx.run(&["sessions", "show", &id], "");
    assert!(
        stdout(&o).contains(&format!("cost ${want:.4}")),
        "{}",
        stdout(&o)
    );
    let o = fx.run(&["-c", "--json"], "/status\n");
    let status = crate::util::json_lines(&o.stdout)
        .into_iter()
        .find(|e| e["type"] == "status")
        .unwrap();
    assert!(
        close(status["cost_usd"].as_f64().unwrap(), want),
        "{status}"
    );
    let md = export(&fx, &id, "markdown");
    assert!(md.contains(&format!("| cost | ${want:.4}")), "{md}");
}

#[test]
fn without_pricing_no_cost_is_shown_anywhere() {
    let (fx, events) = priced_run(false);
    let done = events
        .iter()
        .find(|e| e["type"] == "turn_completed")
        .unwrap();
    assert!(done["usage"].get("cost_usd").is_none(), "{done}");
    let ((parent, _), _) = parent_and_child(&fx);
    let id = session_id_of(&parent);
    let o = fx.run(&["sessions", "--json", "--all"], "");
    assert!(!stdout(&o).contains("cost_usd"), "{}", stdout(&o));
    let o = fx.run(&["sessions", "show", &id], "");
    assert!(!stdout(&o).contains("cost"), "{}", stdout(&o));
    let o = fx.run(&["-c", "--json"], "/status\n");
    assert!(!stdout(&o).contains("cost_usd"), "{}", stdout(&o));
    assert!(!export(&fx, &id, "markdown").contains("| cost |"));
}

#[test]
fn a_negative_price_is_a_config_error() {
    let fx = Fx::with(|c| {
        c.merge_model_toml("pricing = { input = -1.0, output = 2.0 }\n")
            .unwrap()
    });
    let o = fx.run(&["config"], "");
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("pricing.input"), "{}", stderr(&o));
}
