//! `@path` attachments and `--image` files (docs/repl.md, section "The REPL"):
//! finding the `@` words of a line, resolving and reading the files, and
//! the one user message they become. The agent asks about a path outside
//! the project root ([`crate::Agent::prepare_input`]); Tab completion of
//! the paths is [`complete`].
//!
//! A word is an attachment when it starts with `@` and more follows
//! (`@src/main.rs`, `@"a file.txt"`); `@` inside a word (`bob@example.com`,
//! `user@host`) is left alone, and `\@` is sent as a literal `@`. The typed
//! text is sent as typed; each file follows it in the same message, a text
//! file as an `Attached: <path>` block cut at `tools.output_cap_bytes`
//! (visibly), a png, jpeg, gif or webp image (told by its first bytes) as an
//! image part. Nothing is sent when a file is missing, unreadable, binary or
//! an image over `tools.max_image_bytes`.
//!
//! Invariant: no terminal I/O here; the frontend shows what was attached.

use std::io::Read;

use base64::Engine as _;
use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::message::human_bytes;
use eonyx_core::{Content, Part};

mod complete;

pub use complete::{Candidate, complete};

/// A line with its `@` words found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLine {
    /// The line to send: as typed, with each `\@` made `@`.
    pub text: String,
    /// The paths the `@` words name (without `@` and quotes), in order,
    /// each once.
    pub mentions: Vec<String>,
}

/// Find the `@` words of `line`.
pub fn parse_line(line: &str) -> ParsedLine {
    let mut text = String::with_capacity(line.len());
    let mut mentions: Vec<String> = Vec::new();
    let mut add = |m: String| {
        if !m.is_empty() && !mentions.contains(&m) {
            mentions.push(m);
        }
    };
    let mut rest = line;
    let mut at_word_start = true;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("\\@") {
            text.push('@');
            rest = after;
            at_word_start = false;
            continue;
        }
        if c == '@' && at_word_start {
            let after = &rest[1..];
            if let Some(quoted) = after.strip_prefix('"')
                && let Some(end) = quoted.find('"')
            {
                add(quoted[..end].to_owned());
                let len = 1 + 1 + end + 1;
                text.push_str(&rest[..len]);
                rest = &rest[len..];
                at_word_start = false;
                continue;
            }
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            if end > 0 {
                add(after[..end].to_owned());
            }
            text.push_str(&rest[..1 + end]);
            rest = &rest[1 + end..];
            at_word_start = false;
            continue;
        }
        text.push(c);
        rest = &rest[c.len_utf8()..];
        at_word_start = c.is_whitespace();
    }
    ParsedLine { text, mentions }
}

/// What attaching may read and how much.
#[derive(Debug, Clone)]
pub struct AttachLimits {
    /// `tools.output_cap_bytes`: a text file past it is cut, visibly.
    pub text_cap_bytes: u64,
    /// `tools.max_image_bytes`: a larger image is refused.
    pub max_image_bytes: u64,
}

/// A file found for an `@` word or `--image`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// As the user wrote it (trailing punctuation dropped when only the
    /// shorter path exists).
    pub shown: String,
    /// Absolute, `..` and symlinks resolved.
    pub path: Utf8PathBuf,
    /// Inside the project root.
    pub inside: bool,
}

/// One file ready to go with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    Text {
        shown: String,
        text: String,
        /// The file's size.
        bytes: u64,
        /// Bytes left out at the cap.
        cut: u64,
    },
    Image {
        shown: String,
        media_type: &'static str,
        /// Base64 of the file.
        data: String,
        bytes: u64,
    },
}

impl Attachment {
    pub fn shown(&self) -> &str {
        match self {
            Attachment::Text { shown, .. } | Attachment::Image { shown, .. } => shown,
        }
    }

    /// One line for the user: `src/main.rs (1 KB)`, `shot.png [image png 12 KB]`,
    /// `big.log (40 KB, cut to 16 KB)`.
    pub fn describe(&self) -> String {
        match self {
            Attachment::Text {
                shown, bytes, cut, ..
            } if *cut > 0 => format!(
                "{shown} ({}, cut to {} at tools.output_cap_bytes)",
                human_bytes(*bytes),
                human_bytes(bytes - cut)
            ),
            Attachment::Text { shown, bytes, .. } => format!("{shown} ({})", human_bytes(*bytes)),
            Attachment::Image {
                shown,
                media_type,
                bytes,
                ..
            } => format!(
                "{shown} [image {} {}]",
                media_type.trim_start_matches("image/"),
                human_bytes(*bytes)
            ),
        }
    }
}

/// Why a file cannot be attached. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "cannot attach @{shown}: no such file (relative to {cwd}); check the path (Tab completes it) or write \\@ for a literal @"
    )]
    Missing { shown: String, cwd: Utf8PathBuf },
    #[error("cannot attach @{shown}: it is a directory; attach the files in it")]
    Directory { shown: String },
    #[error("cannot read @{shown} ({path}): {source}")]
    Unreadable {
        shown: String,
        path: Utf8PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot attach @{shown}: it is a binary file; attach text files or png, jpeg, gif and webp images"
    )]
    Binary { shown: String },
    #[error("cannot attach {shown}: it is not a png, jpeg, gif or webp image")]
    NotAnImage { shown: String },
    #[error(
        "cannot attach {shown}: the image is {} ({bytes} bytes), over tools.max_image_bytes ({max} bytes); make it smaller or raise the limit",
        human_bytes(*bytes)
    )]
    ImageTooLarge { shown: String, bytes: u64, max: u64 },
    #[error(
        "cannot attach @{shown}: {path} is outside the project root, and only the REPL can ask about that; copy it into the project"
    )]
    Outside { shown: String, path: Utf8PathBuf },
    #[error("not sent: attaching {path} (outside the project) was not allowed")]
    Declined { path: Utf8PathBuf },
    /// A kind of content a client sent that no turn can carry (audio, an
    /// unknown block).
    #[error("cannot send {what}: eonyx takes text, files and images")]
    Unsupported { what: &'static str },
}

