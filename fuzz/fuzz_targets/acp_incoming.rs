//! Fuzz what an ACP client sends (docs/acp.md): one JSON-RPC line, its
//! params read as the request its method names, then eonyx's reading of
//! them (session ids, MCP server configs, the prompt's content blocks with
//! their file links and images, mode ids). Never panics. Inputs that are
//! not JSON are tried once more wrapped as a `session/prompt`'s text, so
//! the prompt path sees arbitrary bytes too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    eonyx_acp::fuzzing::incoming(data);
    if serde_json::from_slice::<serde_json::Value>(data).is_err() {
        let text = String::from_utf8_lossy(data);
        let uri = format!("file://{}", text.trim());
        let line = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": text, "prompt": [
                {"type": "text", "text": text},
                {"type": "resource_link", "name": "x", "uri": uri},
                {"type": "image", "mimeType": "image/png", "data": text},
            ]}
        });
        eonyx_acp::fuzzing::incoming(line.to_string().as_bytes());
    }
});
