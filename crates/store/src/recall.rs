//! Recall: the messages of one or more session files that match a query,
//! exactly as stored (docs/tools.md#recall).
//!
//! A query is plain words, all of which must occur (case-insensitive), and
//! `"quoted phrases"`, which must occur as written (also case-insensitive).
//! The file is scanned as raw bytes for the query's longest term first, the
//! same way session search runs, and only lines with a hit are parsed; so
//! recall costs about what `eonyx sessions --search` costs on the same file
//! and never holds more than `limit` messages in memory.
//!
//! Earlier `recall` calls are never found again: their results are copies
//! of messages recall already searches (a broad query would otherwise fill
//! its limit with them, and their quoted hits would count as new ones). A
//! tool message answering a `recall` call is skipped, and an assistant
//! message is matched without its `recall` calls' arguments.
//!
//! Invariant: recall never writes; it reads complete lines only (a torn tail
//! is ignored) and never fails on a damaged line.

use std::collections::{HashMap, VecDeque};
use std::fs::File;

use camino::Utf8Path;
use eonyx_core::record::{ParsedLine, Record, RewindRecord};
use eonyx_core::timeline::Timeline;
use eonyx_core::{MessageRecord, Role, SessionId, ToolName};
use regex::bytes::Regex;

use crate::lines::ForwardChunks;
use crate::{Store, StoreError};

/// A parsed recall query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallQuery {
    /// Lowercased words and phrases; every one must match.
    terms: Vec<String>,
}

impl RecallQuery {
    /// Splits `text` into words and `"quoted phrases"`. An unterminated
    /// quote runs to the end of the text. Returns `None` when nothing is
    /// left to search for.
    pub fn parse(text: &str) -> Option<RecallQuery> {
        let mut terms = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
            rest = &rest[start..];
            if let Some(after) = rest.strip_prefix('"') {
                let end = after.find('"').unwrap_or(after.len());
                let phrase = after[..end].trim();
                if !phrase.is_empty() {
                    terms.push(phrase.to_lowercase());
                }
                rest = after.get(end + 1..).unwrap_or("");
            } else {
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '"')
                    .unwrap_or(rest.len());
                terms.push(rest[..end].to_lowercase());
                rest = &rest[end..];
            }
        }
        terms.dedup();
        (!terms.is_empty()).then_some(RecallQuery { terms })
    }

    /// The words and phrases, lowercased.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Whether every term occurs in `text` (case-insensitive).
    pub fn matches(&self, text: &str) -> bool {
        let lower = text.to_lowercase();
        self.terms.iter().all(|t| lower.contains(t.as_str()))
    }

    /// The searchable text of a message: its text, and for an assistant
    /// message the names and arguments of its tool calls, `recall` calls
    /// left out (their arguments only repeat an earlier query).
    pub fn haystack(record: &MessageRecord) -> String {
        let mut text = record.message.content.text();
        for call in &record.message.tool_calls {
            if ToolName::parse(&call.name) == Some(ToolName::Recall) {
                continue;
            }
            text.push('\n');
            text.push_str(&call.name);
            text.push(' ');
            text.push_str(&call.arguments_json());
        }
        text
    }

    /// A byte regex for the longest term, when scanning raw JSON lines for
    /// it is exact enough to pre-filter (the term looks the same inside a
    /// JSON string).
    fn prefilter(&self) -> Option<Regex> {
        let longest = self.terms.iter().max_by_key(|t| t.len())?;
        if longest
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control() || !c.is_ascii())
        {
            // Non-ASCII text may be escaped by other writers; parse instead.
            return None;
        }
        regex::bytes::RegexBuilder::new(&format!("(?i){}", regex::escape(longest)))
            .size_limit(64 * 1024 * 1024)
            .build()
            .ok()
    }
}

/// One matching message.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    pub session: SessionId,
    pub record: MessageRecord,
    /// A rewind left it out of the session's history
    /// (docs/session-format.md#rewind-records).
    pub rewound: bool,
}

/// What [`Store::recall`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecallResult {
    /// At most `limit` hits, newest first (by session, then by `seq`).
    pub hits: Vec<RecallHit>,
    /// Every match, including those past `limit`.
    pub total: u64,
}

