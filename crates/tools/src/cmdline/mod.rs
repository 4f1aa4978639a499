//! A shell command line as the permission rules see it
//! (docs/tools.md#permission-rules): parsed with a real shell grammar
//! (brush's parser, `parse`) in the dialect of the shell commands run
//! with ([`Dialect::running`]: bash when present, else POSIX `sh`), and
//! walked into the simple commands it runs.
//!
//! Invariants:
//! - What the walk does not fully understand makes the line unclear
//!   ([`Split::parsed`] `false`, [`Split::unclear`] says why): a parse
//!   error, a control character other than tab and newline (or a Unicode
//!   space or format character), a `{name}>` descriptor word, `&>` when
//!   the shell is `sh`, `case`, `[[ ]]`, arithmetic commands, functions,
//!   `coproc`, a substitution in a `for` list, a group's redirection to a
//!   file. No allow rule covers an unclear line.
//! - A command is [`Command::opaque`] when it holds a command or process
//!   substitution, arithmetic, `${…}` with operators, `eval`, a
//!   here-document or here-string, or a redirection to a file other than
//!   `/dev/null`; no prefix rule covers it.
//! - The commands inside substitutions, `eval` arguments and the scripts
//!   handed to a shell (`sh -c`, through wrappers) are in
//!   [`Split::nested`], so deny and ask rules see them; what could not be
//!   looked into leaves its text in [`Split::loose`].
//! - Never panics, whatever the input (the `shell_split` fuzz target).

mod options;
mod parse;
mod words;
mod wrappers;

pub use options::{dangerous_option, is_interpreter, is_shell, program, without_global_options};
pub use wrappers::{WRAPPERS, is_assignment, views, wrapped};

/// The grammar a line is read with: the running shell's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Bash,
    Sh,
}

impl Dialect {
    /// The dialect of [`eonyx_sandbox::shell_program`].
    pub fn running() -> Self {
        if eonyx_sandbox::shell_program().bash {
            Dialect::Bash
        } else {
            Dialect::Sh
        }
    }
}

/// One simple command of a line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// Its words (assignments first), quotes removed; a word that expands
    /// is kept as written.
    pub words: Vec<String>,
    /// For each word: nothing in it expands.
    pub literal: Vec<bool>,
    /// Its redirections as written (`>/dev/null`).
    pub redirects: Vec<String>,
    /// The command as the parser prints it.
    pub text: String,
    /// Never covered by a prefix rule (see the module doc).
    pub opaque: bool,
}

/// A command line split into its commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The simple commands the line runs, in order.
    pub commands: Vec<Command>,
    /// Commands inside substitutions, `eval` and shells' scripts.
    pub nested: Vec<Command>,
    /// `false`: something in the line is not understood (see the module doc).
    pub parsed: bool,
    /// Why `parsed` is `false`, the first thing found.
    pub unclear: Option<String>,
    /// Some code could not be looked into: deny and ask rules also scan
    /// the words of [`Split::loose`].
    pub blind: bool,
    /// Texts whose every word deny and ask rules look at.
    pub loose: Vec<String>,
}

/// Splits `line` as the running shell reads it.
pub fn split(line: &str) -> Split {
    split_as(line, Dialect::running())
}

/// Splits `line` as `dialect` reads it.
///
/// The grammar is a dependency's (brush-parser): should it panic on a line
/// (its line or word parser, or the walk over what it returned), the line
/// is not understood, and the panic never ends eonyx.
pub fn split_as(line: &str, dialect: Dialect) -> Split {
    std::panic::catch_unwind(|| parse::split(line, dialect, 0)).unwrap_or_else(|_| Split {
        parsed: false,
        unclear: Some("the shell parser failed on it".to_owned()),
        blind: true,
        loose: vec![line.to_owned()],
        ..Split::default()
    })
}

#[cfg(test)]
mod tests;
