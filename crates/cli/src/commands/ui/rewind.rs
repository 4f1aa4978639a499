//! How `/rewind [N] [--keep-files]` and `/fork [N]` are shown
//! (docs/cli.md#rewind-and-fork): the REPL shows what a rewind will do
//! before it asks; what was done is the command layer's text, and a
//! `rewind` or `fork` event with `--json`.

use eonyx_agent::commands::text;
use eonyx_agent::rewind::{FileAction, RewindPlan, RewindReport};
use eonyx_core::SessionId;
use eonyx_store::Forked;

use super::View;
use crate::event::{Event, ForkPoint, PathReason};

/// What the REPL shows before asking.
pub fn describe(plan: &RewindPlan) -> String {
    let mut s = format!(
        "rewind {} turn(s), back to {}:",
        plan.turns.len(),
        text::as_of(plan.to_seq)
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

/// The `rewind` event (`--json`) of what a rewind did; its text is the
/// command layer's.
pub fn rewound_json(view: &mut View<'_>, r: &RewindReport) {
    let ev = Event::Rewind {
        to_seq: r.to_seq,
        turns: r.turns,
        restored: &r.restored,
        removed: &r.removed,
        left_alone: path_reasons(&r.left_alone),
        notes: path_reasons(&r.notes),
        not_undone: &r.not_undone,
        keep_files: r.keep_files,
    };
    view.json(&ev);
}

fn path_reasons(v: &[(String, String)]) -> Vec<PathReason<'_>> {
    v.iter()
        .map(|(p, w)| PathReason { path: p, reason: w })
        .collect()
}

/// The `fork` event (`--json`) after `/fork`: where the session is now.
pub fn forked_json(view: &mut View<'_>, original: &SessionId, f: &Forked) {
    view.json(&Event::Fork {
        id: f.id.as_str(),
        title: &f.title,
        forked_from: ForkPoint {
            id: original.as_str(),
            seq: f.seq,
        },
    });
}
