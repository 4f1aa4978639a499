//! Scripted replies of the fake server.

use std::time::Duration;

use serde_json::{Value, json};

/// The longest [`Reply::hold_until`] waits for the other requests.
pub const HOLD_LIMIT: Duration = Duration::from_secs(15);

/// Token figures that replace the fake's own count in a reply's usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageOverride {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
}

/// One tool call the fake model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    pub name: String,
    pub arguments: Value,
}

/// What a reply consists of.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReplyKind {
    /// Assistant text.
    Text(String),
    /// The text of the last user message (or `ok` when there is none).
    Echo,
    /// Optional text followed by one or more tool calls.
    ToolCalls {
        text: Option<String>,
        calls: Vec<FakeToolCall>,
    },
    /// An HTTP error with a raw body (served as `application/json`).
    Error { status: u16, body: String },
    /// 429 with `Retry-After` and the provider's rate-limit body.
    RateLimited { retry_after_secs: u64 },
    /// 500 with the provider's server-error body.
    ServerError,
    /// A 200 response whose stream (or body) is not valid for the protocol.
    Malformed,
}

/// A scripted reply: what the fake model answers to one request.
///
/// Modifiers (`with_*`, `reset_after`, …) can be chained:
/// `Reply::text("hi").with_delay(Duration::from_millis(50)).reset_after(2)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub(crate) kind: ReplyKind,
    pub(crate) usage: UsageOverride,
    pub(crate) omit_usage: bool,
    pub(crate) delay: Duration,
    pub(crate) chunk_delay: Duration,
    pub(crate) reset_after: Option<usize>,
    pub(crate) hold_until: Option<usize>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) reasoning: Option<String>,
}

impl Reply {
    fn new(kind: ReplyKind) -> Self {
        Self {
            kind,
            usage: UsageOverride::default(),
            omit_usage: false,
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            reset_after: None,
            hold_until: None,
            finish_reason: None,
            headers: Vec::new(),
            reasoning: None,
        }
    }

    /// The model answers `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(ReplyKind::Text(text.into()))
    }

    /// The model repeats the text of the last user message.
    pub fn echo() -> Self {
        Self::new(ReplyKind::Echo)
    }

    /// The model calls one tool with `arguments` (a JSON object).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::tool_calls([(name, arguments)])
    }

    /// The model calls the `plan` tool with `steps` as `(step, status)`.
    pub fn plan(steps: &[(&str, &str)]) -> Self {
        let steps: Vec<Value> = steps
            .iter()
            .map(|(step, status)| json!({"step": step, "status": status}))
            .collect();
        Self::tool_call("plan", json!({ "steps": steps }))
    }

    /// The model calls several tools in one reply, in this order.
    pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Self {
        Self::new(ReplyKind::ToolCalls {
            text: None,
            calls: calls
                .into_iter()
                .map(|(name, arguments)| FakeToolCall {
                    name: name.into(),
                    arguments,
                })
                .collect(),
        })
    }

    /// An HTTP error: `status` with `body` verbatim (content type JSON).
    pub fn error(status: u16, body: impl Into<String>) -> Self {
        Self::new(ReplyKind::Error {
            status,
            body: body.into(),
        })
    }

    /// HTTP 429 with `Retry-After: secs` and the provider's rate-limit body.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::new(ReplyKind::RateLimited { retry_after_secs })
    }

    /// HTTP 500 with the provider's server-error body.
    pub fn server_error() -> Self {
        Self::new(ReplyKind::ServerError)
    }

    /// HTTP 200 whose stream carries garbage `data:` lines (or, for a
    /// non-streaming request, a truncated JSON body).
    pub fn malformed() -> Self {
        Self::new(ReplyKind::Malformed)
    }

    /// Text to send before the tool calls of a [`Reply::tool_call`] reply
    /// (for other replies this replaces the text).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        match &mut self.kind {
            ReplyKind::ToolCalls { text: t, .. } => *t = Some(text),
            other => *other = ReplyKind::Text(text),
        }
        self
    }

    /// Replace the fake's own token figures in the reported usage.
    pub fn with_usage(mut self, usage: UsageOverride) -> Self {
        self.usage = usage;
        self
    }

    /// Report `prompt_tokens` instead of the fake's own count.
    pub fn with_prompt_tokens(mut self, prompt_tokens: u64) -> Self {
        self.usage.prompt_tokens = Some(prompt_tokens);
        self
    }

    /// Send no usage at all (a server that never reports it).
    pub fn without_usage(mut self) -> Self {
        self.omit_usage = true;
        self
    }

    /// Wait this long before the first byte (status line and headers).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Wait this long before each streamed event after the first.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Send `events` stream events (or, without streaming, half the body)
    /// and then drop the connection without finishing the response.
    pub fn reset_after(mut self, events: usize) -> Self {
        self.reset_after = Some(events);
        self
    }

    /// Hold this reply until the server has received `chat_requests` chat
    /// requests in all (this one included), so a test can see that a
    /// client sent several requests without waiting for each answer:
    /// concurrency asserted on order, not time. A client that never sends
    /// them gets the reply after [`HOLD_LIMIT`] anyway (and the test's
    /// order assertion fails instead of hanging).
    pub fn hold_until(mut self, chat_requests: usize) -> Self {
        self.hold_until = Some(chat_requests);
        self
    }

    /// Report this finish reason (`length`, `max_tokens`, …) instead of the
    /// natural one (`stop`/`end_turn`, `tool_calls`/`tool_use`).
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// A reply the provider blocks, as each wire says it: Chat
    /// `finish_reason: "content_filter"`, Anthropic `stop_reason:
    /// "refusal"`, Responses `response.incomplete` whose
    /// `incomplete_details.reason` is `content_filter`. `text` is what was
    /// streamed before the block (often nothing).
    pub fn blocked(text: impl Into<String>) -> Self {
        Self::text(text).with_finish_reason("content_filter")
    }

    /// A tool call cut by the output cap mid-arguments: `raw` is sent as
    /// the (incomplete) argument text and the finish reason is `length`
    /// (`max_tokens` on Anthropic's endpoint).
    pub fn cut_tool_call(name: impl Into<String>, raw: impl Into<String>) -> Self {
        Self::tool_call(name, Value::String(raw.into())).with_finish_reason("length")
    }

    /// The model reasons `text` before it answers, as each wire sends it:
    /// Chat `reasoning_content` deltas, an Anthropic `thinking` block with
    /// its `signature`, a Responses `reasoning` item with a summary and
    /// `encrypted_content` (the signature and encrypted content are
    /// [`crate::wire::signature_of`] / [`crate::wire::encrypted_of`] the text).
    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// Add a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl Default for Reply {
    /// `Reply::text("ok")`.
    fn default() -> Self {
        Self::text("ok")
    }
}
