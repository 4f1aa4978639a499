//! What a client sends, read as the server reads it, for the fuzz target
//! `acp_incoming` (fuzz/): one JSON-RPC line, its params as the request
//! type its method names, then eonyx's own reading of them (session ids,
//! MCP server configs, the prompt's content blocks, mode ids). Nothing is
//! opened or run: no session, no agent.

use std::sync::OnceLock;

use agent_client_protocol::v1::schema::{
    CancelNotification, ForkSessionRequest, InitializeRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, SetSessionModeRequest,
};
use camino::Utf8PathBuf;
use eonyx_agent::attach::AttachLimits;
use serde_json::Value;

/// An empty directory a resource link is looked up from (made once).
fn place() -> &'static Utf8PathBuf {
    static PLACE: OnceLock<Utf8PathBuf> = OnceLock::new();
    PLACE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("eonyx-fuzz-acp-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        Utf8PathBuf::from_path_buf(dir).unwrap_or_else(|_| Utf8PathBuf::from("/nonexistent"))
    })
}

/// Read one line a client sent. Never panics, whatever the bytes.
pub fn incoming(line: &[u8]) {
    let Ok(msg) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        return;
    };
    let params = || msg.get("params").cloned().unwrap_or(Value::Null);
    let limits = AttachLimits {
        text_cap_bytes: 64 * 1024,
        max_image_bytes: 1024 * 1024,
    };
    match method {
        "initialize" => {
            let _ = serde_json::from_value::<InitializeRequest>(params()).ok();
        }
        "session/new" => {
            if let Ok(r) = serde_json::from_value::<NewSessionRequest>(params()) {
                for s in &r.mcp_servers {
                    let _ = crate::mcp::server(s);
                }
            }
        }
        "session/load" => {
            if let Ok(r) = serde_json::from_value::<LoadSessionRequest>(params()) {
                for s in &r.mcp_servers {
                    let _ = crate::mcp::server(s);
                }
                let _ = crate::server::stored(&r.session_id, r.cwd, r.mcp_servers);
            }
        }
        "session/resume" => {
            if let Ok(r) = serde_json::from_value::<ResumeSessionRequest>(params()) {
                let _ = crate::server::stored(&r.session_id, r.cwd, r.mcp_servers);
            }
        }
        "session/fork" => {
            if let Ok(r) = serde_json::from_value::<ForkSessionRequest>(params()) {
                let _ = crate::server::parse_id(&r.session_id);
            }
        }
        "session/prompt" => {
            if let Ok(r) = serde_json::from_value::<PromptRequest>(params()) {
                let _ = crate::server::parse_id(&r.session_id);
                let place = place();
                let _ = crate::prompt::input_of(&limits, place, place, &r.prompt, None);
                for b in &r.prompt {
                    if let agent_client_protocol::v1::schema::ContentBlock::ResourceLink(l) = b {
                        let _ = crate::prompt::file_path(&l.uri);
                    }
                }
            }
        }
        "session/set_mode" => {
            if let Ok(r) = serde_json::from_value::<SetSessionModeRequest>(params()) {
                let _ = crate::approval::Mode::parse(&r.mode_id.0);
            }
        }
        "session/cancel" => {
            let _ = serde_json::from_value::<CancelNotification>(params()).ok();
        }
        _ => {}
    }
}
