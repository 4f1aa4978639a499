//! The fake provider server: axum on 127.0.0.1, on its own tokio runtime.
//!
//! This file holds the server's state and its start and stop; the rest is
//! split by concern: `script` (the replies it gives), `quirks` (faults and
//! the imitated servers' peculiarities), `recording` (the requests it
//! kept), `timeline` (the order requests started and ended in), `routing`
//! (what each request gets) and `render` (the wire bytes).

mod native;
mod quirks;
mod reasoning;
mod recording;
mod render;
mod routing;
mod script;
mod timeline;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::recorded::RecordedRequest;
use crate::reply::Reply;
use crate::serving::Serving;
use crate::wire::OverflowFlavor;

pub use native::{COMPACTION_BETA, NativeCompact};
pub use quirks::{Ollama, Refuse};
use routing::handle;
pub use script::{FORGETFUL_SUMMARY, NO_MEMORIES};
pub use timeline::{Moment, Span};

/// A JSON body with its status (the routing, the quirks and the error
/// replies all answer this way).
fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A closure consulted before the reply queue for every chat request;
/// `Some(reply)` answers the request without consuming the queue.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Option<Reply> + Send + Sync>;

struct Inner {
    queue: VecDeque<Reply>,
    default_reply: Reply,
    responder: Option<Responder>,
    /// Answers memory-mining requests (see [`FakeServer::set_extractor`]).
    extractor: Option<Responder>,
    context_window: Option<u64>,
    flavor: OverflowFlavor,
    props_ctx: Option<u64>,
    /// `total_slots` in `/props`.
    total_slots: u64,
    /// Added to the delay of every summarizer reply.
    summarizer_delay: std::time::Duration,
    timeline: Vec<timeline::Moment>,
    models_ctx: Option<u64>,
    /// `/v1/models` lists `model_id` without any window.
    list_models: bool,
    ollama: Option<Ollama>,
    refuse: Refuse,
    refusals: usize,
    truncated: usize,
    model_id: String,
    api_key: Option<String>,
    requests: Vec<RecordedRequest>,
    previous_prompt: Option<String>,
    next_id: u64,
    /// Refuse requests that do not send reasoning back as each real API
    /// requires (see [`FakeServer::require_reasoning_back`]).
    reasoning_strict: bool,
    /// The reasoning text of every tool call made with reasoning, by call id.
    issued: std::collections::HashMap<String, String>,
    /// How native compaction is served (see [`FakeServer::native_compaction`]).
    native: native::NativeCompact,
    /// Every native item and block issued, exactly as sent.
    native_issued: Vec<Value>,
    /// Native compact calls answered.
    native_count: u64,
}

type Shared = Arc<Mutex<Inner>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fake OpenAI / Anthropic / llama.cpp server on `127.0.0.1:<random port>`.
///
/// It runs on its own multi-thread tokio runtime, so it works from plain
/// `#[test]` functions as well as from inside async tests. Dropping it stops
/// the server and closes every connection.
pub struct FakeServer {
    serving: Serving,
    shared: Shared,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.serving.addr())
            .finish_non_exhaustive()
    }
}

impl FakeServer {
    /// Start a server; panics (this is test support) when it cannot bind.
    pub fn start() -> FakeServer {
        match Self::try_start() {
            Ok(server) => server,
            Err(e) => panic!("the fake provider server could not start on 127.0.0.1: {e}"),
        }
    }

    /// Start a server, reporting bind or runtime failures.
    pub fn try_start() -> std::io::Result<FakeServer> {
        let shared: Shared = Arc::new(Mutex::new(Inner {
            queue: VecDeque::new(),
            default_reply: Reply::default(),
            responder: None,
            extractor: None,
            context_window: None,
            flavor: OverflowFlavor::default(),
            props_ctx: None,
            total_slots: 1,
            summarizer_delay: std::time::Duration::ZERO,
            timeline: Vec::new(),
            models_ctx: None,
            list_models: false,
            ollama: None,
            refuse: Refuse::default(),
            refusals: 0,
            truncated: 0,
            model_id: "fake-model".into(),
            api_key: None,
            requests: Vec::new(),
            previous_prompt: None,
            next_id: 1,
            reasoning_strict: false,
            issued: Default::default(),
            native: native::NativeCompact::Absent,
            native_issued: Vec::new(),
            native_count: 0,
        }));
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let serving = Serving::start("eonyx-fake-server", 2, app)?;
        Ok(FakeServer { serving, shared })
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.serving.addr())
    }

    /// `http://127.0.0.1:PORT` (where `/props` lives).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.serving.addr())
    }

    pub fn addr(&self) -> SocketAddr {
        self.serving.addr()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.shared)
    }
}
