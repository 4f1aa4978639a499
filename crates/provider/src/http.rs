//! What both clients share: the API key (redacted everywhere), the reqwest
//! client with its timeouts, the retry policy and loop, reading bodies and
//! streams with an idle timeout.

use std::fmt;
use std::time::Duration;

use backon::BackoffBuilder;
use eonyx_core::provider::RequestQuirks;
use eonyx_core::{ChatRequest, ChatResponse, ModelConfig, Provider, ProviderError, StreamEvent};
use eventsource_stream::{EventStream, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

use crate::classify;

/// Longest error body read (bytes).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest non-streaming body read (bytes).
const MAX_BODY: usize = 32 * 1024 * 1024;

/// How a body that broke off mid-way starts its `Transient` message (told
/// apart from a body that stalled past the idle timeout).
pub(crate) const CONNECTION_BROKE: &str = "the connection broke";

/// An API key. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// A header value marked sensitive (hyper never logs it).
    pub(crate) fn header(&self, prefix: &str) -> Result<HeaderValue, ProviderError> {
        let mut v = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ProviderError::Config {
                message: "the API key contains characters that cannot be sent in an HTTP header; check the environment variable that holds it".to_owned(),
            }
        })?;
        v.set_sensitive(true);
        Ok(v)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// How failed attempts are retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// First backoff delay; each next one doubles, plus up to 100% jitter.
    pub min_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is
    /// returned instead.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    pub fn from_config(model: &ModelConfig) -> Self {
        Self {
            retries: model.retries,
            ..Self::default()
        }
    }

    pub(crate) fn backoff(&self) -> impl Iterator<Item = Duration> {
        backon::ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_max_times(self.retries as usize)
            .with_jitter()
            .build()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            retries: 4,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// The transport shared by both clients.
#[derive(Clone)]
pub(crate) struct Http {
    pub client: reqwest::Client,
    pub key: Option<ApiKey>,
    pub env_var: Option<String>,
    pub idle: Duration,
    pub retry: RetryPolicy,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("key", &self.key)
            .field("env_var", &self.env_var)
            .field("idle", &self.idle)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Http {
    pub fn new(model: &ModelConfig, key: Option<String>) -> Result<Self, ProviderError> {
        // reqwest is built without a default crypto provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(model.connect_timeout_secs.max(1)))
            .user_agent(concat!("eonyx/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Config {
                message: format!("could not set up the HTTP client: {}", error_chain(&e)),
            })?;
        Ok(Self {
            client,
            key: key.filter(|k| !k.is_empty()).map(ApiKey::new),
            env_var: model.api_key_env.clone(),
            idle: Duration::from_secs(model.idle_timeout_secs.max(1)),
            retry: RetryPolicy::from_config(model),
        })
    }

    /// Remove the key from any text that may reach the user.
    pub fn redact(&self, text: String) -> String {
        match &self.key {
            Some(k) if k.expose().len() >= 4 && text.contains(k.expose()) => {
                text.replace(k.expose(), "[redacted]")
            }
            _ => text,
        }
    }

    pub fn redact_error(&self, e: ProviderError) -> ProviderError {
        use ProviderError as E;
        match e {
            E::ContextOverflow {
                message,
                prompt_tokens,
                limit,
            } => E::ContextOverflow {
                message: self.redact(message),
                prompt_tokens,
                limit,
            },
            E::Auth {
                status,
                env_var,
                message,
            } => E::Auth {
                status,
                env_var,
                message: self.redact(message),
            },
            E::RateLimited {
                retry_after,
                message,
            } => E::RateLimited {
                retry_after,
                message: self.redact(message),
            },
            E::Transient { message } => E::Transient {
                message: self.redact(message),
            },
            E::BadResponse { message } => E::BadResponse {
                message: self.redact(message),
            },
            E::Rejected { status, message } => E::Rejected {
                status,
                message: self.redact(message),
            },
            E::Config { message } => E::Config {
                message: self.redact(message),
            },
            E::Cancelled => E::Cancelled,
        }
    }

    /// Send a prepared request and wait for the response headers (within the
    /// idle timeout). A non-success status is classified into an error.
    pub async fn send(
        &self,
        builder: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, ProviderError> {
        let resp = tokio::time::timeout(self.idle, builder.send())
            .await
            .map_err(|_| ProviderError::Transient {
                message: format!(
                    "no response from {url} within {}s (idle_timeout_secs)",
                    self.idle.as_secs()
                ),
            })?
            .map_err(|e| request_error(&e, url))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = retry_after(resp.headers(), jiff::Timestamp::now());
        let body = self
            .read_capped(resp, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        Err(classify::classify_http(
            status.as_u16(),
            retry_after,
            &String::from_utf8_lossy(&body),
            self.env_var.as_deref(),
        ))
    }

    /// Read a whole body, each chunk within the idle timeout, at most `cap`
    /// bytes (the rest is dropped).
    pub async fn read_capped(
        &self,
        resp: reqwest::Response,
        cap: usize,
    ) -> Result<Vec<u8>, ProviderError> {
        let mut chunks = self.chunks(resp);
        let mut out = Vec::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            let room = cap.saturating_sub(out.len());
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if out.len() >= cap {
                break;
            }
        }
        Ok(out)
    }

    /// A whole JSON body (non-streaming responses).
    pub async fn read_json(
        &self,
        resp: reqwest::Response,
    ) -> Result<serde_json::Value, ProviderError> {
        let body = self.read_capped(resp, MAX_BODY).await?;
        serde_json::from_slice(&body).map_err(|e| ProviderError::BadResponse {
            message: format!(
                "the response body is not valid JSON ({e}): {}",
                classify::shorten(&String::from_utf8_lossy(&body))
            ),
        })
    }

    /// The body as a byte stream where every chunk must arrive within the
    /// idle timeout; a gap longer than that ends the stream with an error.
    pub fn chunks(
        &self,
        resp: reqwest::Response,
    ) -> impl Stream<Item = Result<bytes::Bytes, ProviderError>> + Unpin + use<> {
        let idle = self.idle;
        let inner = Box::pin(resp.bytes_stream());
        Box::pin(futures_util::stream::unfold(
            Some(inner),
            move |state| async move {
                let mut s = state?;
                match tokio::time::timeout(idle, s.next()).await {
                    Ok(Some(Ok(b))) => Some((Ok(b), Some(s))),
                    Ok(Some(Err(e))) => Some((
                        Err(ProviderError::Transient {
                            message: format!("{CONNECTION_BROKE}: {}", error_chain(&e)),
                        }),
                        None,
                    )),
                    Ok(None) => None,
                    Err(_) => Some((
                        Err(ProviderError::Transient {
                            message: format!(
                                "the server sent nothing for {}s (idle_timeout_secs)",
                                idle.as_secs()
                            ),
                        }),
                        None,
                    )),
                }
            },
        ))
    }

    /// The body as SSE events.
    pub fn events(
        &self,
        resp: reqwest::Response,
    ) -> EventStream<impl Stream<Item = Result<bytes::Bytes, ProviderError>> + Unpin + use<>> {
        self.chunks(resp).eventsource()
    }
}

/// What a single attempt of a request does; implemented by both clients.
pub(crate) trait Attempt: Sync {
    fn http(&self) -> &Http;

    /// One HTTP exchange. `stream` is false once the server refused
    /// streaming.
    fn attempt<'a>(
        &'a self,
        request: &'a ChatRequest,
        stream: bool,
        emit: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> eonyx_core::provider::BoxFuture<'a, Result<ChatResponse, ProviderError>>;

    /// Whether this error means "this server does not stream"; the request
    /// is then repeated once without streaming.
    fn refuses_streaming(&self, _err: &ProviderError) -> bool {
        false
    }

    /// Remember that the server refused streaming.
    fn set_no_stream(&self) {}

    fn streams(&self) -> bool {
        true
    }
}

/// [`send_with_retries`], and when the server refuses a parameter: `learn`
/// gives the quirks to send with next (a parameter dropped or renamed), or
/// `None` (the error stands); the quirks change and the request goes once
/// more, at most `learnings` times.
pub(crate) async fn send_learning<P: Attempt + Provider>(
    provider: &P,
    request: &ChatRequest,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
    learnings: usize,
    learn: impl Fn(RequestQuirks, &ProviderError) -> Option<RequestQuirks>,
) -> Result<ChatResponse, ProviderError> {
    for _ in 0..learnings {
        let err = match send_with_retries(provider, request, &mut *on_event).await {
            Err(e) => e,
            ok => return ok,
        };
        match learn(provider.quirks(), &err) {
            Some(q) => provider.set_quirks(q),
            None => return Err(err),
        }
    }
    send_with_retries(provider, request, on_event).await
}

/// Run attempts with retries and cancellation (see [`RetryPolicy`]).
pub(crate) async fn send_with_retries<A: Attempt + ?Sized>(
    client: &A,
    request: &ChatRequest,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ChatResponse, ProviderError> {
    let cancel = request.cancel.clone();
    let work = async {
        let http = client.http();
        let mut backoff = http.retry.backoff();
        let mut stream = client.streams();
        let mut fell_back = false;
        loop {
            let mut emitted = false;
            let result = {
                let mut emit = |ev: StreamEvent| {
                    emitted = true;
                    on_event(ev);
                };
                client.attempt(request, stream, &mut emit).await
            };
            let err = match result {
                Ok(r) => return Ok(r),
                Err(e) => http.redact_error(e),
            };
            if stream && !fell_back && !emitted && client.refuses_streaming(&err) {
                stream = false;
                fell_back = true;
                client.set_no_stream();
                continue;
            }
            if emitted {
                // The caller already showed part of this answer: retrying
                // would show it twice. Report the break instead.
                return Err(match err {
                    ProviderError::Transient { message } => ProviderError::Transient {
                        message: format!("the stream broke after output began: {message}"),
                    },
                    other => other,
                });
            }
            let Some(delay) = next_delay(&err, &mut backoff, &http.retry) else {
                return Err(err);
            };
            tokio::time::sleep(delay).await;
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ProviderError::Cancelled),
        r = work => r,
    }
}

/// The wait before the next attempt, or `None` when `err` is final.
pub(crate) fn next_delay(
    err: &ProviderError,
    backoff: &mut impl Iterator<Item = Duration>,
    policy: &RetryPolicy,
) -> Option<Duration> {
    if !err.is_retryable() {
        return None;
    }
    let computed = backoff.next()?;
    match err {
        ProviderError::RateLimited {
            retry_after: Some(after),
            ..
        } => (*after <= policy.max_retry_after).then_some(*after),
        _ => Some(computed),
    }
}

/// A temperature as JSON, written as configured (`0.2`, not the f32
/// widening `0.20000000298023224`).
pub(crate) fn temperature_json(t: f32) -> serde_json::Value {
    t.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// `Retry-After` (seconds or HTTP date) or `retry-after-ms`.
pub(crate) fn retry_after(headers: &HeaderMap, now: jiff::Timestamp) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let v = headers.get(RETRY_AFTER)?.to_str().ok()?;
    classify::parse_retry_after(v, now)
}

/// A reqwest failure before any response: connect, timeout, invalid URL.
pub(crate) fn request_error(e: &reqwest::Error, url: &str) -> ProviderError {
    let chain = error_chain(e);
    if e.is_builder() {
        return ProviderError::Config {
            message: format!("invalid request to {url}: {chain}; check base_url"),
        };
    }
    let message = if e.is_connect() && e.is_timeout() {
        format!("timed out connecting to {url} (connect_timeout_secs): {chain}")
    } else if e.is_connect() {
        format!("could not connect to {url}: {chain}; is the server running?")
    } else if e.is_timeout() {
        format!("timed out talking to {url}: {chain}")
    } else {
        format!("request to {url} failed: {chain}")
    };
    ProviderError::Transient { message }
}

/// An error with its sources, joined with `: `.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_debug_and_errors_never_show_the_key() {
        let mut model = ModelConfig::with_defaults("m", eonyx_core::config::ProviderKind::Openai);
        model.api_key_env = Some("MY_KEY".into());
        let http = Http::new(&model, Some("sk-secret-12345".into())).unwrap();
        let dbg = format!("{http:?}");
        assert!(!dbg.contains("sk-secret-12345"), "{dbg}");
        assert!(dbg.contains("[redacted]"));
        let e = http.redact_error(ProviderError::Auth {
            status: 401,
            env_var: Some("MY_KEY".into()),
            message: "Incorrect API key provided: sk-secret-12345".into(),
        });
        assert!(!e.to_string().contains("sk-secret-12345"), "{e}");
        assert!(e.to_string().contains("$MY_KEY"));
        let h = http.key.as_ref().unwrap().header("Bearer ").unwrap();
        assert!(h.is_sensitive());
        assert!(!format!("{h:?}").contains("secret"));
    }

    #[test]
    fn retry_delays_grow_and_honour_retry_after() {
        let policy = RetryPolicy {
            retries: 3,
            ..RetryPolicy::default()
        };
        let mut b = policy.backoff();
        let transient = ProviderError::Transient {
            message: "x".into(),
        };
        let d: Vec<Duration> = (0..3)
            .map(|_| next_delay(&transient, &mut b, &policy).unwrap())
            .collect();
        for (i, d) in d.iter().enumerate() {
            let base = Duration::from_secs(1 << i);
            assert!(*d >= base && *d < base * 2, "attempt {i}: {d:?}");
        }
        assert_eq!(next_delay(&transient, &mut b, &policy), None);

        let mut b = policy.backoff();
        let limited = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "x".into(),
        };
        assert_eq!(
            next_delay(&limited, &mut b, &policy),
            Some(Duration::from_secs(7))
        );
        let too_long = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(3600)),
            message: "x".into(),
        };
        assert_eq!(next_delay(&too_long, &mut b, &policy), None);
        let overflow = ProviderError::ContextOverflow {
            message: "x".into(),
            prompt_tokens: None,
            limit: None,
        };
        assert_eq!(next_delay(&overflow, &mut b, &policy), None);
    }

    #[test]
    fn retry_after_header_forms() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Thu, 01 Jan 2026 00:00:10 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(10)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
    }
}
