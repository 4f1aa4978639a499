//! The fetch: one checked hop at a time, same-host redirects, the body read
//! up to the cap, the whole bounded by the timeout; pages cached per URL.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use url::Host;

use crate::address::refused_range;
use crate::convert::html_to_markdown_at;
use crate::proxy::ProxyEnv;
use crate::{Body, CACHE_TTL, FetchOptions, MAX_REDIRECTS, Page, USER_AGENT, WebError, host_port};

/// Fetches pages under one set of [`FetchOptions`], remembering each for
/// [`CACHE_TTL`]. Shared by an agent and its tasks' children.
#[derive(Debug, Default)]
pub struct Fetcher {
    options: FetchOptions,
    proxies: ProxyEnv,
    cache: Mutex<HashMap<String, (Instant, Arc<Page>)>>,
}

/// A page and whether it came from the cache.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub page: Arc<Page>,
    pub cached: bool,
}

impl Fetcher {
    /// A fetcher with the process's proxy variables ([`crate::proxy`]).
    pub fn new(options: FetchOptions) -> Self {
        Self::with_proxies(options, ProxyEnv::from_process())
    }

    pub fn with_proxies(options: FetchOptions, proxies: ProxyEnv) -> Self {
        Self {
            options,
            proxies,
            cache: Mutex::default(),
        }
    }

    pub fn options(&self) -> &FetchOptions {
        &self.options
    }

    /// Fetches `url` (parsed by [`crate::parse_url`]), or returns the
    /// cached page when it was fetched less than [`CACHE_TTL`] ago.
    pub async fn fetch(&self, url: &Url) -> Result<Fetched, WebError> {
        let key = url.as_str().to_owned();
        if let Some(page) = self.cached(&key) {
            return Ok(Fetched { page, cached: true });
        }
        let secs = self.options.timeout.as_secs();
        let page = tokio::time::timeout(self.options.timeout, self.fetch_uncached(url.clone()))
            .await
            .map_err(|_| WebError::Timeout {
                url: key.clone(),
                secs,
            })??;
        let page = Arc::new(page);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
        cache.insert(key, (Instant::now(), page.clone()));
        Ok(Fetched {
            page,
            cached: false,
        })
    }