/// Find the file `raw` names: relative to `cwd` unless absolute, `~/` the
/// home directory. When `raw` does not exist but the word without its
/// trailing punctuation does (`@notes.md,`), that one.
pub fn locate(
    raw: &str,
    cwd: &Utf8Path,
    root: &Utf8Path,
    home: Option<&str>,
) -> Result<Located, AttachError> {
    let trimmed = raw.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"']);
    for candidate in [raw, trimmed] {
        if candidate.is_empty() {
            continue;
        }
        let joined = match (candidate.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => Utf8PathBuf::from(h).join(rest),
            _ => cwd.join(candidate),
        };
        let Ok(path) = joined.canonicalize_utf8() else {
            continue;
        };
        let root = root
            .canonicalize_utf8()
            .unwrap_or_else(|_| root.to_path_buf());
        return Ok(Located {
            shown: candidate.to_owned(),
            inside: path.starts_with(&root),
            path,
        });
    }
    Err(AttachError::Missing {
        shown: raw.to_owned(),
        cwd: cwd.to_path_buf(),
    })
}

/// The media type of an image by its first bytes: png, jpeg, gif, webp.
pub fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// What a file may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// Text or an image (`@path`).
    Any,
    /// Only an image (`--image`).
    Images,
}

/// Read a located file: an image (by its bytes) or text (cut at the cap);
/// with [`Accept::Images`] anything that is not an image is refused.
pub fn read(
    file: &Located,
    limits: &AttachLimits,
    accept: Accept,
) -> Result<Attachment, AttachError> {
    let shown = file.shown.clone();
    let unreadable = |source| AttachError::Unreadable {
        shown: shown.clone(),
        path: file.path.clone(),
        source,
    };
    let meta = file.path.metadata().map_err(unreadable)?;
    if meta.is_dir() {
        return Err(AttachError::Directory { shown });
    }
    let bytes = meta.len();
    let mut f = std::fs::File::open(&file.path).map_err(unreadable)?;
    let mut head = Vec::with_capacity(16);
    (&mut f)
        .take(16)
        .read_to_end(&mut head)
        .map_err(unreadable)?;
    if let Some(media_type) = image_type(&head) {
        if bytes > limits.max_image_bytes {
            return Err(AttachError::ImageTooLarge {
                shown,
                bytes,
                max: limits.max_image_bytes,
            });
        }
        let mut all = head;
        f.read_to_end(&mut all).map_err(unreadable)?;
        return Ok(Attachment::Image {
            shown,
            media_type,
            data: base64::engine::general_purpose::STANDARD.encode(&all),
            bytes: all.len() as u64,
        });
    }
    if accept == Accept::Images {
        return Err(AttachError::NotAnImage { shown });
    }
    let cap = limits.text_cap_bytes;
    let mut kept = head;
    (&mut f)
        .take(cap.saturating_sub(kept.len() as u64))
        .read_to_end(&mut kept)
        .map_err(unreadable)?;
    kept.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    if kept.contains(&0) {
        return Err(AttachError::Binary { shown });
    }
    let cut = bytes.saturating_sub(kept.len() as u64);
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if cut > 0 && text.ends_with('\u{fffd}') {
        // The cap fell inside a character.
        text.pop();
    }
    Ok(Attachment::Text {
        shown,
        text,
        bytes,
        cut,
    })
}

/// The user message for `text` with `attachments`: the typed text, then an
/// `Attached: <path>` block per text file, as one text (a plain string when
/// there are no images), then one image part per image.
pub fn content(text: &str, attachments: &[Attachment]) -> Content {
    let mut out = text.to_owned();
    let mut images = Vec::new();
    for a in attachments {
        match a {
            Attachment::Text {
                shown,
                text,
                bytes,
                cut,
            } => {
                out.push_str(&format!("\n\nAttached: {shown}\n{text}"));
                if *cut > 0 {
                    if !out.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str(&format!(
                        "[attachment cut: {cut} of {bytes} bytes of {shown} left out (tools.output_cap_bytes); read the file for the rest]"
                    ));
                }
            }
            Attachment::Image {
                shown,
                media_type,
                data,
                bytes,
            } => {
                out.push_str(&format!(
                    "\n\nAttached: {shown} ({media_type}, {})",
                    human_bytes(*bytes)
                ));
                images.push(Part::Image {
                    media_type: Some((*media_type).to_owned()),
                    data: Some(data.clone()),
                    url: None,
                });
            }
        }
    }
    if images.is_empty() {
        return Content::Text(out);
    }
    let mut parts = vec![Part::Text { text: out }];
    parts.extend(images);
    Content::Parts(parts)
}

#[cfg(test)]
mod tests;
