//! `session/load`: the session's visible history as updates (what
//! rewinds left out is not shown), so the client draws the conversation
//! before the load is answered (docs/acp.md#loading-a-session).

use std::collections::HashSet;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCall as AcpToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use eonyx_agent::{Agent, AgentError};
use eonyx_core::timeline::Timeline;
use eonyx_core::{Content, Part, Record, Role};

use crate::updates::{Updates, compaction_line, describe};

pub fn replay(agent: &Agent, updates: &mut Updates) -> Result<(), AgentError> {
    let log = agent.store().read_all(agent.session_id())?;
    let timeline = Timeline::from_rewinds(log.records.iter().filter_map(|r| match r {
        Record::Rewind(r) => Some(r),
        _ => None,
    }));
    let root = agent.project_root().to_path_buf();
    // Tool calls announced, by id, waiting for their result.
    let mut open: HashSet<String> = HashSet::new();
    for record in &log.records {
        if record.seq().is_some_and(|s| timeline.is_rewound(s)) {
            continue;
        }
        match record {
            Record::Message(m) => {
                let msg = &m.message;
                match msg.role {
                    Role::User => {
                        for block in blocks(&msg.content) {
                            updates.send(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                        }
                    }
                    Role::Assistant => {
                        for r in &msg.reasoning {
                            let thought = r.readable();
                            if !thought.is_empty() {
                                updates.send(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                                    ContentBlock::from(thought),
                                )));
                            }
                        }
                        let text = msg.content.text();
                        if !text.is_empty() {
                            updates.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                                ContentBlock::from(text),
                            )));
                        }
                        for call in &msg.tool_calls {
                            let shown = describe(call, &root);
                            open.insert(call.id.clone());
                            updates.send(SessionUpdate::ToolCall(
                                AcpToolCall::new(call.id.clone(), shown.title)
                                    .kind(shown.kind)
                                    .status(ToolCallStatus::InProgress)
                                    .locations(shown.locations)
                                    .raw_input(call.arguments.clone()),
                            ));
                        }
                    }
                    Role::Tool => {
                        let Some(id) = msg.tool_call_id.clone() else {
                            continue;
                        };
                        if !open.remove(&id) {
                            continue;
                        }
                        let status = if msg.is_error {
                            ToolCallStatus::Failed
                        } else {
                            ToolCallStatus::Completed
                        };
                        let text = eonyx_core::text::ellipsize(&msg.content.text(), 8_000);
                        updates.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            id,
                            ToolCallUpdateFields::new()
                                .status(status)
                                .content(vec![ToolCallContent::from(text)]),
                        )));
                    }
                }
            }
            Record::Compaction(c) => updates.text(compaction_line(c)),
            _ => {}
        }
    }
    Ok(())
}

/// A user message as content blocks: its text, its images.
fn blocks(content: &Content) -> Vec<ContentBlock> {
    match content {
        Content::Text(t) => vec![ContentBlock::from(t.clone())],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(ContentBlock::from(text.clone())),
                Part::Image {
                    media_type: Some(m),
                    data: Some(d),
                    ..
                } => Some(ContentBlock::Image(
                    agent_client_protocol::v1::schema::ImageContent::new(d.clone(), m.clone()),
                )),
                Part::Image { .. } => p.image_label().map(ContentBlock::from),
            })
            .collect(),
    }
}
