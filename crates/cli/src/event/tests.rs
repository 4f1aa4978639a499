//! Each event's line: its `type`, its fields under their documented
//! names, keys sorted; a task child's event with its `task`.

use super::*;

fn line(ev: Event<'_>) -> String {
    ev.to_line().unwrap()
}

#[test]
fn events_render_with_their_type_and_sorted_keys() {
    assert_eq!(
        line(Event::Session {
            id: "20260101-000000-abcd",
            title: "1",
            resumed: false,
            messages: 0
        }),
        r#"{"id":"20260101-000000-abcd","messages":0,"resumed":false,"title":"1","type":"session"}"#
    );
    let args = serde_json::json!({"path": "a", "limit": 3});
    assert_eq!(
        line(Event::ToolCall {
            id: "c1",
            name: "read_file",
            arguments: &args
        }),
        r#"{"arguments":{"limit":3,"path":"a"},"id":"c1","name":"read_file","type":"tool_call"}"#
    );
    assert_eq!(
        line(Event::Compaction {
            trigger: CompactionTrigger::Auto,
            tokens_before: 900,
            tokens_after: 120,
            first_kept_seq: 7,
            mid_turn: false,
            mode: None,
            draft_seq: None,
            native: false,
            user_words: UserWordsCount {
                kept: 3,
                left_out: 0
            }
        }),
        r#"{"first_kept_seq":7,"mid_turn":false,"mode":null,"tokens_after":120,"tokens_before":900,"trigger":"auto","type":"compaction","user_words":{"kept":3,"left_out":0}}"#
    );
    assert_eq!(
        line(Event::Compaction {
            trigger: CompactionTrigger::Auto,
            tokens_before: 900,
            tokens_after: 150,
            first_kept_seq: 5,
            mid_turn: false,
            mode: Some(CompactionMode::Ahead),
            draft_seq: Some(12),
            native: false,
            user_words: UserWordsCount {
                kept: 40,
                left_out: 110
            }
        }),
        r#"{"draft_seq":12,"first_kept_seq":5,"mid_turn":false,"mode":"ahead","tokens_after":150,"tokens_before":900,"trigger":"auto","type":"compaction","user_words":{"kept":40,"left_out":110}}"#
    );
    assert_eq!(
        line(Event::SummaryDraftStarted { first_kept_seq: 5 }),
        r#"{"first_kept_seq":5,"type":"summary_draft_started"}"#
    );
    assert_eq!(
        line(Event::SummaryDraft {
            seq: 12,
            first_kept_seq: 5,
            tokens: 300
        }),
        r#"{"first_kept_seq":5,"seq":12,"tokens":300,"type":"summary_draft"}"#
    );
    assert_eq!(
        line(Event::MemoryChanged {
            action: "add",
            id: "k3",
            scope: MemoryScope::Project,
            text: "use tabs",
            session: None
        }),
        r#"{"action":"add","id":"k3","scope":"project","session":null,"text":"use tabs","type":"memory_changed"}"#
    );
    assert_eq!(
        line(Event::TurnCompleted {
            text: "done",
            steps: 2,
            max_steps_reached: false,
            finish_reason: Some(finish_reason(&FinishReason::ToolCalls)),
            usage: EventUsage::new(
                &Usage {
                    prompt_tokens: 10,
                    completion_tokens: 2,
                    cached_tokens: 4,
                    reasoning_tokens: 1,
                    ..Usage::default()
                },
                None
            )
        }),
        r#"{"finish_reason":"tool_calls","max_steps_reached":false,"steps":2,"text":"done","type":"turn_completed","usage":{"cached_tokens":4,"completion_tokens":2,"prompt_tokens":10,"reasoning_tokens":1}}"#
    );
    assert!(
        line(Event::TurnCompleted {
            text: "",
            steps: 1,
            max_steps_reached: false,
            finish_reason: None,
            usage: EventUsage::new(&Usage::default(), Some(0.25))
        })
        .ends_with(r#""usage":{"cached_tokens":0,"completion_tokens":0,"cost_usd":0.25,"prompt_tokens":0,"reasoning_tokens":0}}"#)
    );
    let restored = ["src/a.rs".to_owned()];
    let none: [String; 0] = [];
    assert_eq!(
        line(Event::Rewind {
            to_seq: 12,
            turns: 2,
            restored: &restored,
            removed: &none,
            left_alone: vec![PathReason {
                path: "b.txt",
                reason: "it was changed since eonyx wrote it"
            }],
            notes: Vec::new(),
            not_undone: &["cargo build".to_owned()],
            keep_files: false,
        }),
        r#"{"keep_files":false,"left_alone":[{"path":"b.txt","reason":"it was changed since eonyx wrote it"}],"not_undone":["cargo build"],"notes":[],"removed":[],"restored":["src/a.rs"],"to_seq":12,"turns":2,"type":"rewind"}"#
    );
    assert_eq!(
        line(Event::Fork {
            id: "20260705T091500-1a2b3c4d",
            title: "4",
            forked_from: ForkPoint {
                id: "20260705T080000-00000001",
                seq: 9
            }
        }),
        r#"{"forked_from":{"id":"20260705T080000-00000001","seq":9},"id":"20260705T091500-1a2b3c4d","title":"4","type":"fork"}"#
    );
    assert_eq!(
        line(Event::Error {
            class: "usage",
            message: "no prompt"
        }),
        r#"{"class":"usage","message":"no prompt","type":"error"}"#
    );
    assert_eq!(
        line(Event::TaskStarted {
            id: "call_1",
            session: "20260705T091500-1a2b3c4d",
            profile: "explore",
            description: "find the parser"
        }),
        r#"{"description":"find the parser","id":"call_1","profile":"explore","session":"20260705T091500-1a2b3c4d","type":"task_started"}"#
    );
    assert_eq!(
        line(Event::TaskCompleted {
            id: "call_1",
            session: "20260705T091500-1a2b3c4d",
            steps: 3,
            is_error: false
        }),
        r#"{"id":"call_1","is_error":false,"session":"20260705T091500-1a2b3c4d","steps":3,"type":"task_completed"}"#
    );
    assert_eq!(
        Event::Text { delta: "hi" }.to_child_line("call_1").unwrap(),
        r#"{"delta":"hi","task":"call_1","type":"text"}"#
    );
}
