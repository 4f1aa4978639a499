//! Asking a server for a model's context window (issue 8).
//!
//! Probes, all at once, each with a short timeout; in this order of
//! preference the first that answers with a window wins, nothing found is
//! empty: llama.cpp `GET {root}/props`, `GET {base_url}/models` (vLLM
//! `max_model_len`, OpenRouter `context_length`), Ollama `POST
//! {root}/api/show` `num_ctx`, then the loaded model's `context_length` in
//! `GET {root}/api/ps`, else Ollama's default (`OLLAMA_CONTEXT_LENGTH`, else
//! 4096). The training length Ollama reports is never the window. `root`
//! is `base_url` without a trailing `/v1`.

use std::time::Duration;

use eonyx_core::provider::ServerLimits;
use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

use crate::http::Http;
use crate::wire::decode;

mod wire;

/// Timeout of each probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Documented limits of Anthropic models (all current Claude models have a
/// 200k window; the 1M window needs a beta header eonyx does not send).
pub fn anthropic_documented(model: &str) -> Option<ServerLimits> {
    model.starts_with("claude").then_some(ServerLimits {
        context_window: Some(200_000),
        max_output_tokens: None,
        source: Some("Anthropic's documented limits"),
        total_slots: None,
    })
}

/// `base_url` without a trailing `/` and `/v1`.
pub fn server_root(base_url: &str) -> &str {
    let b = base_url.trim_end_matches('/');
    b.strip_suffix("/v1").unwrap_or(b)
}

/// llama.cpp `/props`: `default_generation_settings.n_ctx` (the per-slot
/// window), or a top-level `n_ctx`.
pub fn parse_props(v: &Value) -> Option<u64> {
    let props: wire::Props = decode(v);
    props
        .default_generation_settings
        .and_then(|s| s.n_ctx)
        .or(props.n_ctx)
        .flatten()
        .filter(|n| *n > 0)
}

/// llama.cpp `/props`: `total_slots`, the requests it computes at once.
pub fn parse_slots(v: &Value) -> Option<u64> {
    let props: wire::Props = decode(v);
    props.total_slots.filter(|n| *n > 0)
}

/// `/models`: the entry for `model` (or the only entry) and its
/// `max_model_len` (vLLM), `context_length` or `top_provider.context_length`
/// (OpenRouter). llama.cpp's `meta.n_ctx_train` is the training length, not
/// the window, and is ignored.
pub fn parse_models(v: &Value, model: &str) -> ServerLimits {
    let models: wire::Models = decode(v);
    let Some(data) = models.data else {
        return ServerLimits::default();
    };
    let entry = data
        .iter()
        .find(|e| e.id.as_deref() == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]));
    let Some(e) = entry else {
        return ServerLimits::default();
    };
    let n = |v: Option<u64>| v.filter(|n| *n > 0);
    let top = e.top_provider.as_ref();
    ServerLimits {
        context_window: n(e.max_model_len)
            .or_else(|| n(e.context_length))
            .or_else(|| n(top.and_then(|t| t.context_length))),
        max_output_tokens: n(top.and_then(|t| t.max_completion_tokens)),
        source: None,
        total_slots: None,
    }
}

/// Ollama's default window when a model sets no `num_ctx` and the server
/// does not say (`OLLAMA_CONTEXT_LENGTH` overrides it).
pub const OLLAMA_DEFAULT_CONTEXT: u64 = 4096;

/// `source` of a window that is Ollama's default, not an answer: the agent
/// asks `/api/ps` again once the first request has loaded the model.
pub const OLLAMA_DEFAULT_SOURCE: &str = "Ollama's default context length";

/// What Ollama's `/api/show` says about a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OllamaShow {
    /// `num_ctx` from `parameters`: the window Ollama runs the model with.
    pub num_ctx: Option<u64>,
    /// `model_info.<arch>.context_length`: the *training* length, never
    /// used as the window.
    pub training: Option<u64>,
}

/// Ollama `/api/show`; `None` when the body is not Ollama's.
pub fn parse_ollama_show(v: &Value) -> Option<OllamaShow> {
    let show: wire::Show = decode(v);
    let params = show.parameters.as_deref();
    let info = show.model_info.as_ref();
    if params.is_none() && info.is_none() {
        return None;
    }
    let num_ctx = params
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("num_ctx")).then(|| it.next())?
            })
        })
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n > 0);
    let training = info.and_then(|i| {
        i.iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
            .filter(|n| *n > 0)
    });
    Some(OllamaShow { num_ctx, training })
}