    fn cached(&self, key: &str) -> Option<Arc<Page>> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(key)
            .filter(|(at, _)| at.elapsed() < CACHE_TTL)
            .map(|(_, page)| page.clone())
    }

    async fn fetch_uncached(&self, mut url: Url) -> Result<Page, WebError> {
        let mut redirects = 0;
        loop {
            let response = self.hop(&url).await?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                let location = String::from_utf8_lossy(location.as_bytes()).into_owned();
                let next = url
                    .join(&location)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or_else(|| WebError::BadRedirect {
                        url: url.to_string(),
                        location: location.clone(),
                    })?;
                if !next.username().is_empty() || next.password().is_some() {
                    return Err(WebError::Userinfo);
                }
                if host_port(&next) != host_port(&url) {
                    return Ok(Page {
                        url: url.to_string(),
                        status: status.as_u16(),
                        bytes: 0,
                        cut_from: None,
                        body: Body::Redirect {
                            to: next.to_string(),
                        },
                    });
                }
                if redirects == MAX_REDIRECTS {
                    return Err(WebError::TooManyRedirects {
                        url: next.to_string(),
                    });
                }
                redirects += 1;
                url = next;
                continue;
            }
            return self.read(url, response).await;
        }
    }

    /// One request: to the proxy eonyx chose for it ([`crate::proxy`]), or
    /// directly to the host's addresses, resolved here, checked and pinned
    /// into a client made for this hop (its resolver answers nothing else).
    async fn hop(&self, url: &Url) -> Result<reqwest::Response, WebError> {
        let hp = host_port(url);
        let listed = self.options.private_hosts.contains(&hp);
        let check = |host: &str, ip: IpAddr| match refused_range(ip) {
            Some(range) if !listed => Err(WebError::Refused {
                host: host.to_owned(),
                ip,
                range: range.describe(),
                host_port: hp.clone(),
            }),
            _ => Ok(()),
        };
        let proxy = self.proxies.for_url(url)?;
        // reqwest is built without a default crypto provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // Never reqwest's own reading of the proxy variables.
        let mut builder = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .no_proxy();
        let bad_client = |e: reqwest::Error| WebError::Request {
            url: url.to_string(),
            message: chain(&e),
        };
        if let Some(p) = &proxy {
            builder = builder.proxy(reqwest::Proxy::all(p.as_str()).map_err(bad_client)?);
        }
        match url.host() {
            Some(Host::Ipv4(ip)) => check(&ip.to_string(), IpAddr::V4(ip))?,
            Some(Host::Ipv6(ip)) => check(&format!("[{ip}]"), IpAddr::V6(ip))?,
            Some(Host::Domain(name)) => {
                let port = url.port_or_known_default().unwrap_or(80);
                match tokio::net::lookup_host((name, port)).await {
                    Ok(addrs) => {
                        let addrs: Vec<SocketAddr> = addrs.collect();
                        if addrs.is_empty() {
                            return Err(WebError::Resolve {
                                host: name.to_owned(),
                                message: "the name has no addresses".into(),
                            });
                        }
                        for a in &addrs {
                            check(name, a.ip())?;
                        }
                        if proxy.is_none() {
                            builder = builder.dns_resolver(Arc::new(Pinned {
                                name: name.to_ascii_lowercase(),
                                addrs,
                            }));
                        }
                    }
                    // Behind the proxy chosen for this URL the name may
                    // resolve only there: the proxy connects, not eonyx.
                    Err(_) if proxy.is_some() => {}
                    Err(e) => {
                        return Err(WebError::Resolve {
                            host: name.to_owned(),
                            message: e.to_string(),
                        });
                    }
                }
            }
            None => {
                return Err(WebError::BadUrl {
                    url: url.to_string(),
                    reason: "it has no host".into(),
                });
            }
        }
        let client = builder.build().map_err(bad_client)?;
        client
            .get(url.clone())
            .header(
                ACCEPT,
                "text/html, text/markdown, text/plain;q=0.9, application/json;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| request_error(url, &e))
    }

    /// The body, up to `max_bytes`, as Markdown or text; binary refused
    /// before any of it is read.
    async fn read(&self, url: Url, mut response: reqwest::Response) -> Result<Page, WebError> {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            });
        let kind = match content_type.as_deref() {
            None | Some("") => Kind::Unknown,
            Some(ct) => kind_of(ct).ok_or_else(|| WebError::Binary {
                url: url.to_string(),
                content_type: ct.to_owned(),
            })?,
        };
        let length = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let max = usize::try_from(self.options.max_bytes).unwrap_or(usize::MAX);
        let mut body: Vec<u8> = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| request_error(&url, &e))?
        {
            let room = max - body.len();
            if chunk.len() >= room {
                body.extend_from_slice(&chunk[..room]);
                cut = chunk.len() > room || length.is_none_or(|n| n > max as u64);
                break;
            }
            body.extend_from_slice(&chunk);
        }
        // Dropping the response here closes the connection: nothing more
        // is read.
        drop(response);
        let bytes = u64::try_from(body.len()).unwrap_or(u64::MAX);
        if body.contains(&0) {
            return Err(WebError::Binary {
                url: url.to_string(),
                content_type: content_type.unwrap_or_else(|| "no content type".into()),
            });
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let html = match kind {
            Kind::Html => true,
            Kind::Text => false,
            Kind::Unknown => {
                let start: String = text.trim_start().chars().take(15).collect();
                let start = start.to_ascii_lowercase();
                start.starts_with("<!doctype html") || start.starts_with("<html")
            }
        };
        let body = if html {
            // The conversion is CPU work (tens of milliseconds for a large
            // page): off the async threads.
            let base = url.clone();
            let markdown =
                tokio::task::spawn_blocking(move || html_to_markdown_at(&text, Some(&base)))
                    .await
                    .unwrap_or_default();
            Body::Markdown(markdown)
        } else {
            Body::Text(text)
        };
        Ok(Page {
            url: url.to_string(),
            status,
            bytes,
            cut_from: cut.then_some(length),
            body,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Html,
    Text,
    Unknown,
}

/// What a content type is read as; `None`: binary.
fn kind_of(ct: &str) -> Option<Kind> {
    let kind = match ct {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        _ if ct.starts_with("text/") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/x-ndjson" => Kind::Text,
        _ if ct.ends_with("+json") || ct.ends_with("+xml") => Kind::Text,
        _ => return None,
    };
    Some(kind)
}

/// The resolver of a direct hop: the one name checked, to its checked
/// addresses; any other name fails (nothing is resolved behind the check).
struct Pinned {
    name: String,
    addrs: Vec<SocketAddr>,
}

impl reqwest::dns::Resolve for Pinned {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let answer: Result<reqwest::dns::Addrs, Box<dyn std::error::Error + Send + Sync>> =
            if name.as_str().eq_ignore_ascii_case(&self.name) {
                Ok(Box::new(self.addrs.clone().into_iter()))
            } else {
                Err(format!("{} was not checked by eonyx; not resolved", name.as_str()).into())
            };
        Box::pin(std::future::ready(answer))
    }
}

fn request_error(url: &Url, e: &reqwest::Error) -> WebError {
    let message = chain(e);
    let lower = message.to_ascii_lowercase();
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        WebError::Tls {
            url: url.to_string(),
            message,
        }
    } else {
        WebError::Request {
            url: url.to_string(),
            message,
        }
    }
}

/// An error with its causes, `: `-separated.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = cause.source();
    }
    s
}
