//! `recall`: exact earlier messages from the session file (docs/tools.md#recall).
//!
//! The model gets back, verbatim, what compaction summarized away (scope
//! `session`, the default, which includes the session's child sessions:
//! what its tasks read and said) or what earlier sessions of this project
//! and their children said (scope `project`). Messages the current request already carries are
//! left out. A short message is shown whole; a long one as windows of lines
//! around each hit, so one result never floods the context.

use camino::Utf8PathBuf;
use eonyx_core::{SessionId, ToolName};
use eonyx_store::{RecallHit, RecallOptions, RecallQuery, Store};
use serde::Deserialize;
use serde_json::Value;

use super::{Count, ToolContext, ToolError, ToolEvent, ToolOutput, blocking, parse_args};
use eonyx_core::provider::CancellationToken;

/// Default number of messages returned.
pub const DEFAULT_LIMIT: usize = 5;
/// Most messages one call may ask for.
pub const MAX_LIMIT: usize = 50;
/// A message longer than this many characters is shown as windows.
const WHOLE_MAX_CHARS: usize = 2000;
/// Lines shown before and after a hit line.
const WINDOW_CONTEXT: usize = 2;
/// At most this many windows per message.
const MAX_WINDOWS: usize = 6;
/// A window line longer than this is cut.
const MAX_LINE_CHARS: usize = 400;

/// Where `recall` looks: set by the agent before each tool step.
#[derive(Debug, Clone)]
pub struct RecallSource {
    pub store: Store,
    /// The current session.
    pub session: SessionId,
    /// The project root; scope `project` searches its sessions.
    pub project: Utf8PathBuf,
    /// Messages of the current session from this seq on are in the current
    /// request, so they are not returned.
    pub in_request_from: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default)]
    scope: Scope,
    limit: Option<Count>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Scope {
    #[default]
    Session,
    Project,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Project => "project",
        }
    }
}

pub(super) async fn run(
    args: &Value,
    ctx: &ToolContext,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::Recall, args)?;
    let Some(source) = ctx.recall.clone() else {
        return Err(ToolError::Usage(
            "recall is turned off for this session (tools.recall = false)".into(),
        ));
    };
    let Some(query) = RecallQuery::parse(&args.query) else {
        return Err(ToolError::Usage(
            "the query is empty; give words (all must match) or \"quoted phrases\"".into(),
        ));
    };
    let limit = args
        .limit
        .map_or(DEFAULT_LIMIT, |c| c.get() as usize)
        .clamp(1, MAX_LIMIT);
    let scope = args.scope;
    let raw_query = args.query.clone();
    blocking(cancel, move || {
        search(&source, &query, &raw_query, scope, limit)
    })
    .await
}

fn search(
    source: &RecallSource,
    query: &RecallQuery,
    raw_query: &str,
    scope: Scope,
    limit: usize,
) -> Result<ToolOutput, ToolError> {
    let sessions: Vec<SessionId> = match scope {
        Scope::Session => {
            let below = source
                .store
                .descendants(&source.session)
                .map_err(|e| ToolError::Usage(format!("cannot list sessions: {e}")))?;
            std::iter::once(source.session.clone())
                .chain(below.into_iter().map(|s| s.id))
                .collect()
        }
        Scope::Project => {
            let listed = source
                .store
                .list()
                .map_err(|e| ToolError::Usage(format!("cannot list sessions: {e}")))?;
            listed
                .into_iter()
                .filter(|s| s.project == source.project.as_str())
                .map(|s| s.id)
                .collect()
        }
    };
    let result = source
        .store
        .recall(
            query,
            &RecallOptions {
                sessions: &sessions,
                exclude_from: Some((&source.session, source.in_request_from)),
                limit,
            },
        )
        .map_err(|e| ToolError::Usage(format!("cannot search the session files: {e}")))?;

    let shown = result.hits.len() as u64;
    let more = result.total - shown;
    let mut text = format!(
        "recall: {} {} for {raw_query:?} in {}",
        result.total,
        if result.total == 1 {
            "match"
        } else {
            "matches"
        },
        match scope {
            Scope::Session => "this session's earlier messages and its tasks",
            Scope::Project => "this project's sessions and their tasks",
        }
    );
    if more > 0 {
        text.push_str(&format!(
            " (newest {shown} shown, {more} more; narrow the query or raise limit)"
        ));
    }
    text.push('\n');
    for hit in &result.hits {
        text.push('\n');
        render_hit(&mut text, hit, query);
    }
    let mut out = ToolOutput::ok(text);
    out.event = Some(ToolEvent::Recall {
        query: raw_query.to_owned(),
        scope: scope.as_str(),
        matches: result.total,
        returned: shown,
    });
    Ok(out)
}

