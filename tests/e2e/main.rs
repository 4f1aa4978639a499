//! End-to-end tests of the real `eonyx` binary.
mod agent;
mod compaction;
mod config;
mod context;
mod editing;
mod memory;
mod recall;
mod release;
mod sessions;
mod util;