/// Ollama `/api/ps` (≥ 0.11): the loaded model's `context_length`, the
/// window it runs with. `model` matches `name` or `model`, with or without
/// the `:latest` tag.
pub fn parse_ollama_ps(v: &Value, model: &str) -> Option<u64> {
    let ps: wire::Ps = decode(v);
    let bare = |s: &str| s.strip_suffix(":latest").unwrap_or(s).to_owned();
    let want = bare(model);
    ps.models?
        .iter()
        .find(|m| {
            [&m.name, &m.model]
                .iter()
                .any(|k| k.as_deref().map(bare).as_deref() == Some(&want))
        })
        .and_then(|m| m.context_length)
        .filter(|n| *n > 0)
}

/// The model ids of an OpenAI-style `/models` list.
pub fn parse_model_ids(v: &Value) -> Vec<String> {
    let models: wire::Models = decode(v);
    models
        .data
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.id)
        .collect()
}

async fn get_json(http: &Http, req: reqwest::RequestBuilder) -> Option<Value> {
    let req = match &http.key {
        Some(k) => req.header(AUTHORIZATION, k.header("Bearer ").ok()?),
        None => req,
    };
    let fut = async {
        let resp = req.timeout(PROBE_TIMEOUT).send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        resp.json::<Value>().await.ok()
    };
    tokio::time::timeout(PROBE_TIMEOUT, fut).await.ok()?
}

/// The ids `GET {base_url}/models` lists (empty when it does not answer).
pub(crate) async fn list_models(http: &Http, base_url: &str) -> Vec<String> {
    let base = base_url.trim_end_matches('/');
    get_json(http, http.client.get(format!("{base}/models")))
        .await
        .as_ref()
        .map(parse_model_ids)
        .unwrap_or_default()
}

/// Probe an OpenAI-compatible server (see the module docs). The probes run
/// concurrently, each with [`PROBE_TIMEOUT`].
pub(crate) async fn detect_openai_compatible(
    http: &Http,
    base_url: &str,
    model: &str,
    ollama_default: u64,
) -> ServerLimits {
    let base = base_url.trim_end_matches('/');
    let root = server_root(base_url);
    let show = http
        .client
        .post(format!("{root}/api/show"))
        .json(&json!({"model": model}));
    let (props, models, show, ps) = tokio::join!(
        get_json(http, http.client.get(format!("{root}/props"))),
        get_json(http, http.client.get(format!("{base}/models"))),
        get_json(http, show),
        get_json(http, http.client.get(format!("{root}/api/ps"))),
    );
    ServerLimits {
        total_slots: props.as_ref().and_then(parse_slots),
        ..window_from(props, models, show, ps, model, ollama_default)
    }
}

