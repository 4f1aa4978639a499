//! Opening a session's file: new or existing (latest, continue, by id),
//! finishing a rewind a crash interrupted, answering tool calls a killed
//! process left without a result, and building the model-facing view.
//! `open` (starting and switching sessions), `rewind` (`/fork`) and
//! `task` (a child's session) use it; it uses none of them.

use camino::Utf8Path;
use eonyx_compact::ContextView;
use eonyx_config::Config;
use eonyx_config::paths::Project;
use eonyx_core::{Message, Role};
use eonyx_store::{SessionWriter, Store};

use super::SessionChoice;
use crate::error::{AgentError, UsageError};
use crate::rewind::{self, RewindReport};

/// Whether switching sessions reads the `# Memory` section again (a new
/// or resumed session) or keeps it (a fork: its first request must be the
/// original's, byte for byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Memory {
    Reread,
    Keep,
}

/// The result given, on resume, to a tool call that never got one.
pub(crate) const RESUME_INTERRUPTED: &str =
    "interrupted: eonyx stopped before this tool call finished";

/// A session ready for turns.
pub(super) struct Opened {
    pub writer: SessionWriter,
    pub view: ContextView,
    pub message_count: u64,
    pub resumed: bool,
    /// Seq of the last compaction record (0 when none).
    pub compaction_seq: u64,
    /// The skills the last compaction record lists.
    pub skills_in_use: Vec<String>,
    /// The newest summary draft after the last compaction (docs/compaction.md#ahead-of-time-summaries).
    pub draft: Option<eonyx_core::SummaryDraftRecord>,
    /// The goal in force (docs/session-format.md#goal-records).
    pub goal: Option<eonyx_core::goal::GoalRecord>,
    /// What opening it did that the user is told (a rewind finished).
    pub notices: Vec<String>,
    /// Jobs the file says were running when its last process ended.
    pub jobs_ended: Vec<(u32, String)>,
    /// The pins in force (docs/compaction.md#pins).
    pub pins: crate::pins::Pins,
}

impl Opened {
    /// A new session that has no message yet.
    pub(super) fn fresh(writer: SessionWriter, config: &Config) -> Self {
        Opened {
            writer,
            view: ContextView::new(&config.compaction, config.tools.output_cap_bytes),
            message_count: 0,
            resumed: false,
            compaction_seq: 0,
            skills_in_use: Vec::new(),
            draft: None,
            goal: None,
            notices: Vec::new(),
            jobs_ended: Vec::new(),
            pins: Default::default(),
        }
    }
}

/// Open or create the chosen session and build its model-facing view.
pub(super) fn open_session(
    store: &Store,
    config: &Config,
    cwd: &Utf8Path,
    project: &Project,
    choice: &SessionChoice,
) -> Result<Opened, AgentError> {
    let id = match choice {
        SessionChoice::New => None,
        SessionChoice::Id(id) => Some(id.clone()),
        SessionChoice::Latest | SessionChoice::Continue => {
            match store.latest_for_project(&project.root)? {
                Some(s) => Some(s.id),
                None if *choice == SessionChoice::Continue => {
                    return Err(UsageError::NothingToContinue {
                        project: project.root.clone(),
                    }
                    .into());
                }
                None => None,
            }
        }
    };
    match id {
        None => {
            let writer = store.create(cwd, &project.root, Some(&config.model.key))?;
            Ok(Opened::fresh(writer, config))
        }
        Some(id) => {
            let mut writer = store.open_writer(&id)?;
            // A rewind a crash stopped while it restored files is finished
            // first (docs/cli.md#rewind-and-fork).
            let notices = finish_pending(store, &project.root, &mut writer)?
                .map(|r| finished_notice(&r))
                .into_iter()
                .collect();
            let mut loaded = load(store, &id, config)?;
            // A process killed while tools ran leaves calls without results;
            // answer them so the history is consistent for every provider.
            for call_id in std::mem::take(&mut loaded.unanswered) {
                let rec =
                    writer.append_message(&Message::tool_result(call_id, RESUME_INTERRUPTED))?;
                loaded.message_count += 1;
                loaded.view.push(rec);
            }
            Ok(Opened {
                writer,
                view: loaded.view,
                message_count: loaded.message_count,
                resumed: true,
                compaction_seq: loaded.compaction_seq,
                skills_in_use: loaded.skills_in_use,
                goal: loaded.goal,
                draft: loaded.draft,
                notices,
                jobs_ended: loaded.jobs_ended,
                pins: loaded.pins,
            })
        }
    }
}

/// A stored session as its file leaves it, ready to build on.
pub(super) struct Loaded {
    /// The model-facing view of the effective history.
    pub view: ContextView,
    pub message_count: u64,
    /// Seq of the compaction in force (0 when none).
    pub compaction_seq: u64,
    /// The skills the compaction in force lists.
    pub skills_in_use: Vec<String>,
    /// The goal in force (docs/session-format.md#goal-records).
    pub goal: Option<eonyx_core::goal::GoalRecord>,
    /// The newest summary draft after the compaction in force.
    pub draft: Option<eonyx_core::SummaryDraftRecord>,
    /// Tool calls of the last assistant message that have no result.
    pub unanswered: Vec<String>,
    /// Jobs the file says are running: they ended with the process that
    /// wrote it.
    pub jobs_ended: Vec<(u32, String)>,
    /// The pins in force.
    pub pins: crate::pins::Pins,
}

