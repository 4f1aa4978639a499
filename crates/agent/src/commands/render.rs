//! What a command reports ([`Shown`]) as text, once for every frontend:
//! lines, each with its [`Tone`]. The REPL and batch runs print each line
//! (a warning with its prefix, [`Tone::Data`] on stdout); ACP sends them
//! as the reply's text. A frontend chooses where and in what colour a
//! line goes, never its words.

use super::frontend::Shown;
use super::table::{Surface, help};
use super::text::{self, context, lists, status};
use crate::Agent;
use crate::mining::review;
use crate::permission_rules;

/// How a line is meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Information about what was done or what is.
    Info,
    /// Something to look at or correct.
    Warn,
    /// What the command was asked for, as data (`/plan`'s checklist: on
    /// stdout in a terminal).
    Data,
    /// What an agent event already said where the frontend shows events
    /// beside its commands' reports (a goal changed: the terminal shows
    /// its event's line); a frontend that shows events apart (ACP's
    /// notices) shows this too.
    Echo,
}

/// One line (or lines: `\n` inside) of a command's report, in the
/// grouping frontends write them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub tone: Tone,
    pub text: String,
}

fn info(text: impl Into<String>) -> Line {
    Line {
        tone: Tone::Info,
        text: text.into(),
    }
}

fn warn(text: impl Into<String>) -> Line {
    Line {
        tone: Tone::Warn,
        text: text.into(),
    }
}

fn infos(lines: Vec<String>) -> Vec<Line> {
    lines.into_iter().map(info).collect()
}

fn warns(lines: Vec<String>) -> Vec<Line> {
    lines.into_iter().map(warn).collect()
}

/// `shown` as lines, for `surface` (whose commands `/help` lists);
/// paths under `home` are written `~/…`. `agent` is read for what the
/// report names only by kind (`/context`, `/skills`, …).
pub fn render(agent: &Agent, shown: &Shown, surface: Surface, home: Option<&str>) -> Vec<Line> {
    match shown {
        Shown::Help => vec![info(help(surface))],
        Shown::Note(s) => vec![info(s.as_str())],
        Shown::Warning(s) => vec![warn(s.as_str())],
        Shown::Renamed(title) => vec![info(format!("renamed to {title}"))],
        Shown::Sessions(list) => infos(lists::sessions(agent, list)),
        Shown::Session { notices } => {
            let mut out = vec![info(text::session(agent))];
            out.extend(warns(notices.clone()));
            out
        }
        Shown::Rewound(report) => vec![info(text::rewound(report))],
        Shown::Forked {
            original,
            forked,
            notices,
        } => {
            let mut out = vec![info(text::forked(original, forked))];
            out.extend(warns(notices.clone()));
            out
        }
        Shown::Goal => infos(text::goal(agent)),
        Shown::GoalChanged(goal) => vec![Line {
            tone: Tone::Echo,
            text: text::goal_line(goal),
        }],
        Shown::Plan => match agent.plan() {
            Some(p) => vec![Line {
                tone: Tone::Data,
                text: text::checklist(&p),
            }],
            None => vec![info(text::NO_PLAN)],
        },
        Shown::Exported(x) => {
            let mut out = warns(text::skipped(&x.id, &x.skipped));
            out.push(info(text::exported(x)));
            out
        }
        Shown::Context => infos(context::lines(agent, home)),
        Shown::Memory(entries) => infos(lists::memory(entries.clone())),
        Shown::Remembered(entry) => vec![info(text::memory_changed("add", entry))],
        Shown::Skills => infos(lists::skills(agent, home)),
        Shown::Hooks => infos(lists::hooks(agent.config())),
        Shown::Proposals { pending, costs } => infos(review::listing(pending, costs)),
        Shown::Reviewed(r) => vec![info(review::reviewed(r))],
        Shown::LeftOut(out) => warns(review::left_out(out)),
        Shown::Permissions(rules) if rules.is_empty() => vec![info(permission_rules::NONE)],
        Shown::Permissions(rules) => infos(permission_rules::table(rules)),
        Shown::PermissionForgotten { number, rule } => {
            vec![info(permission_rules::forgotten(*number, rule))]
        }
        Shown::Status(st) => vec![info(status::lines(st, home).join("\n"))],
        Shown::Model(info_) => vec![
            info(info_.to_string()),
            info(format!("models: {}", info_.keys.join(", "))),
        ],
        Shown::ModelSwitched { info: i, notices } => {
            let mut out = warns(notices.clone());
            out.push(info(format!("switched: {i}")));
            out
        }
        Shown::JobsStopped(stopped) => {
            let list: Vec<String> = stopped
                .iter()
                .map(|j| format!("job {} ({})", j.id, j.command))
                .collect();
            vec![info(format!("stopped background {}", list.join(", ")))]
        }
    }
}
