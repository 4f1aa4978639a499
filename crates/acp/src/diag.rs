//! The ACP frontend's one writer to the terminal: diagnostics on stderr.
//! stdout belongs to the protocol (the connection writes it); nothing else
//! in this crate prints.

/// One line of diagnostics on stderr, prefixed `eonyx acp:`.
pub fn diag(line: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "eonyx acp: {line}");
}
