//! End-to-end tests of the real `eonyx` binary.
mod agent;
mod compaction;
mod config;
mod context;
mod editing;
mod effective;
mod json_errors;
mod keys;
mod providers;
mod recall;
mod release;
mod session_order;
mod sessions;
mod skills;
mod util;
