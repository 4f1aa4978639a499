//! A fake web server for `web_fetch` tests: raw HTTP/1.1 on
//! `127.0.0.1:<random port>`, one request per connection, answered by a
//! routing function. It records every connection (counted at accept, so a
//! test can assert that none reached it), every request's head, and how
//! many body bytes each answer managed to send before the client closed
//! the connection.
//!
//! Quirks it can play ([`WebReply`]): a page, a redirect, a body sent in
//! paced chunks (a large page, or one that never ends).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A request's head as the server read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebRequest {
    pub method: String,
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
}

impl WebRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum WebReply {
    /// The whole body at once, with `Content-Length`.
    Page {
        status: u16,
        content_type: Option<String>,
        body: Vec<u8>,
    },
    /// A redirect to `location` (as written, relative or absolute).
    Redirect { status: u16, location: String },
    /// `chunk` bytes of `x` every `every`, `total` in all (announced as
    /// `Content-Length`), or forever when `total` is `None`.
    Paced {
        content_type: String,
        chunk: usize,
        every: Duration,
        total: Option<u64>,
    },
}

impl WebReply {
    pub fn html(body: &str) -> Self {
        WebReply::Page {
            status: 200,
            content_type: Some("text/html; charset=utf-8".into()),
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn redirect(location: impl Into<String>) -> Self {
        WebReply::Redirect {
            status: 302,
            location: location.into(),
        }
    }
}

/// What one answer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// Body bytes written to the socket.
    pub body_bytes: u64,
    /// The client closed the connection before the whole body was sent.
    pub closed_early: bool,
}

#[derive(Default)]
struct State {
    connections: usize,
    requests: Vec<WebRequest>,
    served: Vec<Served>,
}

type Route = dyn Fn(&WebRequest) -> WebReply + Send + Sync;

/// The running server; dropping it stops it.
pub struct WebServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WebServer {
    /// Serve `route` on a free loopback port.
    pub fn start(route: impl Fn(&WebRequest) -> WebReply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .unwrap_or_else(|e| panic!("the fake web server cannot bind a loopback port: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("the fake web server has no address: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("the fake web server cannot poll: {e}"));
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let route: Arc<Route> = Arc::new(route);
        let thread = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || accept_loop(&listener, &state, &stop, &route))
        };
        Self {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.lock().connections
    }

    pub fn requests(&self) -> Vec<WebRequest> {
        self.lock().requests.clone()
    }

    /// What each finished answer sent, in order of completion.
    pub fn served(&self) -> Vec<Served> {
        self.lock().served.clone()
    }

    /// Waits (up to `limit`) until `n` answers have finished.
    pub fn wait_served(&self, n: usize, limit: Duration) -> Vec<Served> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let served = self.served();
            if served.len() >= n || std::time::Instant::now() > deadline {
                return served;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    state: &Arc<Mutex<State>>,
    stop: &Arc<AtomicBool>,
    route: &Arc<Route>,
) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .connections += 1;
                let (state, stop, route) = (state.clone(), stop.clone(), route.clone());
                std::thread::spawn(move || serve(stream, &state, &stop, &*route));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>, stop: &AtomicBool, route: &Route) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let request = WebRequest {
        method,
        path,
        headers,
    };
    let reply = route(&request);
    state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .requests
        .push(request);
    let served = answer(stream, reply, stop);
    state
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .served
        .push(served);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        404 => "Not Found",
        _ => "Status",
    }
}

fn answer(mut stream: TcpStream, reply: WebReply, stop: &AtomicBool) -> Served {
    let mut served = Served::default();
    match reply {
        WebReply::Page {
            status,
            content_type,
            body,
        } => {
            let ct = content_type
                .map(|c| format!("Content-Type: {c}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {status} {}\r\n{ct}Content-Length: {}\r\nConnection: close\r\n\r\n",
                reason(status),
                body.len()
            );
            if stream.write_all(head.as_bytes()).is_ok() && stream.write_all(&body).is_ok() {
                served.body_bytes = body.len() as u64;
            } else {
                served.closed_early = true;
            }
        }
        WebReply::Redirect { status, location } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                reason(status)
            );
            let _ = stream.write_all(head.as_bytes());
        }
        WebReply::Paced {
            content_type,
            chunk,
            every,
            total,
        } => {
            let length = total
                .map(|t| format!("Content-Length: {t}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{length}Connection: close\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).is_err() {
                served.closed_early = true;
                return served;
            }
            let block = vec![b'x'; chunk];
            loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let n = match total {
                    Some(t) if served.body_bytes >= t => break,
                    Some(t) => {
                        usize::try_from(t - served.body_bytes).map_or(chunk, |r| r.min(chunk))
                    }
                    None => chunk,
                };
                if stream.write_all(&block[..n]).is_err() {
                    served.closed_early = true;
                    break;
                }
                served.body_bytes += n as u64;
                std::thread::sleep(every);
            }
        }
    }
    let _ = stream.flush();
    served
}
