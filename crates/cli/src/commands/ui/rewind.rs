//! `/rewind [N] [--keep-files]` and `/fork [N]` (docs/cli.md#rewind-and-fork):
//! the REPL shows what a rewind will do and asks; batch runs just do it and
//! report (a `rewind` event with `--json`).

use eonyx_agent::rewind::{FileAction, RewindPlan, RewindReport};
use eonyx_agent::{Agent, RewindOptions};

use super::View;
use super::outcome::{Slash, ended};
use super::view::Mode;
use crate::event::{Event, ForkPoint, PathReason};

const REWIND_USAGE: &str = "usage: /rewind [N] [--keep-files] (N user turns, default 1)";
const FORK_USAGE: &str =
    "usage: /fork [N] (fork before the last N user turns; default: as it is now)";

/// `N` and `--keep-files`, in any order.
fn rewind_options(args: &str) -> Result<RewindOptions, &'static str> {
    let mut opts = RewindOptions {
        turns: 1,
        keep_files: false,
    };
    let mut turns = None;
    for word in args.split_whitespace() {
        match word {
            "--keep-files" => opts.keep_files = true,
            w => match w.parse::<usize>() {
                Ok(n) if n > 0 && turns.is_none() => turns = Some(n),
                _ => return Err(REWIND_USAGE),
            },
        }
    }
    opts.turns = turns.unwrap_or(1);
    Ok(opts)
}

pub async fn rewind(agent: &mut Agent, view: &mut View<'_>, args: &str) -> Slash {
    let opts = match rewind_options(args) {
        Ok(o) => o,
        Err(e) => return Slash::Declined(e.to_owned()),
    };
    let plan = match agent.plan_rewind(opts) {
        Ok(p) => p,
        Err(e) => return ended(e),
    };
    if let Some(asker) = &view.asker {
        view.printer.info(&describe(&plan));
        let yes = loop {
            match asker.ask("rewind? [y]es / [n]o: ").await {
                Some(a) => match a.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => break true,
                    "n" | "no" | "" => break false,
                    _ => continue,
                },
                None => break false,
            }
        };
        if !yes {
            view.printer.info("nothing rewound");
            return Slash::Continue;
        }
    }
    match agent.rewind(&plan) {
        Ok(report) => {
            rewound(view, &report);
            Slash::Continue
        }
        Err(e) => ended(e),
    }
}

/// Where a rewind goes back to, in words.
fn as_of(to_seq: u64) -> String {
    match to_seq {
        0 => "the start of the session".to_owned(),
        n => format!("the conversation as of #{n}"),
    }
}

/// What the REPL shows before asking.
pub fn describe(plan: &RewindPlan) -> String {
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

/// One stderr line per kind of outcome, and the `rewind` event.
pub fn rewound(view: &mut View<'_>, r: &RewindReport) {
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
    view.printer.info(&s);
    if view.mode == Mode::Json {
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
}

fn path_reasons(v: &[(String, String)]) -> Vec<PathReason<'_>> {
    v.iter()
        .map(|(p, w)| PathReason { path: p, reason: w })
        .collect()
}

pub fn fork(agent: &mut Agent, view: &mut View<'_>, args: &str) -> Slash {
    let turns = match args.trim() {
        "" => 0,
        n => match n.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => return Slash::Declined(FORK_USAGE.to_owned()),
        },
    };
    let original = agent.session_id().clone();
    match agent.fork(turns) {
        Ok(f) => {
            view.printer.info(&format!(
                "forked: now in session {} ({}), a copy of {original} as of #{}; the original is unchanged (`eonyx -s {original}` to go back)",
                f.title, f.id, f.seq
            ));
            for n in agent.take_startup_notices() {
                view.printer.warn(&n);
            }
            if view.mode == Mode::Json {
                view.json(&Event::Fork {
                    id: f.id.as_str(),
                    title: &f.title,
                    forked_from: ForkPoint {
                        id: original.as_str(),
                        seq: f.seq,
                    },
                });
            }
            Slash::Continue
        }
        Err(e) => ended(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewind_takes_a_count_and_keep_files_in_any_order() {
        let o = |s| rewind_options(s).ok();
        let opts = |turns, keep_files| Some(RewindOptions { turns, keep_files });
        assert_eq!(o(""), opts(1, false));
        assert_eq!(o("3"), opts(3, false));
        assert_eq!(o("--keep-files 2"), opts(2, true));
        assert_eq!(o("2 --keep-files"), opts(2, true));
        for bad in ["0", "-1", "x", "2 3", "--keep"] {
            assert_eq!(o(bad), None, "{bad}");
        }
    }
}
