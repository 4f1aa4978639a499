//! A native compaction's items go only to the server that made them (issue
//! 56, SPEC 31 settled, docs/compaction.md#native-compaction): the record
//! names its `base_url`; after `/model` to a model of the same name on
//! another base URL, that server gets eonyx's own summary and never the
//! opaque item, and so does a resumed session whose record was written
//! before `base_url` was kept, once the model is changed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::{FakeServer, NativeCompact};

use crate::agent::{code, records};
use crate::compaction_native::{Wire, carried, compactions, fx, said, summarizer_requests};
use crate::util::stderr;

/// Adds `[models.other]`: the same model name and wire on `server`.
fn add_same_name_elsewhere(fx: &crate::agent::Fx, server: &FakeServer) {
    let path = fx.sb.config.join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[models.other]\nprovider = \"openai\"\napi = \"responses\"\nbase_url = \"{}\"\nname = \"fake-model\"\ncontext_window = 32768\nmax_output_tokens = 256\nretries = 0\n",
        server.base_url()
    ));
    std::fs::write(&path, text).unwrap();
}

#[test]
fn a_same_named_model_on_another_base_url_never_gets_the_item() {
    let fx = fx(Wire::Responses, Some("auto"), NativeCompact::Works);
    let other = FakeServer::start();
    add_same_name_elsewhere(&fx, &other);
    let o = fx.run(
        &[],
        "one CODEWORD-ONE\ntwo\n/compact\nthree\n/model other\nfour\n",
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let saved = compactions(&fx);
    assert_eq!(saved[0]["native"]["base_url"], fx.fake.base_url());
    let err = said(&o);
    assert!(err.contains("compacted natively by another model"), "{err}");
    let item = serde_json::to_string(&fx.fake.native_issued()[0]).unwrap();
    for r in other.chat_requests() {
        assert!(carried(&r).is_empty(), "the other server got an item");
        assert!(!r.raw_body.contains(&item));
    }
    let summaries: Vec<_> = other
        .chat_requests()
        .into_iter()
        .filter(eonyx_tests::RecordedRequest::is_summarizer)
        .collect();
    assert_eq!(
        summaries.len(),
        1,
        "eonyx's own summary, by the other server"
    );
    assert!(summaries[0].all_text().contains("CODEWORD-ONE"));
    assert_eq!(summarizer_requests(&fx).len(), 0);
}

#[test]
fn a_record_without_base_url_counts_as_another_servers_once_the_model_changes() {
    let fx = fx(Wire::Responses, Some("auto"), NativeCompact::Works);
    let o = fx.run(&[], "one CODEWORD-ONE\ntwo\n/compact\nthree\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    // Rewrite the record as one written before `base_url` was kept.
    let path = fx.session();
    let text: Vec<String> = records(&path)
        .into_iter()
        .map(|mut r| {
            if let Some(n) = r.get_mut("native").and_then(|n| n.as_object_mut()) {
                assert!(n.remove("base_url").is_some());
            }
            r.to_string()
        })
        .collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    let item = serde_json::to_string(&fx.fake.native_issued()[0]).unwrap();
    // Same model, as before: the item is still sent.
    let o = fx.run(&["-c"], "four\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(fx.agent_requests().pop().unwrap().raw_body.contains(&item));
    // Another model of the same name on another server: never.
    let other = FakeServer::start();
    add_same_name_elsewhere(&fx, &other);
    let o = fx.run(&["-c", "--model", "other"], "five\n");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!other.chat_requests().is_empty());
    for r in other.chat_requests() {
        assert!(!r.raw_body.contains(&item), "the other server got the item");
    }
}
