//! How `/rewind [N] [--keep-files]` and `/fork [N]` are shown
//! (docs/cli.md#rewind-and-fork) beside the command layer's text (which
//! also words the question before a rewind): a `rewind` or `fork` event
//! with `--json`.

use eonyx_agent::rewind::RewindReport;
use eonyx_core::SessionId;
use eonyx_store::Forked;

use super::View;
use crate::event::{Event, ForkPoint, PathReason};

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
