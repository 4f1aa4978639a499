//! Asking a server for a model's context window (issue 8).
//!
//! Probes, in order, each with a short timeout; the first that answers
//! with a window wins, any failure moves on, nothing found is empty:
//! llama.cpp `GET {root}/props`, `GET {base_url}/models` (vLLM
//! `max_model_len`, OpenRouter `context_length`), Ollama
//! `POST {root}/api/show`. `root` is `base_url` without a trailing `/v1`.

use std::time::Duration;

use eonyx_core::provider::ServerLimits;
use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

use crate::http::Http;

/// Timeout of each probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Documented limits of Anthropic models (all current Claude models have a
/// 200k window; the 1M window needs a beta header eonyx does not send).
pub fn anthropic_documented(model: &str) -> Option<ServerLimits> {
    model.starts_with("claude").then_some(ServerLimits {
        context_window: Some(200_000),
        max_output_tokens: None,
        source: Some("Anthropic's documented limits"),
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
    v.pointer("/default_generation_settings/n_ctx")
        .or_else(|| v.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// `/models`: the entry for `model` (or the only entry) and its
/// `max_model_len` (vLLM), `context_length` or `top_provider.context_length`
/// (OpenRouter). llama.cpp's `meta.n_ctx_train` is the training length, not
/// the window, and is ignored.
pub fn parse_models(v: &Value, model: &str) -> ServerLimits {
    let Some(data) = v.get("data").and_then(Value::as_array) else {
        return ServerLimits::default();
    };
    let entry = data
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]));
    let Some(e) = entry else {
        return ServerLimits::default();
    };
    let n = |p: &str| e.pointer(p).and_then(Value::as_u64).filter(|n| *n > 0);
    ServerLimits {
        context_window: n("/max_model_len")
            .or_else(|| n("/context_length"))
            .or_else(|| n("/top_provider/context_length")),
        max_output_tokens: n("/top_provider/max_completion_tokens"),
        source: None,
    }
}

/// Ollama `/api/show`: `num_ctx` from `parameters` when the model sets it
/// (that is the window Ollama runs it with), else
/// `model_info.<arch>.context_length`.
pub fn parse_ollama_show(v: &Value) -> Option<u64> {
    let num_ctx = v
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("num_ctx")).then(|| it.next())?
            })
        })
        .and_then(|n| n.parse::<u64>().ok());
    num_ctx.filter(|n| *n > 0).or_else(|| {
        v.get("model_info")
            .and_then(Value::as_object)?
            .iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
            .filter(|n| *n > 0)
    })
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

/// Probe an OpenAI-compatible server (see the module docs).
pub(crate) async fn detect_openai_compatible(
    http: &Http,
    base_url: &str,
    model: &str,
) -> ServerLimits {
    let base = base_url.trim_end_matches('/');
    let root = server_root(base_url);
    if let Some(n) = get_json(http, http.client.get(format!("{root}/props")))
        .await
        .as_ref()
        .and_then(parse_props)
    {
        return ServerLimits {
            context_window: Some(n),
            max_output_tokens: None,
            source: Some("/props"),
        };
    }
    if let Some(v) = get_json(http, http.client.get(format!("{base}/models"))).await {
        let l = parse_models(&v, model);
        if l.context_window.is_some() {
            return ServerLimits {
                source: Some("/v1/models"),
                ..l
            };
        }
    }
    let show = http
        .client
        .post(format!("{root}/api/show"))
        .json(&json!({"model": model}));
    if let Some(n) = get_json(http, show)
        .await
        .as_ref()
        .and_then(parse_ollama_show)
    {
        return ServerLimits {
            context_window: Some(n),
            max_output_tokens: None,
            source: Some("/api/show"),
        };
    }
    ServerLimits::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_props() {
        let v: Value = serde_json::from_str(r#"{"default_generation_settings":{"id":0,"id_task":-1,"n_ctx":2048,"speculative":false,"is_processing":false,"params":{"n_predict":-1,"temperature":0.8}},"total_slots":1,"model_path":"/models/gemma-3-270m.gguf","chat_template":"...","build_info":"b5000"}"#).unwrap();
        assert_eq!(parse_props(&v), Some(2048));
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
        assert_eq!(parse_ollama_show(&v), Some(8192));
        let v: Value = serde_json::from_str(r#"{"parameters":"stop \"<|eot_id|>\"","model_info":{"general.architecture":"llama","llama.context_length":131072}}"#).unwrap();
        assert_eq!(parse_ollama_show(&v), Some(131072));
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
