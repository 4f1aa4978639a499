//! The scripted axum server the HTTP tests talk to on loopback, and the
//! model, request and send helpers they share.

#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use eonyx_core::config::ProviderKind;
use eonyx_core::{
    ChatRequest, Message, ModelConfig, Provider, ProviderError, StreamEvent, SystemPrompt,
};
use futures_util::StreamExt;
use serde_json::Value;

#[derive(Clone)]
pub(crate) enum Reply {
    /// 200 with an SSE body.
    Sse(String),
    /// Any status with a body and extra headers.
    Status(u16, Vec<(&'static str, String)>, String),
    /// 200 SSE: send this, then nothing, forever.
    Stall(String),
    /// 200 SSE: send this, then break the connection.
    Break(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Clone, Default)]
pub(crate) struct Fake {
    pub routes: Arc<Mutex<HashMap<String, VecDeque<Reply>>>>,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Fake {
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn handle(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    fake.requests.lock().unwrap().push(Recorded {
        method: method.to_string(),
        path: path.clone(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = {
        let mut routes = fake.routes.lock().unwrap();
        match routes.get_mut(&path) {
            Some(q) if q.len() > 1 => q.pop_front(),
            Some(q) => q.front().cloned(),
            None => None,
        }
    };
    let sse = |body: Body| {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .unwrap()
    };
    match reply {
        None => Response::builder()
            .status(404)
            .body(Body::from("not found"))
            .unwrap(),
        Some(Reply::Sse(s)) => sse(Body::from(s)),
        Some(Reply::Status(code, headers, body)) => {
            let mut b = Response::builder().status(StatusCode::from_u16(code).unwrap());
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(Body::from(body)).unwrap()
        }
        Some(Reply::Stall(first)) => {
            let s = futures_util::stream::once(async move { Ok::<_, std::io::Error>(first) })
                .chain(futures_util::stream::pending());
            sse(Body::from_stream(s))
        }
        Some(Reply::Break(first)) => {
            // The pause lets the headers and first chunk reach the client.
            let s = futures_util::stream::once(async move { Ok(first) }).chain(
                futures_util::stream::once(async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(std::io::Error::other("connection reset"))
                }),
            );
            sse(Body::from_stream(s))
        }
    }
}

pub(crate) async fn serve(routes: Vec<(&str, Vec<Reply>)>) -> (String, Fake) {
    let fake = Fake::default();
    {
        let mut r = fake.routes.lock().unwrap();
        for (path, replies) in routes {
            r.insert(path.to_owned(), replies.into());
        }
    }
    let app = Router::new().fallback(handle).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), fake)
}

pub(crate) fn model(kind: ProviderKind, base_url: String) -> ModelConfig {
    let mut m = ModelConfig::with_defaults("test", kind);
    m.base_url = base_url;
    m.name = "test-model".into();
    m.api_key_env = Some("TEST_KEY".into());
    m.retries = 4;
    m.idle_timeout_secs = 5;
    m
}

pub(crate) fn request() -> ChatRequest {
    ChatRequest::new(
        "test-model",
        SystemPrompt {
            stable: "stable".into(),
            suffix: "date".into(),
        },
        vec![Message::user("hi")],
    )
}

pub(crate) const OK_STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n",
    "data: [DONE]\n\n",
);

pub(crate) async fn send(
    p: &dyn Provider,
    req: &ChatRequest,
) -> (Result<String, ProviderError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let r = p
        .send(req, &mut |e| events.push(e))
        .await
        .map(|r| r.message.content.text());
    (r, events)
}
