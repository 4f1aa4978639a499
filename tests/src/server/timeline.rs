//! The order of things: when each chat request started and ended, and marks
//! a test puts in between (e.g. "a line was written to eonyx's stdin"), in
//! one sequence. No clock: tests assert on order, never on durations.
//!
//! A request starts when it is recorded and ends when its response body is
//! complete (`completed`) or is dropped unfinished (the client went away:
//! a cancelled request).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures_util::{Stream, StreamExt};

use super::{FakeServer, Shared, lock};

/// One moment of the fake's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moment {
    /// A chat request arrived: its index in [`FakeServer::requests`], and
    /// whether it is a summarizer request.
    Started { request: usize, summarizer: bool },
    /// Its response ended: completely sent, or dropped unfinished.
    Ended { request: usize, completed: bool },
    /// [`FakeServer::mark`].
    Mark(String),
}

/// A chat request's place in the timeline (positions index
/// [`FakeServer::timeline`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Index in [`FakeServer::requests`].
    pub request: usize,
    pub summarizer: bool,
    pub started: usize,
    /// `None`: still running.
    pub ended: Option<usize>,
    /// The response was sent completely.
    pub completed: bool,
}

impl Span {
    /// Whether the request was running at position `at`.
    pub fn in_flight_at(&self, at: usize) -> bool {
        self.started < at && self.ended.is_none_or(|e| e > at)
    }
}

impl FakeServer {
    /// Put a mark in the timeline (returns its position).
    pub fn mark(&self, label: impl Into<String>) -> usize {
        let mut inner = self.inner();
        inner.timeline.push(Moment::Mark(label.into()));
        inner.timeline.len() - 1
    }

    /// Every moment so far, in order.
    pub fn timeline(&self) -> Vec<Moment> {
        self.inner().timeline.clone()
    }

    /// Every chat request's span, in the order they started.
    pub fn spans(&self) -> Vec<Span> {
        let timeline = self.timeline();
        let mut spans: Vec<Span> = Vec::new();
        for (at, m) in timeline.iter().enumerate() {
            match m {
                Moment::Started {
                    request,
                    summarizer,
                } => spans.push(Span {
                    request: *request,
                    summarizer: *summarizer,
                    started: at,
                    ended: None,
                    completed: false,
                }),
                Moment::Ended { request, completed } => {
                    if let Some(s) = spans.iter_mut().find(|s| s.request == *request) {
                        s.ended = Some(at);
                        s.completed = *completed;
                    }
                }
                Moment::Mark(_) => {}
            }
        }
        spans
    }
}

/// Records the end of one request: completed when the body stream ends,
/// dropped unfinished otherwise (also when the handler itself is dropped
/// before it answered).
pub(super) struct EndGuard {
    shared: Shared,
    request: usize,
    done: bool,
}

impl EndGuard {
    /// Watch chat request `request`, whose start was recorded.
    pub(super) fn new(shared: &Shared, request: usize) -> EndGuard {
        EndGuard {
            shared: shared.clone(),
            request,
            done: false,
        }
    }

    fn end(&mut self, completed: bool) {
        if !self.done {
            self.done = true;
            lock(&self.shared).timeline.push(Moment::Ended {
                request: self.request,
                completed,
            });
        }
    }

    /// The response with its end recorded when its body is through.
    pub(super) fn watch(self, response: Response) -> Response {
        let (parts, body) = response.into_parts();
        let stream = Watched {
            inner: Box::pin(body.into_data_stream()),
            guard: self,
        };
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.end(false);
    }
}

struct Watched {
    inner: Pin<Box<dyn Stream<Item = Result<Bytes, axum::Error>> + Send>>,
    guard: EndGuard,
}

impl Stream for Watched {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        match &next {
            Poll::Ready(None) => self.guard.end(true),
            Poll::Ready(Some(Err(_))) => self.guard.end(false),
            _ => {}
        }
        next
    }
}
