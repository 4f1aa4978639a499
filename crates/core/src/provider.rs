//! The provider trait and its request, stream-event, response and error
//! types. Implementations live in the provider crate (HTTP clients) and in
//! tests; the compact and agent crates only see this trait.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use tokio_util::sync::CancellationToken;

use crate::config::ReasoningEffort;
use crate::message::{Message, ToolCall, Usage};

/// A boxed, sendable future (keeps the trait dyn-compatible).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The system prompt in two parts. Everything in `stable` is identical
/// between requests of a session (a provider may put a cache breakpoint
/// after it); `suffix` holds the date line and the running summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemPrompt {
    pub stable: String,
    pub suffix: String,
}

impl SystemPrompt {
    /// Separator between the two parts when sent as one string.
    pub const SEPARATOR: &'static str = "\n\n";

    /// The whole system prompt as one string: `stable`, a blank line,
    /// `suffix` (either may be empty).
    pub fn text(&self) -> String {
        match (self.stable.is_empty(), self.suffix.is_empty()) {
            (true, _) => self.suffix.clone(),
            (_, true) => self.stable.clone(),
            _ => format!("{}{}{}", self.stable, Self::SEPARATOR, self.suffix),
        }
    }

    pub fn chars(&self) -> usize {
        self.stable.chars().count() + self.suffix.chars().count() + Self::SEPARATOR.len()
    }
}

/// A tool the model may call, with a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolDef {
    /// Characters this definition adds to a request.
    pub fn chars(&self) -> usize {
        self.name.len() + self.description.chars().count() + self.parameters.to_string().len()
    }
}

/// One request to a model.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Model id sent to the API.
    pub model: String,
    pub system: SystemPrompt,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDef>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Cancelling this token aborts the request with
    /// [`ProviderError::Cancelled`].
    pub cancel: CancellationToken,
    /// The tools are listed (so the prompt prefix matches the conversation)
    /// but must not be called: OpenAI-compatible servers get
    /// `tool_choice: "none"`; Anthropic keeps the tools as they are (a
    /// changed `tool_choice` would invalidate its message cache) and the
    /// request's own text says so.
    pub no_tool_calls: bool,
    /// Prompt-cache routing key (the session id). Sent as
    /// `prompt_cache_key` to OpenAI's own API only; other servers never see it.
    pub cache_key: Option<String>,
    /// Anthropic: put the conversation's cache breakpoint on message
    /// `n - 1` instead of the last message (the summarizer request: the
    /// conversation part is cached, the appended instruction is not).
    pub cache_breakpoint: Option<usize>,
    /// The reasoning effort of this request, overriding the model's
    /// `reasoning_effort` (the summarizer's `compaction.reasoning_effort`,
    /// a `/model KEY EFFORT` switch); `None`: the model's.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// A provider-native compaction this request carries first, before
    /// the messages (docs/compaction.md#native-compaction); the wire that
    /// made it sends its items byte for byte, any other wire ignores it.
    pub native: Option<crate::native::NativeCompaction>,
    /// Ask for a reply that is JSON matching this schema, where the API
    /// supports it (Chat Completions `response_format`, which llama-server
    /// honours too; the Responses API's `text.format`); other APIs get
    /// only the request's own instruction (docs/memory.md#the-request).
    pub json_schema: Option<JsonSchema>,
}

/// A named JSON schema a reply must follow ([`ChatRequest::json_schema`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonSchema {
    /// `[a-zA-Z0-9_-]`, as OpenAI requires.
    pub name: String,
    pub schema: Value,
}

