//! One module per command. Each takes the parsed arguments and the printer.

pub mod approve;
pub mod compact;
pub mod completions;
pub mod config;
pub mod context;
pub mod interactive;
pub mod run;
pub mod sessions;
pub mod skills;
pub mod ui;
