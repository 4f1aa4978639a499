//! Provider clients over HTTP: OpenAI Chat Completions compatible servers
//! (OpenAI, OpenRouter, Ollama, vLLM, LM Studio, llama.cpp's llama-server)
//! and the Anthropic Messages API, behind `eonyx_core::Provider`.
//!
//! Invariants:
//! - API keys come only from the environment variable named by
//!   `api_key_env`; they never appear in an error message, `Debug` output or
//!   log (header values are marked sensitive, server messages are scrubbed).
//!   No key means no auth header (local servers).
//! - A context overflow is classified (with the server's figures when it
//!   gives them) and returned, never retried. 401/403 are never retried.
//!   429 waits for `Retry-After`; 5xx, resets and timeouts back off
//!   exponentially with jitter, at most `retries` times.
//! - Nothing is retried once part of the answer was passed to the caller's
//!   callback: a stream that breaks after output began is an error, never a
//!   silently truncated answer.
//! - Cancellation returns `ProviderError::Cancelled` promptly, also during
//!   backoff sleeps. Every stream chunk must arrive within the idle timeout.

pub mod anthropic;
pub mod classify;
mod http;
pub mod limits;
mod native;
pub mod openai;
pub mod refusal;
pub mod responses;
pub mod sse;
mod wire;

use eonyx_core::config::ProviderKind;
use eonyx_core::paths::Env;
use eonyx_core::{ModelConfig, Provider, ProviderError};

pub use anthropic::AnthropicProvider;
pub use anthropic::parse_anthropic_sse_chunks;
pub use classify::parse_overflow_limit;
pub use http::{ApiKey, RetryPolicy};
pub use openai::OpenAiProvider;
pub use openai::parse_openai_sse_chunks;
pub use responses::parse_responses_sse_chunks;

/// The JSON body the client for `model` sends for `request` (streaming, as
/// the clients ask first). `eonyx sessions show --effective --json` prints
/// it, so what is shown is what is sent.
pub fn request_body(model: &ModelConfig, request: &eonyx_core::ChatRequest) -> serde_json::Value {
    request_body_with(
        model,
        request,
        eonyx_core::provider::RequestQuirks::default(),
    )
}

/// [`request_body`] shaped by the parameters the model refused before
/// (remembered in the limits cache), as the client sends it.
pub fn request_body_with(
    model: &ModelConfig,
    request: &eonyx_core::ChatRequest,
    quirks: eonyx_core::provider::RequestQuirks,
) -> serde_json::Value {
    match model.provider {
        ProviderKind::Openai
            if quirks.responses_api
                || model.default_api() == eonyx_core::config::OpenAiApi::Responses =>
        {
            responses::request_body_with(model, request, quirks)
        }
        ProviderKind::Openai => openai::request_body_with(model, request, true, quirks),
        ProviderKind::Anthropic => anthropic::request_body_with(model, request, quirks),
    }
}

/// Hosts that always need a key.
const HOSTED: &[&str] = &["api.openai.com", "api.anthropic.com", "openrouter.ai"];

/// Build the client for `model`. The key is read from the environment
/// variable named by `api_key_env` (absent is fine for local servers).
pub fn from_config(model: &ModelConfig, env: &Env) -> Result<Box<dyn Provider>, ProviderError> {
    let url = reqwest::Url::parse(&model.base_url).map_err(|e| ProviderError::Config {
        message: format!(
            "models.{}.base_url `{}` is not a valid URL ({e}); expected e.g. http://127.0.0.1:8080/v1",
            model.key, model.base_url
        ),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ProviderError::Config {
            message: format!(
                "models.{}.base_url `{}` must start with http:// or https://",
                model.key, model.base_url
            ),
        });
    }
    let key = model
        .api_key_env
        .as_deref()
        .and_then(|var| env.get(var))
        .map(str::to_owned);
    if key.is_none() && url.host_str().is_some_and(|h| HOSTED.contains(&h)) {
        let var = model
            .api_key_env
            .as_deref()
            .unwrap_or(match model.provider {
                ProviderKind::Openai => "OPENAI_API_KEY",
                ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            });
        return Err(ProviderError::Config {
            message: format!(
                "no API key for model `{}` ({}): set ${var}, or point eonyx at a local server \
                 (OPENAI_BASE_URL=http://127.0.0.1:8080/v1, or a [models.<key>] base_url in config.toml; \
                 `cargo xtask local-model` starts one)",
                model.key, model.base_url
            ),
        });
    }
    Ok(match model.provider {
        ProviderKind::Openai => {
            let ollama_default = env
                .get("OLLAMA_CONTEXT_LENGTH")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(limits::OLLAMA_DEFAULT_CONTEXT);
            Box::new(OpenAiProvider::new(model.clone(), key)?.with_ollama_default(ollama_default))
        }
        ProviderKind::Anthropic => Box::new(AnthropicProvider::new(model.clone(), key)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_api_without_key_says_how_to_configure() {
        let model = ModelConfig::with_defaults("default", ProviderKind::Openai);
        let err = from_config(&model, &Env::from_pairs([("HOME", "/h")]))
            .err()
            .unwrap();
        let msg = err.to_string();
        assert!(msg.contains("$OPENAI_API_KEY"), "{msg}");
        assert!(msg.contains("cargo xtask local-model"), "{msg}");
    }

    #[test]
    fn local_server_needs_no_key_and_key_comes_from_named_var() {
        let mut model = ModelConfig::with_defaults("local", ProviderKind::Openai);
        model.base_url = "http://127.0.0.1:8080/v1".into();
        let p = from_config(&model, &Env::from_pairs([("X", "y")])).unwrap();
        assert_eq!(p.name(), "openai");
        model.provider = ProviderKind::Anthropic;
        model.base_url = "https://api.anthropic.com".into();
        model.api_key_env = Some("MY_CLAUDE".into());
        let p = from_config(&model, &Env::from_pairs([("MY_CLAUDE", "k")])).unwrap();
        assert_eq!(p.name(), "anthropic");
    }

    #[test]
    fn bad_base_url_is_a_config_error() {
        let mut model = ModelConfig::with_defaults("x", ProviderKind::Openai);
        model.base_url = "localhost:8080".into();
        let err = from_config(&model, &Env::from_pairs([("A", "b")]))
            .err()
            .unwrap();
        assert_eq!(err.class().name(), "config");
        assert!(err.to_string().contains("models.x.base_url"));
    }
}
