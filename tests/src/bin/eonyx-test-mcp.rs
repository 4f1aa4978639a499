//! `eonyx-test-mcp`: the test MCP server over stdio (see
//! `eonyx_tests::mcp_server`). Flags: `--pad N`, `--change-tools`, and for
//! start failures `--hang-at-start` (never answers the handshake) and
//! `--fail-at-start` (exits 2 with a line on stderr).
#![allow(clippy::print_stderr)] // a test server reporting on its own stderr

use eonyx_tests::mcp_server::{TestMcpOptions, serve_stdio};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let mut opts = TestMcpOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--pad" => opts.pad = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            "--change-tools" => opts.change_tools = true,
            "--hang-at-start" => std::future::pending::<()>().await,
            "--fail-at-start" => {
                eprintln!("eonyx-test-mcp: refusing to start (--fail-at-start)");
                return std::process::ExitCode::from(2);
            }
            other => {
                eprintln!("eonyx-test-mcp: unknown argument {other}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    match serve_stdio(opts).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eonyx-test-mcp: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
