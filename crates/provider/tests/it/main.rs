//! The provider's integration tests, as one test binary (one link instead
//! of one per file: a clean build of the workspace is dominated by linking
//! and compiling test targets).

mod fake_server;
mod http;
mod scripted;
