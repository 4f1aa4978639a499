//! Faults and the imitated servers' peculiarities: the context window and
//! its overflow body, advertised windows (llama.cpp, `/v1/models`), Ollama's
//! endpoints and silent truncation, refused parameters and images, the API
//! key.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::{FakeServer, Inner, OverflowFlavor, RecordedRequest, json_response};
use crate::tokens::count_prompt_tokens;

/// How the fake imitates Ollama (see [`FakeServer::behave_like_ollama`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ollama {
    /// `model_info.<arch>.context_length` in `/api/show`: the training length.
    pub training: u64,
    /// `num_ctx` in `/api/show` `parameters`, when the model sets it.
    pub num_ctx: Option<u64>,
    /// `context_length` of the loaded model in `/api/ps`; `None`: not listed.
    pub ps_context: Option<u64>,
    /// List the model in `/api/ps` only once a chat request has loaded it.
    pub loads_on_first_request: bool,
    /// Prompts over this many tokens are truncated silently: the oldest
    /// messages after the system prompt are dropped and `prompt_tokens`
    /// reports what was kept. No error.
    pub runs_with: u64,
}

/// Parameters the fake refuses with OpenAI's 400 bodies, and images as a
/// llama-server without a multimodal projector does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Refuse {
    /// Any `temperature` other than 1 (`unsupported_value`).
    pub temperature: bool,
    /// `max_tokens` (`unsupported_parameter`, "Use 'max_completion_tokens'").
    pub max_tokens: bool,
    /// Any image part (OpenAI `image_url`, Anthropic `image`): HTTP 500
    /// with llama-server's body when it runs without `--mmproj`.
    pub images: bool,
}

/// What llama-server answers a request with an image when it was started
/// without a multimodal projector (on both chat endpoints, as a 500).
pub const NO_MMPROJ_MESSAGE: &str = "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj";

impl FakeServer {
    /// Reject prompts over `window` tokens (the fake's count) with the
    /// provider's real overflow error. `None` (the default) accepts anything.
    /// A rejected request does not consume a queued reply.
    pub fn set_context_window(&self, window: Option<u64>) -> &Self {
        self.inner().context_window = window;
        self
    }

    /// Which server `/v1/chat/completions` imitates: the overflow body it
    /// sends, and with [`OverflowFlavor::LlamaCpp`] also llama.cpp's
    /// `timings` (`prompt_n`, `cache_n`, `predicted_n`) in the last chunk or
    /// the JSON body. Anthropic's endpoint always answers like Anthropic.
    pub fn set_overflow_flavor(&self, flavor: OverflowFlavor) -> &Self {
        self.inner().flavor = flavor;
        self
    }

    /// Serve llama.cpp's `GET /props` with this `n_ctx` (`None`: 404, the default).
    pub fn advertise_props(&self, n_ctx: Option<u64>) -> &Self {
        self.inner().props_ctx = n_ctx;
        self
    }

    /// `total_slots` in `/props` (default 1: llama-server's default, one
    /// request computed at a time).
    pub fn set_total_slots(&self, slots: u64) -> &Self {
        self.inner().total_slots = slots;
        self
    }

    /// Make every summarizer reply ([`RecordedRequest::is_summarizer`])
    /// wait `delay` more before it is sent (a slow summary); the agent's own
    /// requests are answered as before.
    pub fn set_summarizer_delay(&self, delay: std::time::Duration) -> &Self {
        self.inner().summarizer_delay = delay;
        self
    }

    /// Serve `GET /v1/models` with this `context_length`/`max_model_len`
    /// (`None`: 404, the default).
    pub fn advertise_models(&self, window: Option<u64>) -> &Self {
        self.inner().models_ctx = window;
        self
    }

    /// List `model_id` at `/v1/models` without a window (as llama-server
    /// and vLLM list their one model); `advertise_models` wins when set.
    pub fn list_one_model(&self, on: bool) -> &Self {
        self.inner().list_models = on;
        self
    }

    /// Behave like Ollama: `/api/show` with the training length (and
    /// `num_ctx` when given), `/api/ps` with the loaded model's window, and
    /// silent truncation of prompts over `runs_with` tokens.
    pub fn behave_like_ollama(&self, ollama: Option<Ollama>) -> &Self {
        self.inner().ollama = ollama;
        self
    }

    /// Refuse parameters the way OpenAI's reasoning models and Azure do.
    pub fn refuse_parameters(&self, refuse: Refuse) -> &Self {
        self.inner().refuse = refuse;
        self
    }

    /// Refuse, as the real APIs do, a tool loop whose reasoning is not sent
    /// back: a Responses `function_call` without the `reasoning` item (with
    /// the encrypted content the fake gave) before it, or with altered
    /// encrypted content; a llama-server-style `reasoning` item without a
    /// `content` array; an Anthropic assistant `tool_use` message whose
    /// signed `thinking` block is not first, or `temperature` ≠ 1 with
    /// thinking on; a Chat (DeepSeek) assistant tool call without its
    /// `reasoning_content`.
    pub fn require_reasoning_back(&self, on: bool) -> &Self {
        self.inner().reasoning_strict = on;
        self
    }