/// The window the probes' answers give, in the order of the module docs.
fn window_from(
    props: Option<Value>,
    models: Option<Value>,
    show: Option<Value>,
    ps: Option<Value>,
    model: &str,
    ollama_default: u64,
) -> ServerLimits {
    let found = |n: u64, source: &'static str| ServerLimits {
        context_window: Some(n),
        max_output_tokens: None,
        source: Some(source),
        total_slots: None,
    };
    if let Some(n) = props.as_ref().and_then(parse_props) {
        return found(n, "/props");
    }
    if let Some(v) = &models {
        let l = parse_models(v, model);
        if l.context_window.is_some() {
            return ServerLimits {
                source: Some("/v1/models"),
                ..l
            };
        }
    }
    let Some(show) = show.as_ref().and_then(parse_ollama_show) else {
        return ServerLimits::default();
    };
    if let Some(n) = show.num_ctx {
        return found(n, "/api/show num_ctx");
    }
    if let Some(n) = ps.as_ref().and_then(|v| parse_ollama_ps(v, model)) {
        return found(n, "/api/ps");
    }
    // Ollama, model not loaded yet: its default, never the training length.
    found(ollama_default, OLLAMA_DEFAULT_SOURCE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_props() {
        let v: Value = serde_json::from_str(r#"{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":2048,"speculative":false,"is_processing":false,"params":{"n_predict":-1,"temperature":0.8}},"total_slots":1,"model_path":"/models/gemma-3-270m.gguf","chat_template":"...","build_info":"b5000"}"#).unwrap();
        assert_eq!(parse_props(&v), Some(2048));
        assert_eq!(parse_slots(&v), Some(1));
        assert_eq!(parse_slots(&serde_json::json!({"total_slots": 4})), Some(4));
        assert_eq!(parse_slots(&serde_json::json!({"total_slots": "x"})), None);
        assert_eq!(
            parse_props(&serde_json::json!({"error": "not found"})),
            None
        );
    }

    #[test]
    fn models_lists() {
        let vllm: Value = serde_json::from_str(r#"{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1,"owned_by":"vllm","root":"Qwen/Qwen2.5-7B-Instruct","parent":null,"max_model_len":32768,"permission":[]}]}"#).unwrap();
        assert_eq!(
            parse_models(&vllm, "Qwen/Qwen2.5-7B-Instruct").context_window,
            Some(32768)
        );
        let openrouter: Value = serde_json::from_str(r#"{"data":[{"id":"openai/gpt-4o","name":"OpenAI: GPT-4o","context_length":128000,"top_provider":{"context_length":128000,"max_completion_tokens":16384,"is_moderated":true}},{"id":"meta-llama/llama-3.1-8b-instruct","context_length":null,"top_provider":{"context_length":131072,"max_completion_tokens":null}}]}"#).unwrap();
        assert_eq!(
            parse_models(&openrouter, "openai/gpt-4o"),
            ServerLimits {
                context_window: Some(128000),
                max_output_tokens: Some(16384),
                source: None,
                total_slots: None,
            }
        );
        assert_eq!(
            parse_models(&openrouter, "meta-llama/llama-3.1-8b-instruct").context_window,
            Some(131072)
        );
        assert_eq!(parse_models(&openrouter, "unknown").context_window, None);
        // llama.cpp: n_ctx_train is not the window.
        let llama: Value = serde_json::from_str(r#"{"object":"list","data":[{"id":"gemma-3-270m","object":"model","owned_by":"llamacpp","meta":{"vocab_type":1,"n_vocab":262144,"n_ctx_train":32768,"n_embd":640,"n_params":268098176,"size":241410624}}]}"#).unwrap();
        assert_eq!(parse_models(&llama, "gemma-3-270m").context_window, None);
    }

    #[test]
    fn ollama_show() {
        let v: Value = serde_json::from_str(r#"{"modelfile":"...","parameters":"stop                           \"<end_of_turn>\"\nnum_ctx                        8192\ntemperature                    1","template":"...","details":{"family":"gemma3"},"model_info":{"general.architecture":"gemma3","gemma3.context_length":131072,"gemma3.embedding_length":2560}}"#).unwrap();
        assert_eq!(
            parse_ollama_show(&v),
            Some(OllamaShow {
                num_ctx: Some(8192),
                training: Some(131072)
            })
        );
        // No num_ctx: only the training length, which is not the window.
        let v: Value = serde_json::from_str(r#"{"parameters":"stop \"<|eot_id|>\"","model_info":{"general.architecture":"llama","llama.context_length":131072}}"#).unwrap();
        assert_eq!(
            parse_ollama_show(&v),
            Some(OllamaShow {
                num_ctx: None,
                training: Some(131072)
            })
        );
        assert_eq!(
            parse_ollama_show(&json!({"error": "model not found"})),
            None
        );
    }

    #[test]
    fn ollama_ps() {
        let v: Value = serde_json::from_str(r#"{"models":[{"name":"gemma3:latest","model":"gemma3:latest","size":6591830464,"digest":"a2af6cc3eb7f","details":{"family":"gemma3"},"expires_at":"2025-10-17T16:47:07.93355-07:00","size_vram":5333539264,"context_length":4096},{"name":"qwen3:8b","model":"qwen3:8b","context_length":32768}]}"#).unwrap();
        assert_eq!(parse_ollama_ps(&v, "gemma3"), Some(4096));
        assert_eq!(parse_ollama_ps(&v, "gemma3:latest"), Some(4096));
        assert_eq!(parse_ollama_ps(&v, "qwen3:8b"), Some(32768));
        assert_eq!(parse_ollama_ps(&v, "llama3"), None);
        assert_eq!(parse_ollama_ps(&json!({"models": []}), "gemma3"), None);
    }

    #[test]
    fn model_ids() {
        let v: Value = serde_json::from_str(
            r#"{"object":"list","data":[{"id":"gemma-3-270m","object":"model"}]}"#,
        )
        .unwrap();
        assert_eq!(parse_model_ids(&v), ["gemma-3-270m"]);
        assert!(parse_model_ids(&json!({"error": "x"})).is_empty());
    }

    #[test]
    fn roots_and_documented_limits() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(server_root("http://h:11434"), "http://h:11434");
        assert_eq!(
            anthropic_documented("claude-sonnet-4-5").and_then(|l| l.context_window),
            Some(200_000)
        );
        assert_eq!(anthropic_documented("gemma-3-270m"), None);
    }
}
