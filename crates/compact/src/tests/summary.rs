//! The summarizer request: structure, bounds, incremental prompt.

use super::*;

#[test]
fn summary_request_is_structured_and_bounded() {
    let mut h = Hist::new();
    h.user("Please fix the parser; never touch Cargo.lock.");
    h.tool(
        "read_file",
        json!({"path": "src/parse.rs"}),
        &"p".repeat(50_000),
    );
    h.say("Fixed.");
    let r = summary_request(None, &h.recs, None, &cfg(), "m1", 200_000, &est());
    assert!(r.system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX));
    assert!(r.temperature.is_some_and(|t| t <= 0.2));
    assert_eq!(r.max_tokens, Some(4096));
    assert!(r.tools.is_empty());
    assert_eq!(r.model, "m1");
    assert_eq!(r.messages.len(), 1);
    let u = r.messages[0].content.text();
    assert!(u.contains("never touch Cargo.lock"));
    assert!(u.contains("no previous summary"));
    assert!(u.contains("characters of this tool result cut for the summary"));
    for s in SECTIONS {
        assert!(r.system.text().contains(&format!("## {s}")));
    }
    // A small window: the request plus the answer fit in it.
    let r = summary_request(None, &h.recs, None, &cfg(), "m1", 2048, &est());
    let size = request_size(&r.system, &r.messages, &[]);
    let total = est().tokens_for(size) + u64::from(r.max_tokens.unwrap_or(0));
    assert!(total <= 2048, "{total}");
}

#[test]
fn incremental_summary_prompt_merges_the_previous_one() {
    let mut h = Hist::new();
    h.user("now use tabs");
    let prev = format!("{SUMMARY}\n\n{FACTS_HEADING}\nstuff");
    let r = summary_request(
        Some(&prev),
        &h.recs,
        Some("the parser"),
        &cfg(),
        "m",
        100_000,
        &est(),
    );
    let u = r.messages[0].content.text();
    assert!(u.contains("<previous-summary>\n## Active goal\nship it"));
    assert!(u.contains("Newer information wins"));
    assert!(!u.contains(FACTS_HEADING), "facts are merged mechanically");
    assert!(u.contains("focus on: the parser"));
}

#[test]
fn summary_request_snapshot() {
    let mut h = Hist::new();
    h.user("Rename `foo` to `bar` in src/lib.rs. Keep the public API.");
    h.tool(
        "grep",
        json!({"path": "src", "pattern": "foo"}),
        "src/lib.rs:3: fn foo()",
    );
    h.tool(
        "shell",
        json!({"command": "cargo test"}),
        "exit status: 0\nok",
    );
    h.say("Renamed; tests pass.");
    let r = summary_request(
        Some("## Active goal\nearlier goal"),
        &h.recs,
        Some("API"),
        &cfg(),
        "m",
        100_000,
        &est(),
    );
    insta::assert_snapshot!(format!(
        "model: {}\ntemperature: {:?}\nmax_tokens: {:?}\ntools: {}\n--- system ---\n{}\n--- user ---\n{}",
        r.model,
        r.temperature,
        r.max_tokens,
        r.tools.len(),
        r.system.text(),
        r.messages[0].content.text()
    ));
}