/// Read session `id`'s effective history (what a resume sends) into a
/// [`Loaded`]; used on resume and after a rewind.
pub(super) fn load(
    store: &Store,
    id: &eonyx_core::SessionId,
    config: &Config,
) -> Result<Loaded, AgentError> {
    let effective = store.load_effective(id)?;
    let compaction = effective.compaction.as_ref();
    Ok(Loaded {
        jobs_ended: super::jobs::ended_with_earlier_process(
            compaction.map(|c| c.jobs.as_slice()).unwrap_or_default(),
            &effective.jobs,
        ),
        unanswered: unanswered_calls(&effective.messages),
        pins: crate::pins::Pins::from_file(
            compaction.map(|c| c.pins.as_slice()).unwrap_or_default(),
            &effective.pins,
        ),
        compaction_seq: compaction.map_or(0, |c| c.seq),
        skills_in_use: compaction.map(|c| c.skills.clone()).unwrap_or_default(),
        goal: super::goal_in_force(compaction, effective.goal),
        draft: effective.draft,
        message_count: effective.message_count,
        view: ContextView::from_effective(
            &config.compaction,
            config.tools.output_cap_bytes,
            compaction,
            effective.messages,
        ),
    })
}

/// Tool calls of the last assistant message that have no result after it.
pub(crate) fn unanswered_calls(records: &[eonyx_core::MessageRecord]) -> Vec<String> {
    let Some(pos) = records
        .iter()
        .rposition(|r| r.message.role == Role::Assistant)
    else {
        return Vec::new();
    };
    let answered: std::collections::HashSet<&str> = records[pos + 1..]
        .iter()
        .filter_map(|r| r.message.tool_call_id.as_deref())
        .collect();
    records[pos]
        .message
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect()
}

/// Finish a rewind whose file restore a crash interrupted (its note is
/// still in the file history and its record was not written): restore
/// again (what is restored already counts as such), then append the
/// record. `None` when there was nothing to finish.
fn finish_pending(
    store: &Store,
    root: &Utf8Path,
    writer: &mut SessionWriter,
) -> Result<Option<RewindReport>, AgentError> {
    let history = store.file_history(writer.id());
    let Some(pending) = history.pending() else {
        return Ok(None);
    };
    if writer.next_seq() != pending.at_seq {
        // The record was written before the note could be cleared.
        history.clear_pending()?;
        return Ok(None);
    }
    let records = store.messages_after(writer.id(), pending.to_seq)?;
    let tasks = task_changes(store, writer.id(), &records)?;
    let plan = rewind::plan(&records, pending.to_seq, root, &history, &tasks, false);
    let mut report = rewind::restore(&plan, None);
    writer.append_rewind(pending.to_seq)?;
    history.clear_pending()?;
    report.resumed = true;
    Ok(Some(report))
}

/// What the tasks run in the rewound `records` changed: the messages of
/// this session's child sessions (and theirs) from the first rewound
/// message's time on, each with the child's file history. Their changes are
/// undone with the turns that started them.
pub(super) fn task_changes(
    store: &Store,
    id: &eonyx_core::SessionId,
    records: &[eonyx_core::MessageRecord],
) -> Result<Vec<rewind::Changes>, AgentError> {
    let ran_tasks = records.iter().any(|r| {
        r.message
            .tool_calls
            .iter()
            .any(|c| eonyx_core::ToolName::parse(&c.name) == Some(eonyx_core::ToolName::Task))
    });
    let Some(first) = records.first().filter(|_| ran_tasks) else {
        return Ok(Vec::new());
    };
    let time = |ts: &str| eonyx_core::time::parse_rfc3339(ts).map(|t| t.as_nanosecond());
    let since = time(&first.ts).unwrap_or(i128::MIN);
    let mut out = Vec::new();
    for child in store.descendants(id)? {
        let log = store.read_all(&child.id)?;
        let timeline = log.timeline();
        let records: Vec<eonyx_core::MessageRecord> = log
            .records
            .into_iter()
            .filter_map(|r| match r {
                eonyx_core::Record::Message(m)
                    if !timeline.is_rewound(m.seq) && time(&m.ts).is_some_and(|t| t >= since) =>
                {
                    Some(m)
                }
                _ => None,
            })
            .collect();
        if !records.is_empty() {
            out.push(rewind::Changes {
                records,
                history: store.file_history(&child.id),
            });
        }
    }
    Ok(out)
}

/// The notice for a rewind finished on open.
fn finished_notice(r: &RewindReport) -> String {
    let mut s = format!(
        "finished a rewind to #{} that was interrupted while restoring files: {} restored, {} removed",
        r.to_seq,
        r.restored.len(),
        r.removed.len()
    );
    for (path, why) in &r.left_alone {
        s.push_str(&format!("; left alone {path} ({why})"));
    }
    s
}