    /// Chat requests refused for a parameter or an image so far.
    pub fn refusals(&self) -> usize {
        self.inner().refusals
    }

    /// Chat requests truncated silently so far (Ollama mode).
    pub fn truncated(&self) -> usize {
        self.inner().truncated
    }

    /// The model id listed by `/v1/models` (default `fake-model`).
    pub fn set_model_id(&self, id: impl Into<String>) -> &Self {
        self.inner().model_id = id.into();
        self
    }

    /// Require this key: `Authorization: Bearer KEY` on the OpenAI endpoints,
    /// `x-api-key: KEY` on Anthropic's; otherwise 401 with the provider's body.
    pub fn require_api_key(&self, key: Option<&str>) -> &Self {
        self.inner().api_key = key.map(str::to_owned);
        self
    }
}

/// Ollama's `/api/show` and `/api/ps`.
pub(super) fn ollama_endpoint(
    o: &Ollama,
    record: &RecordedRequest,
    model_id: &str,
    loaded: bool,
) -> Option<Response> {
    match (record.method.as_str(), record.path.as_str()) {
        ("POST", "/api/show") => {
            let mut parameters = "stop                           \"<end_of_turn>\"".to_owned();
            if let Some(n) = o.num_ctx {
                parameters.push_str(&format!("\nnum_ctx                        {n}"));
            }
            Some(json_response(
                StatusCode::OK,
                &json!({
                    "modelfile": "# Modelfile generated by \"ollama show\"",
                    "parameters": parameters,
                    "template": "{{ .Prompt }}",
                    "details": {"format": "gguf", "family": "gemma3"},
                    "model_info": {
                        "general.architecture": "gemma3",
                        "gemma3.context_length": o.training,
                        "gemma3.embedding_length": 2560,
                    },
                }),
            ))
        }
        ("GET", "/api/ps") => {
            let models: Vec<Value> = o
                .ps_context
                .filter(|_| loaded || !o.loads_on_first_request)
                .map(|n| {
                    json!({"name": format!("{model_id}:latest"), "model": format!("{model_id}:latest"),
                           "size": 1, "size_vram": 1, "context_length": n})
                })
                .into_iter()
                .collect();
            Some(json_response(StatusCode::OK, &json!({"models": models})))
        }
        _ => None,
    }
}

/// Tokens Ollama keeps of a prompt over `window`: it drops the oldest
/// messages after the system prompt until the rest fits.
pub(super) fn kept_tokens(body: &Value, window: u64) -> u64 {
    let mut body = body.clone();
    loop {
        let n = count_prompt_tokens(&body);
        let Some(msgs) = body.get_mut("messages").and_then(Value::as_array_mut) else {
            return n.min(window);
        };
        let first = usize::from(msgs.first().is_some_and(|m| m["role"] == "system"));
        if n <= window || msgs.len() <= first + 1 {
            return n.min(window);
        }
        msgs.remove(first);
    }
}

/// Whether a chat body carries an image part (either wire format).
fn has_image(body: &Value) -> bool {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .any(|p| {
            matches!(
                p.get("type").and_then(Value::as_str),
                Some("image_url" | "image")
            )
        })
}

/// The status and body when the request carries a refused parameter
/// (OpenAI's 400s) or an image the fake refuses (llama-server's 500).
pub(super) fn refusal(inner: &Inner, record: &RecordedRequest) -> Option<(StatusCode, Value)> {
    let b = &record.body;
    if inner.refuse.images && has_image(b) {
        return Some((
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"code": 500, "message": NO_MMPROJ_MESSAGE, "type": "server_error"}}),
        ));
    }
    if record.path.ends_with("/chat/completions")
        && record.model().is_some_and(|m| m.contains("codex"))
    {
        return Some((
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": "This model is only supported in v1/responses and not in v1/chat/completions.",
                "type": "invalid_request_error", "param": "model", "code": null}}),
        ));
    }
    if inner.reasoning_strict
        && let Some(body) = super::reasoning::refusal(&inner.issued, record)
    {
        return Some((StatusCode::BAD_REQUEST, body));
    }
    // Native compaction's items and blocks, as the real APIs check them.
    if let Some(body) = super::native::refusal(inner, record) {
        return Some((StatusCode::BAD_REQUEST, body));
    }
    refused_parameter(inner, b).map(|v| (StatusCode::BAD_REQUEST, v))
}

/// OpenAI's 400 body when the request carries a refused parameter.
fn refused_parameter(inner: &Inner, b: &Value) -> Option<Value> {
    if inner.refuse.temperature
        && let Some(t) = b.get("temperature").and_then(Value::as_f64)
        && (t - 1.0).abs() > f64::EPSILON
    {
        return Some(json!({"error": {
            "message": format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."),
            "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}));
    }
    if inner.refuse.max_tokens && b.get("max_tokens").is_some() {
        return Some(json!({"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}));
    }
    None
}
