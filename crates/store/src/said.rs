//! The user messages of a session's timeline before a `seq`, read for a
//! compaction's `## What the user said` (docs/compaction.md#what-the-user-said).
//! The file is read forward once, but only user-message and rewind lines
//! are parsed (told by their first bytes, as eonyx writes them): tool
//! output, the bulk of a long session, is scanned, never decoded.

use eonyx_core::record::{ParsedLine, Record};
use eonyx_core::timeline::Timeline;
use eonyx_core::{MessageRecord, Role, SessionId};

use crate::lines::for_each_line;
use crate::{Store, StoreError};

/// How far into a line its `"role"` is looked for: past `type`, `seq` and
/// `ts`, as eonyx writes message lines.
const ROLE_WITHIN: usize = 160;

/// Whether `line` may be a user message (a false yes is parsed and
/// dropped; eonyx's own lines never get a false no).
fn maybe_user(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"message""#)
        && memchr::memmem::find(&line[..line.len().min(ROLE_WITHIN)], br#""role":"user""#).is_some()
}

impl Store {
    /// The user messages with a `seq` below `before` on the session's
    /// timeline (nothing a rewind left out), oldest first.
    pub fn user_messages_before(
        &self,
        id: &SessionId,
        before: u64,
    ) -> Result<Vec<MessageRecord>, StoreError> {
        let path = self.session_path(id);
        let file = self.open_existing(id)?;
        let mut rewinds = Vec::new();
        let mut users = Vec::new();
        for_each_line(file, 0, |_, line| {
            let wanted = maybe_user(line) || line.starts_with(br#"{"type":"rewind""#);
            if wanted && let Ok(ParsedLine::Record(r)) = Record::parse_line(line) {
                match *r {
                    Record::Message(m) if m.message.role == Role::User && m.seq < before => {
                        users.push(m)
                    }
                    Record::Rewind(r) => rewinds.push(r),
                    _ => {}
                }
            }
            true
        })
        .map_err(StoreError::io("read session file", &path))?;
        let timeline = Timeline::from_rewinds(&rewinds);
        users.retain(|m| !timeline.is_rewound(m.seq));
        Ok(users)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::Message;

    #[test]
    fn only_user_lines_are_picked_however_they_are_written() {
        let user = Record::Message(MessageRecord {
            seq: 3,
            ts: "2026-12-07T01:52:14.123456789Z".into(),
            message: Message::user("hi"),
        })
        .to_line();
        assert!(maybe_user(user.as_bytes()));
        let tool = Record::Message(MessageRecord {
            seq: 4,
            ts: "2026-12-07T01:52:14.123456789Z".into(),
            message: Message::tool_result("c1", "\"role\":\"user\""),
        })
        .to_line();
        assert!(!maybe_user(tool.as_bytes()));
    }
}
