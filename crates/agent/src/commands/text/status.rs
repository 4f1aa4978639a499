//! `/status`'s lines (docs/repl.md, section "The REPL").

use crate::AgentStatus;

/// The `/status` lines, aligned; the file's path under `home` as `~/…`.
pub fn lines(st: &AgentStatus, home: Option<&str>) -> Vec<String> {
    let t = &st.tokens;
    let cache = t
        .cache_hit_percent()
        .map_or(String::new(), |p| format!(" ({p:.0}% cache hits)"));
    let compactions = match st.last_compaction {
        None => "none yet".to_owned(),
        Some(c) => format!(
            "{}{} (last: {}{})",
            st.compactions,
            if st.native_compactions > 0 {
                format!(", {} by the provider", st.native_compactions)
            } else {
                String::new()
            },
            c.trigger.as_str(),
            if c.native {
                ", native".to_owned()
            } else {
                c.mode
                    .map(|m| format!(", {}", m.as_str()))
                    .unwrap_or_default()
            }
        ),
    };
    let skills = if st.skills.is_empty() {
        "none".to_owned()
    } else {
        format!("{} ({})", st.skills.len(), st.skills.join(", "))
    };
    let mut rows: Vec<(&str, String)> = vec![
        (
            "model",
            format!(
                "{} ({}) · {} · {}",
                st.model_key, st.model_name, st.provider, st.base_url
            ),
        ),
        (
            "window",
            format!("{} tokens ({})", st.window, st.window_source),
        ),
        (
            "context",
            format!(
                "{{ctx {:.0}%}} ~{} tokens next request; compaction at {}{}",
                st.context.percent,
                st.context.estimate,
                st.compaction_at
                    .map_or("off".to_owned(), |t| format!("~{t} tokens")),
                if st.context.summary_ready {
                    " (a summary written ahead is ready)"
                } else {
                    ""
                }
            ),
        ),
        (
            "tokens",
            format!(
                "prompt {} · completion {} (reasoning {}) · cached {}{cache} over {} requests",
                t.prompt, t.completion, t.reasoning, t.cached, t.requests
            ),
        ),
    ];
    if let Some(usd) = st.cost_usd {
        rows.push((
            "cost",
            format!(
                "{} (reported usage × configured prices, tasks included)",
                eonyx_core::cost::format_usd(usd)
            ),
        ));
    }
    rows.push(("compactions", compactions));
    if let Some(c) = st.last_compaction.filter(|c| c.user_words != (0, 0)) {
        rows.push((
            "user said",
            format!(
                "{} message(s) kept verbatim by the last compaction, {} left out (`recall` returns them)",
                c.user_words.0, c.user_words.1
            ),
        ));
    }
    if !st.pins.is_empty() {
        rows.push(("pins", super::pins(&st.pins)));
    }
    rows.extend([
        (
            "memory",
            st.memory_entries
                .map_or("off".to_owned(), |n| format!("{n} entries")),
        ),
        (
            "mining",
            format!(
                "{} proposed (`eonyx memory review`) · {}",
                st.mining_waiting,
                crate::mining::review::cost_line(&st.mining)
            ),
        ),
        ("skills", skills),
    ]);
    if !st.refused.is_empty() {
        rows.push((
            "refused",
            format!(
                "{} (not sent to this model; `eonyx config --reset-limits` forgets)",
                st.refused.join(", ")
            ),
        ));
    }
    if let Some(g) = &st.goal {
        rows.push((
            "goal",
            format!(
                "{} ({}/{} continuation turns) · {}",
                g.status.as_str(),
                g.turns_used,
                g.max_turns,
                eonyx_core::text::ellipsize(&g.text, 80)
            ),
        ));
    }
    if let Some(p) = &st.plan {
        rows.push(("plan", p.progress()));
    }
    rows.push(("sandbox", st.sandbox.clone()));
    if !st.mcp.is_empty() {
        rows.push(("mcp", mcp_row(st)));
    }
    rows.push(("session", format!("{} \"{}\"", st.session_id, st.title)));
    rows.push(("file", super::tilde(st.path.as_str(), home)));
    rows.into_iter()
        .map(|(k, v)| format!("{:<12} {v}", format!("{k}:")))
        .collect()
}