/// Where and how much to search.
#[derive(Debug, Clone)]
pub struct RecallOptions<'a> {
    /// Sessions to search, in the order their hits should come (newest
    /// first).
    pub sessions: &'a [SessionId],
    /// Messages of this session from this `seq` on are left out (the model
    /// has them in its current request), unless a rewind left them out of
    /// the history (they are not in the request then).
    pub exclude_from: Option<(&'a SessionId, u64)>,
    pub limit: usize,
}

impl Store {
    /// Messages matching `query` in `opts.sessions`, newest first, at most
    /// `opts.limit`, with the count of all matches. A session that is gone
    /// or unreadable is skipped.
    pub fn recall(
        &self,
        query: &RecallQuery,
        opts: &RecallOptions<'_>,
    ) -> Result<RecallResult, StoreError> {
        let mut out = RecallResult::default();
        let prefilter = query.prefilter();
        for id in opts.sessions {
            let skip_from = match opts.exclude_from {
                Some((cur, seq)) if cur == id => seq,
                _ => u64::MAX,
            };
            let path = self.session_path(id);
            let room = opts.limit.saturating_sub(out.hits.len());
            let (found, count) = match scan_file(&path, query, prefilter.as_ref(), skip_from, room)
            {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::io("read", path)(e)),
            };
            out.total += count;
            out.hits
                .extend(found.into_iter().rev().map(|(record, rewound)| RecallHit {
                    session: id.clone(),
                    record,
                    rewound,
                }));
        }
        Ok(out)
    }
}

/// The last `keep` matching messages of a file (file order, each with
/// whether it is rewound) and the number of all matches.
fn scan_file(
    path: &Utf8Path,
    query: &RecallQuery,
    prefilter: Option<&Regex>,
    skip_from: u64,
    keep: usize,
) -> std::io::Result<(VecDeque<(MessageRecord, bool)>, u64)> {
    let file = File::open(path)?;
    // Matches before `skip_from` (the last `keep`), and from it on: those
    // are left out unless a rewind (found later in the file) left them
    // out of the history, so they wait for the end of the file.
    let mut kept: VecDeque<MessageRecord> = VecDeque::new();
    let mut count = 0u64;
    let mut pending: Vec<MessageRecord> = Vec::new();
    let mut rewinds: Vec<RewindRecord> = Vec::new();
    let mut recalls = RecallCalls::default();
    let mut consider = |line: &[u8], recalls: &RecallCalls| {
        if let Some(rec) = matching_message(line, query, recalls) {
            if rec.seq >= skip_from {
                pending.push(rec);
                return;
            }
            count += 1;
            if keep > 0 {
                if kept.len() == keep {
                    kept.pop_front();
                }
                kept.push_back(rec);
            }
        }
    };
    let rewind_line = memchr::memmem::Finder::new(br#"{"type":"rewind""#);
    let mut chunks = ForwardChunks::new(file, 0);
    let needle = RecallCalls::needle();
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    while let Some((_, chunk)) = chunks.next_chunk()? {
        for at in rewind_line.find_iter(chunk) {
            if at == 0 || chunk[at - 1] == b'\n' {
                let end = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i);
                if let Ok(ParsedLine::Record(r)) = Record::parse_line(&chunk[at..end])
                    && let Record::Rewind(r) = *r
                {
                    rewinds.push(r);
                }
            }
        }
        // The calls first: a result follows its call, maybe in this chunk.
        recalls.collect(chunk, &finder);
        match prefilter {
            Some(re) => {
                let mut pos = 0;
                while let Some(m) = re.find_at(chunk, pos) {
                    let ls = memchr::memrchr(b'\n', &chunk[..m.start()]).map_or(0, |i| i + 1);
                    let le = memchr::memchr(b'\n', &chunk[m.end()..])
                        .map_or(chunk.len(), |i| m.end() + i);
                    consider(&chunk[ls..le], &recalls);
                    pos = le + 1;
                    if pos >= chunk.len() {
                        break;
                    }
                }
            }
            None => {
                for line in chunk.split(|b| *b == b'\n') {
                    if !line.is_empty() {
                        consider(line, &recalls);
                    }
                }
            }
        }
    }
    let timeline = Timeline::from_rewinds(&rewinds);
    let mut out: VecDeque<(MessageRecord, bool)> = kept
        .into_iter()
        .map(|m| {
            let rewound = timeline.is_rewound(m.seq);
            (m, rewound)
        })
        .collect();
    for m in pending {
        if timeline.is_rewound(m.seq) {
            count += 1;
            if keep > 0 {
                if out.len() == keep {
                    out.pop_front();
                }
                out.push_back((m, true));
            }
        }
    }
    Ok((out, count))
}

