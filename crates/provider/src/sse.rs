//! Server-sent-event decoding for both wire protocols.
//!
//! Bytes are split into events by `eventsource-stream`; a [`Decoder`] turns
//! each event into [`StreamEvent`]s and, at the end, into the assembled
//! [`ChatResponse`]. The same decoders serve the live HTTP stream and the
//! pure [`crate::parse_openai_sse_chunks`] / [`crate::parse_anthropic_sse_chunks`] /
//! [`crate::parse_responses_sse_chunks`]
//! functions (used by tests and the fuzz target).
//!
//! A stream that ends before the server said it was finished is an error,
//! never a silently truncated answer.
//!
//! Each event's data is parsed as JSON here (so a malformed event fails the
//! same way for both protocols), then read as the protocol's typed wire
//! format (`openai/wire.rs`, `anthropic/wire.rs`) by its decoder
//! (`openai/stream.rs`, `anthropic/stream.rs`, `responses/stream.rs`), which builds on the shared
//! pieces here.

use eonyx_core::message::{Content, Message, Reasoning, Role, ToolCall, Usage};
use eonyx_core::{ChatResponse, FinishReason, ProviderError, StreamEvent};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{FutureExt, Stream, StreamExt};
use serde_json::Value;

/// Where a decoder puts the [`StreamEvent`]s it reads.
pub type Emit<'a> = &'a mut dyn FnMut(StreamEvent);

/// Turns the events of one response stream into [`StreamEvent`]s.
pub trait Decoder {
    /// Handle one SSE event, emitting what it carries.
    fn on_event(&mut self, event: &Event, emit: Emit<'_>) -> Result<(), ProviderError>;

    /// Whether the server signalled the end of the response.
    fn is_done(&self) -> bool;

    /// The stream ended: emit the final events and return the response.
    fn finish(self, emit: &mut dyn FnMut(StreamEvent)) -> Result<ChatResponse, ProviderError>;
}

/// For tests: `decoder` fed the SSE text `stream` (events split by blank
/// lines, each of `event: ` and `data: ` lines), its events dropped: the
/// assembled response.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn decode_text(mut decoder: impl Decoder, stream: &str) -> ChatResponse {
    let mut sink = |_e: StreamEvent| {};
    for chunk in stream.split("\n\n").filter(|c| !c.is_empty()) {
        let mut ev = Event::default();
        for line in chunk.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                ev.event = n.to_owned();
            } else if let Some(d) = line.strip_prefix("data: ") {
                ev.data = d.to_owned();
            }
        }
        decoder.on_event(&ev, &mut sink).unwrap();
    }
    decoder.finish(&mut sink).unwrap()
}

pub(crate) fn bad(message: impl Into<String>) -> ProviderError {
    ProviderError::BadResponse {
        message: message.into(),
    }
}

pub(crate) fn parse_json(data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| {
        bad(format!(
            "a stream event is not valid JSON ({e}): {}",
            crate::classify::shorten(data)
        ))
    })
}

/// Map an event-stream failure to a provider error. `T` is the transport
/// error (already a [`ProviderError`] for live streams).
pub(crate) fn stream_error<T: Into<ProviderError>>(e: EventStreamError<T>) -> ProviderError {
    match e {
        EventStreamError::Utf8(e) => bad(format!("the event stream is not valid UTF-8: {e}")),
        EventStreamError::Parser(e) => bad(format!("the event stream is malformed: {e}")),
        EventStreamError::Transport(e) => e.into(),
    }
}

/// Drive `decoder` over a stream of SSE events until the server says it is
/// done or the stream ends.
pub(crate) async fn drive<S, T, D>(
    mut events: S,
    mut decoder: D,
    emit: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ChatResponse, ProviderError>
where
    S: Stream<Item = Result<Event, EventStreamError<T>>> + Unpin,
    T: Into<ProviderError>,
    D: Decoder,
{
    while !decoder.is_done() {
        match events.next().await {
            Some(Ok(ev)) => decoder.on_event(&ev, emit)?,
            Some(Err(e)) => return Err(stream_error(e)),
            None => break,
        }
    }
    decoder.finish(emit)
}

/// Decode a complete response given as raw byte chunks (split anywhere).
pub(crate) fn parse_chunks<D: Decoder>(
    chunks: &[&[u8]],
    decoder: D,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let owned: Vec<Result<bytes::Bytes, ProviderError>> = chunks
        .iter()
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let events = futures_util::stream::iter(owned).eventsource();
    let mut out = Vec::new();
    let mut emit = |e: StreamEvent| out.push(e);
    // The source stream is always ready, so this never waits.
    let fut = drive(events, decoder, &mut emit);
    match fut.now_or_never() {
        Some(r) => r.map(|_| ()),
        None => Err(bad("the byte stream was not ready")),
    }?;
    Ok(out)
}

/// A tool call while its parts arrive.
#[derive(Debug, Default)]
pub(crate) struct PartialCall {
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

impl PartialCall {
    pub fn into_call(self, index: usize) -> ToolCall {
        ToolCall {
            id: self.id.unwrap_or_else(|| format!("call_{index}")),
            name: self.name.unwrap_or_default(),
            arguments: ToolCall::parse_arguments(&self.arguments),
        }
    }
}

/// The parts of an assembled answer.
pub(crate) struct Assembled {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub reasoning: Vec<Reasoning>,
    pub usage: Option<Usage>,
    pub finish: Option<FinishReason>,
}

/// The assembled response, after emitting its closing events: each
/// finished tool call, then the usage and the finish reason if known.
pub(crate) fn emit_and_respond(a: Assembled, emit: &mut dyn FnMut(StreamEvent)) -> ChatResponse {
    for c in &a.calls {
        emit(StreamEvent::ToolCall(c.clone()));
    }
    if let Some(u) = a.usage {
        emit(StreamEvent::Usage(u));
    }
    if let Some(f) = &a.finish {
        emit(StreamEvent::Finish(f.clone()));
    }
    response(a)
}

/// The assembled response.
pub(crate) fn response(a: Assembled) -> ChatResponse {
    let Assembled {
        text,
        calls,
        reasoning,
        usage,
        finish,
    } = a;
    let mut message = Message::new(Role::Assistant, Content::Text(text));
    message.tool_calls = calls;
    message.reasoning = reasoning;
    message.usage = usage;
    ChatResponse {
        message,
        usage,
        finish_reason: finish,
    }
}