impl ChatRequest {
    pub fn new(model: impl Into<String>, system: SystemPrompt, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            system,
            messages,
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            cancel: CancellationToken::new(),
            no_tool_calls: false,
            cache_key: None,
            cache_breakpoint: None,
            reasoning_effort: None,
            native: None,
            json_schema: None,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    /// The provider blocked or refused the reply: its reason as it gave it
    /// (Chat `content_filter`, Anthropic `refusal`, the Responses
    /// `incomplete_details.reason`).
    ContentFilter(String),
    Other(String),
}

impl FinishReason {
    /// Map OpenAI and Anthropic stop reasons.
    pub fn from_api(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" | "refusal" => FinishReason::ContentFilter(s.to_owned()),
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

/// Incremental output of a streaming request.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A piece of the model's reasoning (or of its summary): shown apart
    /// from the answer, never mixed with it.
    ReasoningDelta(String),
    /// A piece of a tool call; `id`/`name` arrive with the first piece.
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// A complete tool call, assembled from its deltas.
    ToolCall(ToolCall),
    Usage(Usage),
    Finish(FinishReason),
}

/// The assembled result of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant message: text, tool calls and usage.
    pub message: Message,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
}

/// Classified provider failures. The caller decides what to do per class:
/// compact on `ContextOverflow`, stop on `Auth`, report the rest.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    #[error("the request is too large for the model's context window{}: {message}", figures(*.prompt_tokens, *.limit))]
    ContextOverflow {
        message: String,
        prompt_tokens: Option<u64>,
        limit: Option<u64>,
    },
    #[error("the provider rejected the API key (HTTP {status}){}: {message}", env_hint(.env_var))]
    Auth {
        status: u16,
        env_var: Option<String>,
        message: String,
    },
    #[error("rate limited by the provider{}: {message}", retry_hint(*.retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("the provider failed temporarily: {message}")]
    Transient { message: String },
    #[error("the provider sent a response eonyx could not understand: {message}")]
    BadResponse { message: String },
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("{message}")]
    Config { message: String },
    #[error("cancelled")]
    Cancelled,
}

fn figures(prompt: Option<u64>, limit: Option<u64>) -> String {
    match (prompt, limit) {
        (Some(p), Some(l)) => format!(" ({p} tokens requested, {l} allowed)"),
        (None, Some(l)) => format!(" ({l} tokens allowed)"),
        (Some(p), None) => format!(" ({p} tokens requested)"),
        (None, None) => String::new(),
    }
}

fn env_hint(var: &Option<String>) -> String {
    match var {
        Some(v) => format!("; check the key in ${v}"),
        None => "; configure `api_key_env` for this model".to_owned(),
    }
}

fn retry_hint(after: Option<Duration>) -> String {
    match after {
        Some(d) => format!(" (retry after {}s)", d.as_secs_f64().ceil() as u64),
        None => String::new(),
    }
}

impl ProviderError {
    /// Its class (name in JSON events, exit code, retryable).
    pub fn class(&self) -> crate::ErrorClass {
        use crate::ErrorClass as C;
        match self {
            ProviderError::ContextOverflow { .. } => C::ContextOverflow,
            ProviderError::Auth { .. } => C::Auth,
            ProviderError::RateLimited { .. } => C::RateLimited,
            ProviderError::Transient { .. } => C::Transient,
            ProviderError::BadResponse { .. } => C::BadResponse,
            ProviderError::Rejected { .. } => C::Rejected,
            ProviderError::Config { .. } => C::Config,
            ProviderError::Cancelled => C::Cancelled,
        }
    }

    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        self.class().retryable()
    }
}

/// Limits a server reports about a model (issue: detect the real window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerLimits {
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// Where the figures came from, e.g. `/props` (shown by `eonyx config`).
    pub source: Option<&'static str>,
    /// How many requests the server computes at once (llama.cpp `/props`
    /// `total_slots`); `None` when it does not say. With one slot a
    /// background summary would make the user's request wait, so it is
    /// cancelled instead (docs/compaction.md#ahead-of-time-summaries).
    pub total_slots: Option<u64>,
}

/// Changes to the request shape a model needs because it refused a
/// parameter (HTTP 400 naming it). Learned by the provider on a refusal,
/// remembered per model in the limits cache so later runs send the right
/// shape the first time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequestQuirks {
    /// Send no `temperature` (reasoning models accept only the default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_temperature: bool,
    /// Send the output cap as `max_completion_tokens`, not `max_tokens`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub max_completion_tokens: bool,
    /// Send no images: the model refused them (a text-only model, a
    /// llama-server without a multimodal projector). Each image part goes
    /// as a one-line text note instead; the session file keeps the image
    /// (docs/providers.md#refused-parameters).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_images: bool,
    /// Speak the Responses API: Chat Completions answered that the model is
    /// only served there (docs/providers.md#the-responses-api).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub responses_api: bool,
    /// Send no reasoning effort: the server refused the parameter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_reasoning_effort: bool,
    /// Send no `reasoning_content` back on Chat Completions: the server
    /// refused the field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_reasoning_content: bool,
    /// Do not try native compaction here: the server said it does not
    /// offer it, or gave nothing twice (docs/compaction.md#native-compaction).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_native_compaction: bool,
}

impl RequestQuirks {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A model provider. Implementations must be cancel-safe: when
/// `request.cancel` fires they return [`ProviderError::Cancelled`] promptly.
pub trait Provider: Send + Sync {
    /// Short name for diagnostics, e.g. `openai`.
    fn name(&self) -> &str;

