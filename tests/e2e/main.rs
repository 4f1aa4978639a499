//! End-to-end tests of the real `eonyx` binary.
mod release;
mod config;
mod context;
mod util;
mod sessions;
mod compaction;
mod agent;
