//! An axum app served on 127.0.0.1 from a thread of its own, on its own
//! multi-thread tokio runtime, so it works from plain and async tests
//! alike (the fake provider server and the test MCP server's HTTP side).

use std::net::SocketAddr;

/// A running server; dropping it stops the server and closes the port.
pub(crate) struct Serving {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Serving {
    /// Serve `app` on a free port, `workers` runtime threads named `name`.
    pub fn start(name: &str, workers: usize, app: axum::Router) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(name)
            .enable_all()
            .build()?;
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stop => {}
                    }
                });
                // Dropping the runtime here (outside any async context)
                // cancels every connection task and closes the sockets.
                drop(runtime);
            })?;
        Ok(Self {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // When `drop` returns the port is closed (works from async tests too:
        // this only joins a plain thread).
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
