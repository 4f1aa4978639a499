//! Which proxy a fetch goes through, decided by eonyx from the environment
//! (docs/tools.md#web-fetch), never by reqwest's own lookup: a fetch either
//! goes to the proxy chosen here or connects directly to an address eonyx
//! resolved, checked and pinned.
//!
//! Precedence, for each of `http_proxy`, `https_proxy`, `all_proxy` and
//! `no_proxy`: the lower-case variable, then the upper-case one; a value
//! that is empty or only spaces counts as unset (so `HTTP_PROXY=""` never
//! hides a set `http_proxy`, nor the reverse). An `http://` URL uses
//! `http_proxy`, an `https://` one `https_proxy`, each falling back to
//! `all_proxy`. When `REQUEST_METHOD` is set (a CGI program, whose
//! `HTTP_PROXY` a client can set with a `Proxy:` header), upper-case
//! `HTTP_PROXY` is ignored. A host matching `no_proxy` is fetched
//! directly. A proxy value that does not parse, or names a scheme other
//! than http or https, fails the fetch: it is never a direct connection.

use std::net::IpAddr;

use reqwest::Url;
use url::Host;

use crate::WebError;

/// The proxy variables as read once from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// (variable name, value) for each setting that is set.
    http: Option<(&'static str, String)>,
    https: Option<(&'static str, String)>,
    all: Option<(&'static str, String)>,
    no_proxy: Vec<String>,
}

impl ProxyEnv {
    /// The process's proxy variables.
    pub fn from_process() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The proxy variables `get` returns.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let cgi = get("REQUEST_METHOD").is_some();
        let pick = |lower: &'static str, upper: &'static str, upper_ok: bool| {
            let set = |name: &'static str| {
                get(name)
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .map(|v| (name, v))
            };
            set(lower).or_else(|| if upper_ok { set(upper) } else { None })
        };
        let no_proxy = pick("no_proxy", "NO_PROXY", true)
            .map(|(_, v)| {
                v.split(',')
                    .map(|e| e.trim().to_ascii_lowercase())
                    .filter(|e| !e.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Self {
            http: pick("http_proxy", "HTTP_PROXY", !cgi),
            https: pick("https_proxy", "HTTPS_PROXY", true),
            all: pick("all_proxy", "ALL_PROXY", true),
            no_proxy,
        }
    }

    /// The proxy `url` goes through, `None` for a direct connection.
    pub fn for_url(&self, url: &Url) -> Result<Option<Url>, WebError> {
        let chosen = match url.scheme() {
            "https" => self.https.as_ref(),
            _ => self.http.as_ref(),
        }
        .or(self.all.as_ref());
        let Some((var, value)) = chosen else {
            return Ok(None);
        };
        if self.bypassed(url) {
            return Ok(None);
        }
        parse_proxy(var, value).map(Some)
    }

    /// Whether `url`'s host matches a `no_proxy` entry: `*`; a name, which
    /// also covers its subdomains (`.example.com` and `*.example.com` mean
    /// the same); an IP address or CIDR range; any of these with `:PORT`.
    fn bypassed(&self, url: &Url) -> bool {
        let port = url.port_or_known_default();
        let host = url.host();
        self.no_proxy
            .iter()
            .any(|entry| entry_matches(entry, host.as_ref(), port))
    }
}

fn entry_matches(entry: &str, host: Option<&Host<&str>>, port: Option<u16>) -> bool {
    if entry == "*" {
        return true;
    }
    // `[::1]:8080`, `host:8080`, `10.0.0.0/8`; a bare IPv6 address has
    // several colons and no port.
    let (name, want_port) = match entry.rsplit_once(':') {
        Some((n, p)) if !n.contains(':') || n.ends_with(']') => match p.parse::<u16>() {
            Ok(p) => (n, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    };
    if want_port.is_some_and(|p| Some(p) != port) {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let ip = match host {
        Some(Host::Ipv4(v4)) => Some(IpAddr::V4(*v4)),
        Some(Host::Ipv6(v6)) => Some(IpAddr::V6(*v6)),
        _ => None,
    };
    if let Some((net, bits)) = name.split_once('/') {
        let (Ok(net), Ok(bits), Some(ip)) = (net.parse::<IpAddr>(), bits.parse::<u32>(), ip) else {
            return false;
        };
        return in_cidr(ip, net, bits);
    }
    if let Ok(entry_ip) = name.parse::<IpAddr>() {
        return ip == Some(entry_ip);
    }
    let Some(Host::Domain(domain)) = host else {
        return false;
    };
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let name = name
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .trim_end_matches('.');
    !name.is_empty()
        && (domain == name
            || domain
                .strip_suffix(name)
                .is_some_and(|sub| sub.ends_with('.')))
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// A proxy value as curl reads it: `host:port` means `http://host:port`.
fn parse_proxy(var: &str, value: &str) -> Result<Url, WebError> {
    let bad = |reason: &str| WebError::Proxy {
        var: var.to_owned(),
        reason: reason.to_owned(),
    };
    let text = if value.contains("://") {
        value.to_owned()
    } else {
        format!("http://{value}")
    };
    let url = Url::parse(&text).map_err(|e| bad(&format!("it is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(&format!(
            "`{}:` proxies are not supported, only http:// and https:// ones",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> ProxyEnv {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ProxyEnv::from_lookup(|n| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()))
    }

    fn proxy(e: &ProxyEnv, url: &str) -> Option<String> {
        e.for_url(&Url::parse(url).unwrap())
            .unwrap()
            .map(|u| u.to_string())
    }

    #[test]
    fn lower_case_wins_and_an_empty_value_counts_as_unset() {
        let e = env(&[("HTTP_PROXY", ""), ("http_proxy", "p1:3128")]);
        assert_eq!(
            proxy(&e, "http://a.example/"),
            Some("http://p1:3128/".into())
        );
        let e = env(&[("HTTP_PROXY", "p2:3128"), ("http_proxy", " ")]);
        assert_eq!(
            proxy(&e, "http://a.example/"),
            Some("http://p2:3128/".into())
        );
        let e = env(&[("HTTP_PROXY", "p2:3128"), ("http_proxy", "p1:3128")]);
        assert_eq!(
            proxy(&e, "http://a.example/"),
            Some("http://p1:3128/".into())
        );
        let e = env(&[("ALL_PROXY", "http://all:1")]);
        assert_eq!(
            proxy(&e, "https://a.example/"),
            Some("http://all:1/".into())
        );
        assert_eq!(proxy(&env(&[]), "https://a.example/"), None);
        let e = env(&[("https_proxy", "http://s:1")]);
        assert_eq!(proxy(&e, "http://a.example/"), None);
    }

    #[test]
    fn cgi_ignores_upper_case_http_proxy_only() {
        let e = env(&[("REQUEST_METHOD", "GET"), ("HTTP_PROXY", "evil:1")]);
        assert_eq!(proxy(&e, "http://a.example/"), None);
        let e = env(&[("REQUEST_METHOD", "GET"), ("http_proxy", "p:1")]);
        assert_eq!(proxy(&e, "http://a.example/"), Some("http://p:1/".into()));
    }

    #[test]
    fn no_proxy_matches_names_subdomains_ips_ranges_and_ports() {
        let e = env(&[
            ("http_proxy", "p:1"),
            (
                "NO_PROXY",
                "example.com, .corp, *.dev, 10.0.0.0/8, 192.168.1.7, [::1], local:8080",
            ),
        ]);
        for direct in [
            "http://example.com/",
            "http://www.example.com/",
            "http://a.corp/",
            "http://corp/x",
            "http://x.dev/",
            "http://10.2.3.4/",
            "http://192.168.1.7/",
            "http://[::1]/",
            "http://local:8080/",
        ] {
            assert_eq!(proxy(&e, direct), None, "{direct}");
        }
        for proxied in [
            "http://notexample.com/",
            "http://11.0.0.1/",
            "http://local:8081/",
            "http://xcorp/x",
        ] {
            assert!(proxy(&e, proxied).is_some(), "{proxied}");
        }
        let all = env(&[("http_proxy", "p:1"), ("no_proxy", "*")]);
        assert_eq!(proxy(&all, "http://a.example/"), None);
    }

    #[test]
    fn a_proxy_that_does_not_parse_is_an_error_not_a_direct_connection() {
        for bad in ["http://", "socks5://p:1", "http://[::1", "ftp://p:1"] {
            let e = env(&[("http_proxy", bad)]);
            let err = e
                .for_url(&Url::parse("http://a.example/").unwrap())
                .unwrap_err()
                .to_string();
            assert!(err.contains("http_proxy"), "{bad}: {err}");
        }
    }
}