    /// Send one request, streaming events to `on_event` as they arrive, and
    /// return the assembled response. Retries of transient failures happen
    /// inside; a context overflow is returned, never retried.
    fn send<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;

    /// Ask the server for the model's limits (llama.cpp `/props`, `/v1/models`,
    /// Ollama `/api/show`…). `Ok(None)`-like: an empty result when unknown.
    fn detect_limits<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, ServerLimits> {
        Box::pin(async { ServerLimits::default() })
    }

    /// The model ids the server lists (`/v1/models`); empty when unknown.
    fn list_models(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async { Vec::new() })
    }

    /// The request-shape changes learned from refused parameters.
    fn quirks(&self) -> RequestQuirks {
        RequestQuirks::default()
    }

    /// Start from request-shape changes learned earlier.
    fn set_quirks(&self, _quirks: RequestQuirks) {}

    /// Which native compaction this client's wire offers now (`None`:
    /// none, e.g. Chat Completions; docs/compaction.md#native-compaction).
    fn native_compaction(&self) -> Option<crate::native::NativeProvider> {
        None
    }

    /// Have the provider compact `request` (its messages, after any native
    /// items it carries, are the part to compact) with `instructions`
    /// (what eonyx needs kept). Transient failures are retried inside like
    /// other requests.
    fn compact<'a>(
        &'a self,
        _request: &'a ChatRequest,
        _instructions: &'a str,
    ) -> BoxFuture<'a, Result<NativeOutcome, NativeError>> {
        Box::pin(async {
            Err(NativeError::Unsupported(
                "this wire has no native compaction".into(),
            ))
        })
    }
}

/// What a native compaction call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeOutcome {
    pub native: crate::native::NativeCompaction,
    /// The call's usage (Anthropic's `usage.iterations` summed).
    pub usage: Option<Usage>,
}

/// Why a native compaction gave nothing; every case falls back to
/// eonyx's own summarizer in the same compaction.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NativeError {
    /// 404/405/501 or an error naming the endpoint or field as
    /// unsupported: remembered for the base URL + model.
    #[error("the server does not offer native compaction ({0})")]
    Unsupported(String),
    /// No `compaction` item, an empty or null block: remembered at the
    /// second in a row.
    #[error("the server's native compaction returned nothing usable ({0})")]
    Empty(String),
    /// The answer began (HTTP 200) and broke off mid-way, or was cut into
    /// JSON that does not parse (after retries): transient, not remembered.
    #[error("the server's native compaction answer broke off ({0})")]
    Broken(String),
    /// Anything else, transient (5xx, 529, 429, no answer within the
    /// timeouts; after retries): this compaction falls back, nothing is
    /// remembered, a later compaction asks again.
    #[error("the native compaction call failed: {0}")]
    Failed(#[source] ProviderError),
}

/// The system prompt of every summarizer (compaction) request starts with
/// this text, so test servers and logs can tell compaction calls apart.
pub const SUMMARIZER_SYSTEM_PREFIX: &str = "You are the eonyx summarizer.";

/// The final user message of a shared-prefix summarizer request (the
/// conversation as it would be sent next, plus this instruction) starts
/// with this text, so test servers and logs can tell compaction calls apart.
pub const SUMMARIZER_INSTRUCTION_PREFIX: &str = "[eonyx compaction]";

/// The system prompt of every memory-mining request starts with this text
/// (docs/memory.md#the-request), so test servers and logs can tell mining
/// calls apart.
pub const MINER_SYSTEM_PREFIX: &str = "You are the eonyx memory miner.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_prompt_joins_parts_with_blank_line() {
        let s = SystemPrompt {
            stable: "a".into(),
            suffix: "b".into(),
        };
        assert_eq!(s.text(), "a\n\nb");
        let s = SystemPrompt {
            stable: "a".into(),
            suffix: String::new(),
        };
        assert_eq!(s.text(), "a");
    }

    #[test]
    fn error_messages_name_figures_and_env() {
        let e = ProviderError::ContextOverflow {
            message: "too long".into(),
            prompt_tokens: Some(3000),
            limit: Some(2048),
        };
        assert_eq!(
            e.to_string(),
            "the request is too large for the model's context window (3000 tokens requested, 2048 allowed): too long"
        );
        let e = ProviderError::Auth {
            status: 401,
            env_var: Some("OPENAI_API_KEY".into()),
            message: "bad key".into(),
        };
        assert!(e.to_string().contains("$OPENAI_API_KEY"));
        assert_eq!(e.class().name(), "auth");
        assert!(!e.is_retryable());
    }
}
