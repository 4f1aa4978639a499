//! Readable exports of a session (docs/sessions.md, section "Export and cost";
//! docs/session-format.md#readable-exports): the lossless JSONL (the file,
//! byte for byte), a Markdown transcript and one self-contained HTML page
//! with the chart of the context each request used. Both readable formats
//! render each record as it is read and then drop it (`model::entry`),
//! counting it in the `model::Session` whose header and chart are written
//! before the transcript; one module per format (`markdown`, `html`, with
//! the chart in `chart`).
//!
//! Invariant: export only reads the session (never its lock): a session in
//! use can be exported, and a torn or damaged line is skipped and counted,
//! never fatal.
//!
//! Invariant: the HTML page loads nothing (no script, stylesheet, image or
//! font from anywhere) and every text of the session goes through
//! `escape::escape`, into element content only (never an attribute value).

use std::io::Write;

use eonyx_core::SessionId;
use eonyx_core::record::{Record, SessionHeader};
use eonyx_store::{ReadStats, Store, StoreError};

mod chart;
mod date;
mod escape;
mod html;
mod markdown;
mod model;
mod out;

/// What `sessions export --format` and `/export` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The session file, byte for byte.
    Jsonl,
    Markdown,
    Html,
}

impl Format {
    /// Every format, by the name `--format` takes.
    pub const NAMES: [&'static str; 3] = ["jsonl", "markdown", "html"];

    /// The format named (`md` is `markdown`, `htm` is `html`).
    pub fn parse(name: &str) -> Option<Format> {
        match name.trim().to_ascii_lowercase().as_str() {
            "jsonl" => Some(Format::Jsonl),
            "markdown" | "md" => Some(Format::Markdown),
            "html" | "htm" => Some(Format::Html),
            _ => None,
        }
    }

    /// What `/export FILE` writes: HTML for a `.html`/`.htm` file, JSONL
    /// for `.jsonl`, else Markdown.
    pub fn for_path(path: &str) -> Format {
        let ext = path
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "html" | "htm" => Format::Html,
            "jsonl" => Format::Jsonl,
            _ => Format::Markdown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Markdown => "markdown",
            Format::Html => "html",
        }
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Markdown => "md",
            Format::Html => "html",
        }
    }
}

/// What the readable formats show beyond the file: the window and the
/// compaction trigger drawn on the chart, and the cost (children included).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The model's context window, when known.
    pub window: Option<u64>,
    /// Tokens at which an automatic compaction runs, when on.
    pub threshold: Option<u64>,
    /// What the session and its tasks cost; `None` without pricing.
    pub cost_usd: Option<f64>,
    /// For estimating a request whose usage was not reported.
    pub chars_per_token: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            window: None,
            threshold: None,
            cost_usd: None,
            chars_per_token: 4.0,
        }
    }
}

/// What becomes of what a readable export held (the transcript it buffered
/// while counting the totals the header shows), once it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Freed before [`export`] returns (a process that goes on: the REPL).
    Free,
    /// Left to the operating system: the process exits right after the
    /// export (`eonyx sessions export`), and freeing it would only delay
    /// the exit.
    AtExit,
}

/// What could not be exported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Bytes after the last complete line (a torn write).
    pub torn_tail_bytes: u64,
    /// Complete lines that are not a record.
    pub bad_lines: u64,
    /// Records of a type this version does not know.
    pub unknown_lines: u64,
}

impl Skipped {
    pub fn any(&self) -> bool {
        *self != Skipped::default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "session {id} cannot be exported as {format}: its first line is not a session header; `eonyx sessions doctor` checks it, and `--format jsonl` gives the file as it is"
    )]
    NoHeader { id: SessionId, format: &'static str },
    #[error("could not write the export of session {id}: {source}")]
    Write {
        id: SessionId,
        #[source]
        source: std::io::Error,
    },
}

/// Write session `id` to `out` as `format`. JSONL is the file byte for
/// byte; the readable formats render what can be read, with the
/// [`Options`] `opts` gives for the session's header, and say in the
/// returned [`Skipped`] what could not. `release` says whether what the
/// export held is freed or left to the process's exit.
pub fn export(
    store: &Store,
    id: &SessionId,
    format: Format,
    opts: &dyn Fn(&SessionHeader) -> Options,
    out: &mut dyn Write,
    release: Release,
) -> Result<Skipped, ExportError> {
    if format == Format::Jsonl {
        store.export(id, out)?;
        return Ok(Skipped::default());
    }
    // The transcript is rendered as the records are read, each dropped
    // once rendered; the header and the chart, which need the totals, are
    // written before it.
    let mut body = out::Out::kept();
    let (session, stats) = if format == Format::Markdown {
        transcript(store, id, &markdown::Markdown, opts, &mut body)?
    } else {
        let read = transcript(store, id, &html::Html, opts, &mut body)?;
        body.push_str(html::FOOT);
        read
    };
    let write_err = |source| ExportError::Write {
        id: id.clone(),
        source,
    };
    let body = body.text();
    let skipped = Skipped {
        torn_tail_bytes: stats.torn_tail_bytes,
        bad_lines: stats.bad_lines,
        unknown_lines: stats.unknown_lines,
    };
    let session = session.ok_or_else(|| ExportError::NoHeader {
        id: id.clone(),
        format: format.as_str(),
    })?;
    let mut text = out::Out::new(out);
    if format == Format::Markdown {
        markdown::head(&session, &mut text);
    } else {
        html::head(&session, &mut text);
    }
    text.write_text(&body);
    text.finish().map_err(write_err)?;
    if release == Release::AtExit {
        std::mem::forget(body);
        std::mem::forget(session);
    }
    Ok(skipped)
}

/// Session `id`'s transcript through `t` into `body`, record by record;
/// the session as read (`None` without a header) and what was skipped.
fn transcript(
    store: &Store,
    id: &SessionId,
    t: &impl model::Transcript,
    opts: &dyn Fn(&SessionHeader) -> Options,
    body: &mut out::Out<'_>,
) -> Result<(Option<model::Session>, ReadStats), StoreError> {
    let mut rewinds = model::Rewinds::default();
    store.read_lines(id, |line| rewinds.line(line))?;
    let mut timeline = Some(rewinds.timeline());
    let mut session: Option<model::Session> = None;
    let stats = store.read_each(id, |r| match &mut session {
        Some(s) => {
            s.before(&r);
            model::entry(s, body, t, &r);
            s.after(r);
        }
        // The first record only: the header, else there is none.
        None => {
            if let (Some(timeline), Record::Session(h)) = (timeline.take(), r) {
                let opts = opts(&h);
                session = Some(model::Session::new(h, opts, timeline));
            }
        }
    })?;
    Ok((session, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name_and_by_file_extension() {
        assert_eq!(Format::parse("Markdown"), Some(Format::Markdown));
        assert_eq!(Format::parse("md"), Some(Format::Markdown));
        assert_eq!(Format::parse("pdf"), None);
        assert_eq!(Format::for_path("out/s.HTML"), Format::Html);
        assert_eq!(Format::for_path("s.jsonl"), Format::Jsonl);
        assert_eq!(Format::for_path("notes"), Format::Markdown);
    }
}