fn render_hit(out: &mut String, hit: &RecallHit, query: &RecallQuery) {
    let rec = &hit.record;
    let msg_text = RecallQuery::haystack(rec);
    out.push_str(&format!(
        "[session {} · seq {} · {} · {}{}]\n",
        hit.session,
        rec.seq,
        rec.message.role.as_str(),
        rec.ts,
        if hit.rewound {
            " · rewound: left out of the conversation by /rewind"
        } else {
            ""
        }
    ));
    if msg_text.chars().count() <= WHOLE_MAX_CHARS {
        out.push_str(&msg_text);
        if !msg_text.ends_with('\n') {
            out.push('\n');
        }
        return;
    }
    let lines: Vec<&str> = msg_text.lines().collect();
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_lowercase();
        if !query.terms().iter().any(|t| lower.contains(t.as_str())) {
            continue;
        }
        let (s, e) = (
            i.saturating_sub(WINDOW_CONTEXT),
            (i + WINDOW_CONTEXT).min(lines.len() - 1),
        );
        match windows.last_mut() {
            Some(last) if s <= last.1 + 1 => last.1 = e,
            _ => windows.push((s, e)),
        }
    }
    let total_windows = windows.len();
    out.push_str(&format!(
        "({} lines, {} characters; lines around each hit)\n",
        lines.len(),
        msg_text.chars().count()
    ));
    for (s, e) in windows.iter().take(MAX_WINDOWS) {
        out.push_str(&format!("lines {}-{}:\n", s + 1, e + 1));
        for line in &lines[*s..=*e] {
            out.push_str(&eonyx_core::text::ellipsize(line, MAX_LINE_CHARS));
            out.push('\n');
        }
    }
    if total_windows > MAX_WINDOWS {
        out.push_str(&format!(
            "… {} more places in this message\n",
            total_windows - MAX_WINDOWS
        ));
    }
    if total_windows == 0 {
        // The words matched across lines (a phrase spanning a break).
        out.push_str(&eonyx_core::text::ellipsize(&msg_text, WHOLE_MAX_CHARS));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::{Message, MessageRecord};

    fn hit(text: String) -> RecallHit {
        RecallHit {
            session: SessionId::parse("20260705T091500-1a2b3c4d").unwrap(),
            record: MessageRecord {
                seq: 42,
                ts: "2026-07-05T09:15:00Z".into(),
                message: Message::tool_result("call_1", text),
            },
            rewound: false,
        }
    }

    #[test]
    fn a_short_message_is_shown_whole_under_its_header() {
        let q = RecallQuery::parse("needle").unwrap();
        let mut out = String::new();
        render_hit(&mut out, &hit("a needle\nin two lines".into()), &q);
        assert_eq!(
            out,
            "[session 20260705T091500-1a2b3c4d · seq 42 · tool · 2026-07-05T09:15:00Z]\na needle\nin two lines\n"
        );
    }

    #[test]
    fn a_long_message_is_shown_as_windows_around_each_hit() {
        let lines: Vec<String> = (1..=400)
            .map(|n| {
                if n == 100 || n == 102 || n == 300 {
                    format!("line {n} has the Needle")
                } else {
                    format!("line {n} is filler text")
                }
            })
            .collect();
        let q = RecallQuery::parse("needle").unwrap();
        let mut out = String::new();
        render_hit(&mut out, &hit(lines.join("\n")), &q);
        assert!(out.contains("(400 lines, "), "{out}");
        // Hits two lines apart share one window; the third has its own.
        assert!(
            out.contains("lines 98-104:\nline 98 is filler text\n"),
            "{out}"
        );
        assert!(out.contains("lines 298-302:\n"), "{out}");
        assert!(!out.contains("line 97 "), "{out}");
        assert!(!out.contains("line 200 "), "{out}");
    }
}