fn matching_message(
    line: &[u8],
    query: &RecallQuery,
    recalls: &RecallCalls,
) -> Option<MessageRecord> {
    match Record::parse_line(line) {
        Ok(ParsedLine::Record(r)) => match *r {
            Record::Message(m)
                if !recalls.answers(&m) && query.matches(&RecallQuery::haystack(&m)) =>
            {
                Some(m)
            }
            _ => None,
        },
        _ => None,
    }
}

/// The `recall` calls of one session file seen so far: call id → the seq
/// of the assistant message that made it and how many calls that message
/// made. Its results are the next messages (the agent appends them right
/// after the call, and a compaction never falls inside a tool exchange), so
/// a tool message answers a recall call when its id matches and its seq is
/// within that range: a later call that reuses the id is not mistaken for
/// one.
#[derive(Debug, Default)]
struct RecallCalls(HashMap<String, (u64, u64)>);

impl RecallCalls {
    /// What every line holding a `recall` call contains, as the store
    /// writes tool calls (`{"id":…,"name":"recall",…}`).
    fn needle() -> String {
        format!("\"name\":\"{}\"", ToolName::Recall.as_str())
    }

    /// Record the recall calls of the assistant messages in `chunk`.
    fn collect(&mut self, chunk: &[u8], finder: &memchr::memmem::Finder<'_>) {
        let mut pos = 0;
        while let Some(i) = finder.find(&chunk[pos..]) {
            let at = pos + i;
            let ls = memchr::memrchr(b'\n', &chunk[..at]).map_or(0, |i| i + 1);
            let le = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i);
            if let Ok(ParsedLine::Record(r)) = Record::parse_line(&chunk[ls..le])
                && let Record::Message(m) = *r
                && m.message.role == Role::Assistant
            {
                let n = m.message.tool_calls.len() as u64;
                for call in &m.message.tool_calls {
                    if ToolName::parse(&call.name) == Some(ToolName::Recall) {
                        self.0.insert(call.id.clone(), (m.seq, n));
                    }
                }
            }
            pos = le + 1;
            if pos >= chunk.len() {
                break;
            }
        }
    }

    /// Whether `m` is the result of a recall call.
    fn answers(&self, m: &MessageRecord) -> bool {
        m.message.role == Role::Tool
            && m.message
                .tool_call_id
                .as_ref()
                .and_then(|id| self.0.get(id))
                .is_some_and(|&(call_seq, calls)| m.seq > call_seq && m.seq <= call_seq + calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_phrases_are_parsed() {
        let q = RecallQuery::parse(r#"  Deploy "Blue Green"  prod "unterminated tail"#).unwrap();
        assert_eq!(
            q.terms(),
            ["deploy", "blue green", "prod", "unterminated tail"]
        );
        assert!(RecallQuery::parse("   ").is_none());
        assert!(RecallQuery::parse(r#""""#).is_none());
    }

    #[test]
    fn every_term_must_match_case_insensitively() {
        let q = RecallQuery::parse(r#"port "Blue green""#).unwrap();
        assert!(q.matches("the PORT is 8443 on blue GREEN"));
        assert!(!q.matches("the port is 8443 on blue/green"));
        assert!(!q.matches("blue green only"));
    }

    #[test]
    fn prefilter_is_skipped_for_text_json_may_escape() {
        assert!(RecallQuery::parse("plain").unwrap().prefilter().is_some());
        assert!(RecallQuery::parse("naïve").unwrap().prefilter().is_none());
        assert!(
            RecallQuery::parse(r"back\slash")
                .unwrap()
                .prefilter()
                .is_none()
        );
    }
}