/// `time ready (2 tools), git failed · ~267 tokens per request`.
fn mcp_row(st: &AgentStatus) -> String {
    let servers: Vec<String> = st
        .mcp
        .iter()
        .map(|s| {
            let mut x = format!("{} {}", s.name, s.state.label());
            if s.state == crate::mcp::ServerState::Ready {
                x.push_str(&format!(
                    " ({} tool{}{})",
                    s.tools,
                    if s.tools == 1 { "" } else { "s" },
                    if s.restarted { ", restarted" } else { "" }
                ));
            }
            x
        })
        .collect();
    format!(
        "{} · ~{} tokens per request{}",
        servers.join(", "),
        st.mcp_tokens,
        if st.mcp_deferred {
            " (schemas deferred)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use crate::{ContextStatus, LastCompaction, SessionTokens};
    use eonyx_core::{CompactionMode, CompactionTrigger};

    use super::*;

    #[test]
    fn status_lines_show_window_tokens_cache_and_session() {
        let st = AgentStatus {
            model_key: "default".into(),
            model_name: "gpt-x".into(),
            provider: "openai",
            base_url: "http://127.0.0.1:8080/v1".into(),
            window: 8192,
            window_source: "detected from /props at 2026-07-05T09:15:00Z".into(),
            context: ContextStatus {
                estimate: 2048,
                window: 8192,
                percent: 25.0,
                over_threshold: false,
                summary_ready: false,
            },
            compaction_at: Some(6000),
            tokens: SessionTokens {
                requests: 3,
                prompt: 4000,
                completion: 120,
                cached: 3000,
                reasoning: 80,
            },
            cost_usd: Some(0.0123),
            compactions: 2,
            native_compactions: 0,
            last_compaction: Some(LastCompaction {
                trigger: CompactionTrigger::Auto,
                mode: Some(CompactionMode::SharedPrefix),
                native: false,
                user_words: (12, 3),
            }),
            memory_entries: Some(4),
            skills: vec!["deploy".into()],
            refused: vec!["images"],
            session_id: "20260705T091500-1a2b3c4d".into(),
            title: "7".into(),
            path: "/home/u/.local/share/eonyx/sessions/20260705T091500-1a2b3c4d.jsonl".into(),
            sandbox: "bwrap, workspace-write, no network".into(),
            mcp: vec![
                crate::mcp::ServerStatus {
                    name: "git".into(),
                    transport: "stdio",
                    state: crate::mcp::ServerState::Failed("it did not start".into()),
                    tools: 0,
                    hidden: 0,
                    required: false,
                    restarted: false,
                },
                crate::mcp::ServerStatus {
                    name: "time".into(),
                    transport: "stdio",
                    state: crate::mcp::ServerState::Ready,
                    tools: 2,
                    hidden: 0,
                    required: false,
                    restarted: true,
                },
            ],
            mcp_tokens: 267,
            mcp_deferred: false,
            goal: Some(eonyx_core::goal::GoalRecord {
                turns_used: 3,
                ..eonyx_core::goal::GoalRecord::new("make the tests pass", 20)
            }),
            plan: eonyx_core::plan::WorkPlan::from_args(&serde_json::json!({"steps": [
                {"step": "read the failing test", "status": "completed"},
                {"step": "fix the parser", "status": "in_progress"},
                {"step": "run the suite", "status": "pending"}
            ]}))
            .ok(),
            pins: vec![eonyx_core::pin::Pin {
                id: 2,
                text: "never touch migrations/".into(),
            }],
            mining: eonyx_store::mining::CostTotals {
                requests: 2,
                prompt_tokens: 3000,
                completion_tokens: 40,
                cost_usd: Some(0.002),
            },
            mining_waiting: 1,
        };
        insta::assert_snapshot!(lines(&st, Some("/home/u")).join("\n"), @r#"
        model:       default (gpt-x) · openai · http://127.0.0.1:8080/v1
        window:      8192 tokens (detected from /props at 2026-07-05T09:15:00Z)
        context:     {ctx 25%} ~2048 tokens next request; compaction at ~6000 tokens
        tokens:      prompt 4000 · completion 120 (reasoning 80) · cached 3000 (75% cache hits) over 3 requests
        cost:        $0.0123 (reported usage × configured prices, tasks included)
        compactions: 2 (last: auto, shared-prefix)
        user said:   12 message(s) kept verbatim by the last compaction, 3 left out (`recall` returns them)
        pins:        2. never touch migrations/
        memory:      4 entries
        mining:      1 proposed (`eonyx memory review`) · 2 requests, 3040 tokens (3000 in, 40 out), $0.0020
        skills:      1 (deploy)
        refused:     images (not sent to this model; `eonyx config --reset-limits` forgets)
        goal:        active (3/20 continuation turns) · make the tests pass
        plan:        1/3 completed, in progress: fix the parser
        sandbox:     bwrap, workspace-write, no network
        mcp:         git failed, time ready (2 tools, restarted) · ~267 tokens per request
        session:     20260705T091500-1a2b3c4d "7"
        file:        ~/.local/share/eonyx/sessions/20260705T091500-1a2b3c4d.jsonl
        "#);
    }
}
