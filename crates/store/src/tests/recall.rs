//! Recall never finds earlier `recall` calls or their results again.

use eonyx_core::{Message, ToolCall};

use super::*;
use crate::RecallOptions;

fn recall_call(id: &str, query: &str) -> Message {
    let mut m = Message::assistant("");
    m.tool_calls = vec![ToolCall {
        id: id.into(),
        name: "recall".into(),
        arguments: serde_json::json!({"query": query}),
    }];
    m
}

#[test]
fn results_of_earlier_recalls_are_not_hits_and_the_limit_fills_with_real_ones() {
    let t = t();
    let mut w = new_writer(&t.store);
    let real: Vec<String> = (1..=4)
        .map(|n| format!("note {n}: the zebra port at the café is 77{n}"))
        .collect();
    w.append_message(&Message::user(real[0].as_str())).unwrap();
    w.append_message(&Message::user(real[1].as_str())).unwrap();
    // Two earlier recalls whose results quote the real hits.
    for (id, n) in [("call_1", 1), ("call_2", 2)] {
        w.append_message(&recall_call(id, "zebra")).unwrap();
        w.append_message(&Message::tool_result(
            id,
            format!(
                "recall: 2 matches for \"zebra\"\n\n[session x · seq {n} · user · t]\n{}\n",
                real[0]
            ),
        ))
        .unwrap();
        w.append_message(&Message::assistant("the zebra port is as quoted"))
            .unwrap();
    }
    // A later call that reuses an id recall used is a real hit.
    let mut reuse = Message::assistant("");
    reuse.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "shell".into(),
        arguments: serde_json::json!({"command": "cat ports"}),
    }];
    w.append_message(&reuse).unwrap();
    w.append_message(&Message::tool_result("call_1", real[2].as_str()))
        .unwrap();
    w.append_message(&Message::user(real[3].as_str())).unwrap();

    let sessions = [w.id().clone()];
    let all = |limit| RecallOptions {
        sessions: &sessions,
        exclude_from: None,
        limit,
    };
    let found = recall(&t.store, "zebra", all(5));
    let texts: Vec<String> = found
        .hits
        .iter()
        .map(|h| h.record.message.content.text())
        .collect();
    assert!(
        texts.iter().all(|t| !t.starts_with("recall:")),
        "a recall result came back: {texts:#?}"
    );
    // Newest first: the four real notes and the two assistant answers that
    // mention the word; the recall calls' own arguments do not match.
    assert_eq!(found.total, 6, "{texts:#?}");
    assert_eq!(
        texts,
        [
            real[3].as_str(),
            real[2].as_str(),
            "the zebra port is as quoted",
            "the zebra port is as quoted",
            real[1].as_str(),
        ]
    );

    // Without the prefilter (a non-ASCII term: every line is parsed) the
    // recall results are skipped too.
    let r = recall(&t.store, "café", all(50));
    assert_eq!(r.total, 4);
    assert!(
        r.hits
            .iter()
            .all(|h| !h.record.message.content.text().starts_with("recall:"))
    );
}
