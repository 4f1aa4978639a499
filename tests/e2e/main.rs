//! End-to-end tests of the real `eonyx` binary.
mod agent;
mod compaction;
mod config;
mod context;
mod editing;
mod release;
mod repl;
mod sessions;
mod util;
