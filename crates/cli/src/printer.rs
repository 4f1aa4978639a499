//! All terminal output goes through [`Printer`]: data to stdout, everything
//! else to stderr. Colour only on a terminal and without `NO_COLOR`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};

use crate::event::Event;

pub struct Printer {
    stdout: std::io::Stdout,
    json: bool,
    stderr_color: bool,
    stderr_tty: bool,
    stdout_tty: bool,
    /// A JSON `error` event was already written (so the exit path does not
    /// write a second one).
    json_error_written: bool,
}

impl Printer {
    pub fn new() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let stderr_tty = std::io::stderr().is_terminal();
        Self {
            stdout: std::io::stdout(),
            json: false,
            stderr_color: stderr_tty && !no_color,
            stderr_tty,
            stdout_tty: std::io::stdout().is_terminal(),
            json_error_written: false,
        }
    }

    pub fn set_json(&mut self, json: bool) {
        self.json = json;
    }

    pub fn json(&self) -> bool {
        self.json
    }

    /// Whether stderr is a terminal (progress is shown only then).
    pub fn stderr_is_terminal(&self) -> bool {
        self.stderr_tty
    }

    pub fn stdout_is_terminal(&self) -> bool {
        self.stdout_tty
    }

    /// Whether colour may be used on stderr.
    pub fn color(&self) -> bool {
        self.stderr_color
    }

    /// Write data to stdout (no newline added).
    pub fn out(&mut self, s: &str) -> std::io::Result<()> {
        self.stdout.write_all(s.as_bytes())
    }

    /// Write a line of data to stdout.
    pub fn outln(&mut self, s: &str) -> std::io::Result<()> {
        let mut lock = self.stdout.lock();
        lock.write_all(s.as_bytes())?;
        lock.write_all(b"\n")
    }

    /// Write raw bytes to stdout.
    pub fn out_bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.stdout.write_all(b)
    }

    /// One JSON value as a line on stdout (the data of listings; events
    /// go through [`Printer::event`]), its objects' keys sorted.
    pub fn json_line(&mut self, v: &serde_json::Value) -> std::io::Result<()> {
        self.outln(&crate::event::sorted(v.clone()).to_string())
    }

    /// A JSON document, pretty-printed, on stdout (`--json` listings),
    /// its objects' keys sorted.
    pub fn json_pretty(&mut self, v: &impl serde::Serialize) -> std::io::Result<()> {
        let v = serde_json::to_value(v).map_err(std::io::Error::other)?;
        let text = serde_json::to_string_pretty(&crate::event::sorted(v))
            .map_err(std::io::Error::other)?;
        self.outln(&text)
    }

    /// A `--json` listing: a pretty-printed JSON array of `items`, written
    /// as they come through one 64 KB buffer, nothing collected first.
    /// Each item's keys come out in the order its `Serialize` gives them,
    /// so an item type declares its fields in alphabetical order (the
    /// order [`Printer::json_pretty`] sorts into): the same bytes, without
    /// a document in memory.
    pub fn json_array<T: serde::Serialize>(
        &mut self,
        items: impl Iterator<Item = T>,
    ) -> std::io::Result<()> {
        self.write_json_array(items, Layout::Pretty)
    }

    /// A `--json` listing on one line: what [`Printer::json_line`] writes
    /// for the array of `items`, written as they come
    /// ([`Printer::json_array`]: the same key order rule).
    pub fn json_array_line<T: serde::Serialize>(
        &mut self,
        items: impl Iterator<Item = T>,
    ) -> std::io::Result<()> {
        self.write_json_array(items, Layout::Line)
    }

    fn write_json_array<T: serde::Serialize>(
        &mut self,
        items: impl Iterator<Item = T>,
        layout: Layout,
    ) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, self.stdout.lock());
        let array = Streamed(std::cell::Cell::new(Some(items)));
        match layout {
            Layout::Pretty => serde_json::to_writer_pretty(&mut out, &array),
            Layout::Line => serde_json::to_writer(&mut out, &array),
        }
        .map_err(|e| match e.io_error_kind() {
            Some(kind) => std::io::Error::new(kind, e),
            None => std::io::Error::other(e),
        })?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// One `--json` event as a line on stdout.
    pub fn event(&mut self, ev: &Event<'_>) -> std::io::Result<()> {
        let line = ev.to_line().map_err(std::io::Error::other)?;
        self.outln(&line)
    }

    /// One JSON event of a task's child (with `task` = the task call's id).
    pub fn child_event(&mut self, ev: &Event<'_>, task: &str) -> std::io::Result<()> {
        let line = ev.to_child_line(task).map_err(std::io::Error::other)?;
        self.outln(&line)
    }

    /// The `error` event on stdout (`--json`); at most one reaches the exit
    /// path's fallback.
    pub fn json_error(&mut self, class: &str, message: &str) -> std::io::Result<()> {
        self.json_error_written = true;
        self.event(&Event::Error { class, message })
    }

    pub fn json_error_written(&self) -> bool {
        self.json_error_written
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.stdout.flush()
    }

    /// stdout as a writer, for data streamed by a lower crate
    /// (`sessions export` copies the file through it).
    pub fn stdout_writer(&mut self) -> impl Write + '_ {
        self.stdout.lock()
    }

    /// A diagnostic line on stderr.
    pub fn info(&self, s: &str) {
        eprintln!("{s}");
    }

    /// A warning on stderr.
    pub fn warn(&self, s: &str) {
        if self.stderr_color {
            eprintln!("\x1b[33mwarning:\x1b[0m {s}");
        } else {
            eprintln!("warning: {s}");
        }
    }

    /// An error and its causes as one line.
    pub fn error_message(err: &anyhow::Error) -> String {
        let mut msg = err.to_string();
        for cause in err.chain().skip(1) {
            let c = cause.to_string();
            if !msg.contains(&c) {
                msg.push_str(": ");
                msg.push_str(&c);
            }
        }
        msg
    }

    /// An error with its causes on stderr.
    pub fn error(&self, err: &anyhow::Error) {
        let msg = Self::error_message(err);
        if self.stderr_color {
            eprintln!("\x1b[31merror:\x1b[0m {msg}");
        } else {
            eprintln!("error: {msg}");
        }
    }

    /// A unified diff on stderr, coloured when colour is allowed.
    pub fn diff(&self, diff: &str) {
        eprint!("{}", paint_diff(diff, self.stderr_color));
    }

    /// Raw text on stderr (no newline added).
    pub fn err_raw(&self, s: &str) {
        eprint!("{s}");
    }

    /// Raw bytes on stderr, flushed (a command's output with `--json`).
    pub fn err_bytes(&self, b: &[u8]) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(b).and_then(|()| err.flush());
    }
}

