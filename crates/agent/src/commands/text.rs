//! Texts every frontend shows alike: what commands report (rendered by
//! [`super::render()`]), and the lines the cli subcommands print the same
//! way (`eonyx context`, `eonyx skills`, `eonyx hooks`, `eonyx memory`).

pub mod context;
pub mod lists;
pub mod status;

use eonyx_core::SessionId;
use eonyx_core::goal::{GoalRecord, GoalStatus};
use eonyx_core::memory::MemoryEntry;
use eonyx_core::pin::Pin;
use eonyx_core::plan::{StepStatus, WorkPlan};
use eonyx_store::Forked;

use super::frontend::Exported;
use crate::Agent;
use crate::rewind::{FileAction, RewindPlan, RewindReport};

/// `/context`'s estimate: `context: ~N of W tokens (P%), compaction at …`.
pub fn context_estimate(agent: &Agent) -> String {
    let st = agent.context_status();
    format!(
        "context: ~{} of {} tokens ({:.0}%), compaction at {}",
        st.estimate,
        st.window,
        st.percent,
        agent
            .trigger()
            .tokens
            .map_or("off".to_owned(), |t| format!("~{t} tokens"))
    )
}

/// Where a rewind goes back to, in words.
pub fn as_of(to_seq: u64) -> String {
    match to_seq {
        0 => "the start of the session".to_owned(),
        n => format!("the conversation as of #{n}"),
    }
}

/// What a rewind will do, shown before the REPL asks.
pub fn rewind_plan(plan: &RewindPlan) -> String {
    let mut s = format!(
        "rewind {} turn(s), back to {}:",
        plan.turns.len(),
        as_of(plan.to_seq)
    );
    for t in &plan.turns {
        let first = t.text.lines().next().unwrap_or("");
        s.push_str(&format!(
            "\n  #{} {}",
            t.seq,
            eonyx_core::text::ellipsize(first, 70)
        ));
    }
    if plan.keep_files {
        s.push_str("\nfiles: left as they are (--keep-files)");
    } else if plan.files.is_empty() {
        s.push_str("\nfiles: none changed by write_file / edit_file in these turns");
    } else {
        s.push_str("\nfiles:");
        for f in &plan.files {
            s.push_str(&match &f.action {
                FileAction::Restore => format!("\n  restore {}", f.shown),
                FileAction::Remove => format!("\n  remove  {} (created in these turns)", f.shown),
                FileAction::Unchanged => format!("\n  already as before: {}", f.shown),
                FileAction::LeftAlone(why) => format!("\n  leave alone {}: {why}", f.shown),
            });
            if let Some(note) = &f.note {
                s.push_str(&format!(" ({note})"));
            }
        }
    }
    if !plan.commands.is_empty() {
        s.push_str("\nnot undone (shell commands):");
        for c in &plan.commands {
            s.push_str(&format!("\n  {}", eonyx_core::text::ellipsize(c, 100)));
        }
    }
    s
}

/// What a rewind did: one line per kind of outcome.
pub fn rewound(r: &RewindReport) -> String {
    let mut s = format!("rewound {} turn(s): back to {}", r.turns, as_of(r.to_seq));
    if r.keep_files {
        s.push_str("; files left as they are (--keep-files)");
    }
    let list = |v: &[String]| v.join(", ");
    if !r.restored.is_empty() {
        s.push_str(&format!("\nrestored: {}", list(&r.restored)));
    }
    if !r.removed.is_empty() {
        s.push_str(&format!("\nremoved: {}", list(&r.removed)));
    }
    for (path, why) in &r.notes {
        s.push_str(&format!("\nnote: {path}: {why}"));
    }
    for (path, why) in &r.left_alone {
        s.push_str(&format!("\nleft alone: {path}: {why}"));
    }
    if !r.not_undone.is_empty() {
        s.push_str(&format!(
            "\nnot undone (shell commands): {}",
            r.not_undone.join("; ")
        ));
    }
    s
}

/// Where `/fork` left the session.
pub fn forked(original: &SessionId, f: &Forked) -> String {
    format!(
        "forked: now in session {} ({}), a copy of {original} as of #{}; the original is unchanged (`eonyx -s {original}` to go back)",
        f.title, f.id, f.seq
    )
}

/// `path` with `home` written `~` (an absolute path under it).
pub fn tilde(path: &str, home: Option<&str>) -> String {
    match home
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| !h.is_empty())
        .and_then(|h| path.strip_prefix(h))
        .filter(|r| r.starts_with('/'))
    {
        Some(r) => format!("~{r}"),
        None => path.to_owned(),
    }
}

