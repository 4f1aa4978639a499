//! A tiny blocking HTTP/1.1 client over `std::net` for tests and xtask:
//! one request per connection (`Connection: close`), chunked bodies decoded,
//! and a flag telling whether the body arrived complete (a reset mid-stream
//! leaves it `false`). Plain `http://` only.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// Failures of [`request`].
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("unsupported URL `{0}`: only http://host:port/path is supported")]
    Url(String),
    #[error("HTTP request to {url} failed: {source}")]
    Io {
        url: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the response from {0} has no complete status line and headers")]
    Malformed(String),
}

/// A received response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
    /// The decoded body (lossy UTF-8).
    pub body: String,
    /// `false` when the connection ended before the body was complete.
    pub complete: bool,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// The payload of every SSE `data:` line, in order (`[DONE]` included).
    pub fn sse_data(&self) -> Vec<String> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.trim_start().to_owned())
            .collect()
    }

    /// The SSE `data:` payloads that parse as JSON.
    pub fn sse_json(&self) -> Vec<Value> {
        self.sse_data()
            .iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }
}

fn split_url(url: &str) -> Result<(String, String), HttpError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| HttpError::Url(url.to_owned()))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if host.is_empty() {
        return Err(HttpError::Url(url.to_owned()));
    }
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    Ok((host, path.to_owned()))
}

/// Send one request and read the whole response (until the server closes).
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    timeout: Duration,
) -> Result<HttpResponse, HttpError> {
    let (host, path) = split_url(url)?;
    let io = |source| HttpError::Io {
        url: url.to_owned(),
        source,
    };
    let mut stream = TcpStream::connect(&host).map_err(io)?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            head.push_str("Content-Type: application/json\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(io)?;
    if let Some(body) = body {
        stream.write_all(body.as_bytes()).map_err(io)?;
    }
    stream.flush().map_err(io)?;

    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A reset or abort ends the body; `complete` tells the caller.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                ) =>
            {
                break;
            }
            Err(e) => return Err(io(e)),
        }
    }
    parse_response(&raw).ok_or_else(|| HttpError::Malformed(url.to_owned()))
}

/// `POST` a JSON body.
pub fn post_json(
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Result<HttpResponse, HttpError> {
    request(
        "POST",
        url,
        headers,
        Some(&body.to_string()),
        Duration::from_secs(120),
    )
}

/// `GET` a URL.
pub fn get(url: &str) -> Result<HttpResponse, HttpError> {
    request("GET", url, &[], None, Duration::from_secs(30))
}

/// Parse raw response bytes (status line, headers, body); `None` when the
/// head is incomplete.
pub fn parse_response(raw: &[u8]) -> Option<HttpResponse> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let rest = &raw[end + 4..];
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = BTreeMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let (body, complete) = if chunked {
        dechunk(rest)
    } else if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        (rest[..len.min(rest.len())].to_vec(), rest.len() >= len)
    } else {
        (rest.to_vec(), true)
    };
    Some(HttpResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        complete,
    })
}

/// Decode a chunked body; `complete` is whether the final 0-size chunk came.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            return (out, false);
        };
        rest = &rest[eol + 2..];
        if size == 0 {
            return (out, true);
        }
        if rest.len() < size {
            out.extend_from_slice(rest);
            return (out, false);
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_chunked_and_detects_truncation() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let r = parse_response(raw).unwrap();
        assert_eq!(
            (r.status, r.body.as_str(), r.complete),
            (200, "abcde", true)
        );
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
        let r = parse_response(raw).unwrap();
        assert_eq!((r.body.as_str(), r.complete), ("abc", false));
        let raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\nshort";
        let r = parse_response(raw).unwrap();
        assert_eq!((r.status, r.complete), (404, false));
    }

    #[test]
    fn rejects_non_http_urls() {
        assert!(matches!(
            get("https://example.com/"),
            Err(HttpError::Url(_))
        ));
    }
}
