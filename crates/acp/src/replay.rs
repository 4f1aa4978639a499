//! `session/load`: the session's visible history as updates (what
//! rewinds left out is not shown), so the client draws the conversation
//! before the load is answered (docs/acp.md#loading-a-session). Each
//! `plan` call that succeeded is a `plan` update where it happened, and
//! the client ends with the session's current plan.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCall as AcpToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use eonyx_agent::{Agent, AgentError};
use eonyx_core::plan::WorkPlan;
use eonyx_core::timeline::Timeline;
use eonyx_core::{Content, Part, Record, Role, ToolName};

use crate::updates::{Updates, acp_plan, compaction_line, describe};

pub fn replay(agent: &Agent, updates: &mut Updates) -> Result<(), AgentError> {
    let log = agent.store().read_all(agent.session_id())?;
    let timeline = Timeline::from_rewinds(log.records.iter().filter_map(|r| match r {
        Record::Rewind(r) => Some(r),
        _ => None,
    }));
    let root = agent.project_root().to_path_buf();
    // Tool calls announced, by id, waiting for their result: the plan a
    // `plan` call sets.
    let mut open: HashMap<String, Option<WorkPlan>> = HashMap::new();
    // The plan the client has.
    let mut shown: Option<WorkPlan> = None;
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
                            let described = describe(call, &root);
                            let plan = (ToolName::parse(&call.name) == Some(ToolName::Plan))
                                .then(|| WorkPlan::from_args(&call.arguments).ok())
                                .flatten();
                            open.insert(call.id.clone(), plan);
                            updates.send(SessionUpdate::ToolCall(
                                AcpToolCall::new(call.id.clone(), described.title)
                                    .kind(described.kind)
                                    .status(ToolCallStatus::InProgress)
                                    .locations(described.locations)
                                    .raw_input(call.arguments.clone()),
                            ));
                        }
                    }
                    Role::Tool => {
                        let Some(id) = msg.tool_call_id.clone() else {
                            continue;
                        };
                        let Some(plan) = open.remove(&id) else {
                            continue;
                        };
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
                        if let Some(plan) = plan.filter(|_| !msg.is_error) {
                            updates.send(SessionUpdate::Plan(acp_plan(&plan)));
                            shown = Some(plan);
                        }
                    }
                }
            }
            Record::Compaction(c) => updates.text(compaction_line(c)),
            _ => {}
        }
    }
    // The current plan, when the history's last one is not it (a
    // compaction's pinned plan).
    if let Some(plan) = agent.plan()
        && shown.as_ref() != Some(&plan)
    {
        updates.send(SessionUpdate::Plan(acp_plan(&plan)));
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