/// The width in characters of each column of a table: the widest of the
/// header and every row.
pub fn column_widths<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> [usize; N] {
    std::array::from_fn(|i| {
        rows.iter()
            .chain(std::iter::once(header))
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
    })
}

/// The pins in force: `2. never touch migrations/ · 3. …`.
pub fn pins(pins: &[Pin]) -> String {
    pins.iter()
        .map(|p| format!("{}. {}", p.id, eonyx_core::text::ellipsize(&p.text, 60)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The one line a goal's status change is shown with (and `run --goal`'s
/// verdict).
pub fn goal_line(g: &GoalRecord) -> String {
    match g.status {
        GoalStatus::Active if g.turns_used == 0 => format!(
            "goal set: {} (eonyx continues until it is achieved; budget {} turns; Ctrl-C pauses)",
            g.text, g.max_turns
        ),
        GoalStatus::Active => format!("goal active again: {}", g.text),
        GoalStatus::Paused => format!(
            "goal paused: {}; /goal resume or `eonyx run -c` goes on",
            g.reason.as_deref().unwrap_or("by the user")
        ),
        GoalStatus::Achieved => format!(
            "goal achieved: {}",
            g.evidence.as_deref().unwrap_or("no evidence given")
        ),
        GoalStatus::Blocked => format!(
            "goal blocked: {}",
            g.reason.as_deref().unwrap_or("no reason given")
        ),
        GoalStatus::BudgetLimited => format!(
            "goal stopped: the budget of {} continuation turns is used up (budget_limited); /goal resume gives it another",
            g.max_turns
        ),
        GoalStatus::Cleared => "goal cleared".to_owned(),
    }
}

/// `/goal` alone: the goal and its status, or how to set one.
pub fn goal(agent: &Agent) -> Vec<String> {
    match agent.goal() {
        Some(g) => vec![
            format!("goal: {}", g.text),
            format!("status: {}", g.status_line()),
        ],
        None => vec![
            "no goal; set one with /goal TEXT (eonyx continues until it is achieved)".to_owned(),
        ],
    }
}

/// No plan yet.
pub const NO_PLAN: &str = "no plan yet; the model makes one with the plan tool";

/// A plan as a checklist: `[x]` completed, `[>]` in progress, `[ ]`
/// pending, under a line with the progress.
pub fn checklist(plan: &WorkPlan) -> String {
    let mut out = format!("plan ({}):", plan.progress());
    for s in &plan.steps {
        let mark = match s.status {
            StepStatus::Completed => "[x]",
            StepStatus::InProgress => "[>]",
            StepStatus::Pending => "[ ]",
        };
        out.push_str(&format!("\n  {mark} {}", s.step));
    }
    if let Some(n) = &plan.note {
        out.push_str(&format!("\n  note: {n}"));
    }
    out
}

/// Which session is in use: `new session T (ID)` or `resumed session T
/// (ID, N messages)`.
pub fn session(agent: &Agent) -> String {
    let (id, title, count) = (agent.session_id(), agent.title(), agent.message_count());
    if agent.resumed() {
        format!("resumed session {title} ({id}, {count} messages)")
    } else {
        format!("new session {title} ({id})")
    }
}

/// A memory entry added (`add`) or removed: `memory: remembered [ID]
/// (SCOPE): TEXT`.
pub fn memory_changed(action: &str, entry: &MemoryEntry) -> String {
    let verb = if action == "add" {
        "remembered"
    } else {
        "forgot"
    };
    format!(
        "memory: {verb} [{}] ({}): {}",
        entry.id.as_deref().unwrap_or_default(),
        entry.scope,
        entry.text
    )
}

/// What an export could not read, one warning each.
pub fn skipped(id: &SessionId, skipped: &eonyx_export::Skipped) -> Vec<String> {
    let mut out = Vec::new();
    if skipped.torn_tail_bytes > 0 {
        out.push(format!(
            "session {id} ends with a torn line ({} bytes, a write that never finished): exported what is readable; `eonyx sessions doctor` repairs the file",
            skipped.torn_tail_bytes
        ));
    }
    if skipped.bad_lines + skipped.unknown_lines > 0 {
        out.push(format!(
            "skipped {} unreadable line(s) and {} record(s) of unknown type in {id}: exported what is readable",
            skipped.bad_lines, skipped.unknown_lines
        ));
    }
    out
}

/// Where an export went.
pub fn exported(x: &Exported) -> String {
    format!(
        "exported session {} as {} to {}",
        x.id,
        x.format.as_str(),
        x.path
    )
}
