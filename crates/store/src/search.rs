//! Case-insensitive search over message text. The raw bytes of a session
//! file are scanned for the text first (serde_json writes text verbatim
//! unless it needs escaping), and only lines with a hit are parsed to check
//! that the hit lies in a message's text, not in a key, id or path.

use std::fs::File;

use camino::Utf8Path;
use eonyx_core::record::{ParsedLine, Record};
use regex::bytes::Regex;

use crate::lines::{ForwardChunks, for_each_line};

pub(crate) struct Matcher {
    re: Option<Regex>,
    /// Lowercased text, for when no regex could be built.
    lower: String,
    /// The text looks the same inside a JSON string, so raw bytes can be
    /// scanned for it.
    raw_ok: bool,
}

impl Matcher {
    pub fn new(text: &str) -> Matcher {
        let pattern = format!("(?i){}", regex::escape(text));
        // An escaped literal only fails to build past the size limit (a
        // huge search text); then lines are parsed and compared lowercased.
        let re = regex::bytes::RegexBuilder::new(&pattern)
            .size_limit(64 * 1024 * 1024)
            .build()
            .ok();
        let raw_ok = re.is_some()
            && !text
                .chars()
                .any(|c| c == '"' || c == '\\' || c.is_control());
        Matcher {
            re,
            lower: text.to_lowercase(),
            raw_ok,
        }
    }

    pub fn matches_str(&self, s: &str) -> bool {
        match &self.re {
            Some(re) => re.is_match(s.as_bytes()),
            None => s.to_lowercase().contains(&self.lower),
        }
    }

    fn line_matches(&self, line: &[u8]) -> bool {
        match Record::parse_line(line) {
            Ok(ParsedLine::Record(r)) => match *r {
                Record::Message(m) => self.matches_str(&m.message.content.text()),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether any message in the file's complete lines contains the text.
    pub fn file_matches(&self, path: &Utf8Path) -> std::io::Result<bool> {
        let file = File::open(path)?;
        let re = match &self.re {
            Some(re) if self.raw_ok => re,
            _ => {
                let mut found = false;
                for_each_line(file, 0, |_, line| {
                    found = self.line_matches(line);
                    !found
                })?;
                return Ok(found);
            }
        };
        let mut chunks = ForwardChunks::new(file, 0);
        while let Some((_, chunk)) = chunks.next_chunk()? {
            let mut pos = 0;
            while let Some(m) = re.find_at(chunk, pos) {
                let ls = memchr::memrchr(b'\n', &chunk[..m.start()]).map_or(0, |i| i + 1);
                let le =
                    memchr::memchr(b'\n', &chunk[m.end()..]).map_or(chunk.len(), |i| m.end() + i);
                if self.line_matches(&chunk[ls..le]) {
                    return Ok(true);
                }
                pos = le + 1;
                if pos >= chunk.len() {
                    break;
                }
            }
        }
        Ok(false)
    }
}