/// Flushes stdout where no `Printer` is at hand (the Ctrl-C handler, just
/// before it exits). Errors are ignored: the process is ending.
pub fn flush_stdout() {
    let _ = std::io::stdout().flush();
}

/// A unified diff for the terminal: with `color`, added lines green,
/// removed lines red, hunk headers cyan. Ends with a newline.
pub fn paint_diff(diff: &str, color: bool) -> String {
    let mut out = String::with_capacity(diff.len() + 64);
    for line in diff.lines() {
        let code = match line.as_bytes().first() {
            _ if !color => None,
            Some(b'+') if !line.starts_with("+++") => Some("32"),
            Some(b'-') if !line.starts_with("---") => Some("31"),
            Some(b'@') => Some("36"),
            _ => None,
        };
        match code {
            Some(c) => out.push_str(&format!("\x1b[{c}m{line}\x1b[0m\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// How a streamed `--json` listing is laid out.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Pretty-printed ([`Printer::json_pretty`]'s layout).
    Pretty,
    /// One line ([`Printer::json_line`]'s).
    Line,
}

/// An iterator serialized as a JSON array, item by item (once: a second
/// serialization writes an empty array).
struct Streamed<I>(std::cell::Cell<Option<I>>);

impl<T: serde::Serialize, I: Iterator<Item = T>> serde::Serialize for Streamed<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.take().into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::paint_diff;

    #[test]
    fn diffs_are_coloured_only_when_allowed() {
        let d = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n";
        assert_eq!(paint_diff(d, false), d);
        let c = paint_diff(d, true);
        assert!(c.starts_with("--- a/x\n+++ b/x\n\x1b[36m@@"), "{c:?}");
        assert!(
            c.contains("\x1b[31m-old\x1b[0m\n\x1b[32m+new\x1b[0m\n"),
            "{c:?}"
        );
    }
}
