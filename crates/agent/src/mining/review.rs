//! Reviewing the proposals (docs/memory.md#review), once for every
//! frontend: the answers (`a`, `r`, `e TEXT`, `s`) and the flags
//! (`--accept ID…`, `--reject ID…`, `--accept-all`) as values, what each
//! does to the [`Inbox`], and the lines that say so. `eonyx memory review`
//! and `/memory review` (REPL, batch, ACP) both go through here.

use eonyx_core::cost::format_usd;
use eonyx_core::memory::MemoryEntry;
use eonyx_store::mining::{CostTotals, Proposal};

use super::{Accepted, Inbox, MineError};

/// The user's answer about one proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewAnswer {
    Accept,
    Reject,
    /// Accept with this text instead (empty: ask for the text).
    Edit(String),
    /// Leave it waiting.
    Skip,
}

/// The question asked about each proposal.
pub const QUESTION: &str = "accept, reject, edit or skip? [a/r/e TEXT/s] ";

impl ReviewAnswer {
    /// An answer as typed: `a`, `r`, `e TEXT`, `s` (or the words; empty
    /// is skip). `Err`: what to say before asking again.
    pub fn parse(line: &str) -> Result<ReviewAnswer, String> {
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match word.to_ascii_lowercase().as_str() {
            "a" | "accept" => Ok(ReviewAnswer::Accept),
            "r" | "reject" => Ok(ReviewAnswer::Reject),
            "e" | "edit" => Ok(ReviewAnswer::Edit(rest.trim().to_owned())),
            "s" | "skip" | "" => Ok(ReviewAnswer::Skip),
            other => Err(format!(
                "`{other}` is not an answer: a (accept), r (reject), e TEXT (edit, then accept) or s (skip)"
            )),
        }
    }
}

/// What an answer or a flag did.
#[derive(Debug, Clone)]
pub enum Reviewed {
    /// Accepted (`edited`: with the user's text).
    Accepted {
        accepted: Accepted,
        edited: bool,
    },
    Rejected(Proposal),
    Skipped(Proposal),
}

/// What `--accept ID…`, `--reject ID…` and `--accept-all` asked for:
/// the flags of `eonyx memory review` and of `/memory review`, declared
/// once (the command line flattens them; [`ReviewFlags::parse`] reads them
/// after the slash command with the same rules).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct ReviewFlags {
    /// Accept these proposals.
    #[arg(long, value_name = "ID", num_args = 1.., conflicts_with_all = ["reject", "accept_all"])]
    pub accept: Vec<String>,
    /// Reject these proposals (never proposed again).
    #[arg(long, value_name = "ID", num_args = 1.., conflicts_with = "accept_all")]
    pub reject: Vec<String>,
    /// Accept every proposal of this project.
    #[arg(long)]
    pub accept_all: bool,
}

/// `/memory review` and its flags, as clap reads them.
#[derive(Debug, clap::Parser)]
#[command(
    name = "/memory review",
    disable_help_flag = true,
    disable_version_flag = true
)]
struct SlashReview {
    #[command(flatten)]
    flags: ReviewFlags,
}

impl ReviewFlags {
    /// Whether any flag was given (none: the proposals are reviewed one by
    /// one, or listed where nobody can be asked).
    pub fn any(&self) -> bool {
        self.accept_all || !self.accept.is_empty() || !self.reject.is_empty()
    }

    /// `--accept ID…`, `--reject ID…`, `--accept-all` as typed after
    /// `/memory review`, read by the same declaration as the command line
    /// (one of `--accept`, `--reject` with `--accept`, `--accept-all`
    /// alone); `Err`: what does not read, in a line.
    pub fn parse(words: &[&str]) -> Result<ReviewFlags, String> {
        let argv = std::iter::once("/memory review").chain(words.iter().copied());
        match <SlashReview as clap::Parser>::try_parse_from(argv) {
            Ok(s) => Ok(s.flags.without_brackets()),
            Err(e) => {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                Err(first.strip_prefix("error: ").unwrap_or(first).to_owned())
            }
        }
    }

    /// The ids as typed, `[id]` or `id`, without the brackets.
    pub fn without_brackets(self) -> ReviewFlags {
        let ids = |v: Vec<String>| -> Vec<String> {
            v.iter()
                .map(|i| i.trim().trim_matches(['[', ']']).to_owned())
                .collect()
        };
        ReviewFlags {
            accept: ids(self.accept),
            reject: ids(self.reject),
            accept_all: self.accept_all,
        }
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn the_slash_flags_read_as_the_command_lines_with_its_conflicts() {
        assert_eq!(
            ReviewFlags::parse(&["--accept", "[a1]", "b2"]).unwrap(),
            ReviewFlags {
                accept: vec!["a1".into(), "b2".into()],
                ..ReviewFlags::default()
            }
        );
        assert!(ReviewFlags::parse(&["--accept-all"]).unwrap().accept_all);
        assert!(!ReviewFlags::parse(&[]).unwrap().any());
        let both = ReviewFlags::parse(&["--accept", "a", "--reject", "b"]).unwrap_err();
        assert!(both.contains("cannot be used with"), "{both}");
        assert!(!both.contains('\n'), "{both}");
        let all = ReviewFlags::parse(&["--reject", "b", "--accept-all"]).unwrap_err();
        assert!(all.contains("cannot be used with"), "{all}");
        let stray = ReviewFlags::parse(&["nope"]).unwrap_err();
        assert!(stray.contains("nope"), "{stray}");
        assert!(ReviewFlags::parse(&["--accept"]).is_err());
    }
}

impl Inbox {
    /// Do what `answer` says with proposal `p`. An edit's text that is
    /// refused (empty, a secret) is an error and the proposal waits.
    pub fn answer(&self, p: &Proposal, answer: &ReviewAnswer) -> Result<Reviewed, MineError> {
        Ok(match answer {
            ReviewAnswer::Accept => Reviewed::Accepted {
                accepted: self.accept(&p.id, None)?,
                edited: false,
            },
            ReviewAnswer::Edit(text) => Reviewed::Accepted {
                accepted: self.accept(&p.id, Some(text.trim()))?,
                edited: true,
            },
            ReviewAnswer::Reject => {
                self.reject(&[p.id.as_str()])?;
                Reviewed::Rejected(p.clone())
            }
            ReviewAnswer::Skip => Reviewed::Skipped(p.clone()),
        })
    }

    /// Do what the flags say (rejections first, then acceptances), each
    /// result in order; an unknown id stops there with an error.
    pub fn apply(&self, flags: &ReviewFlags) -> Result<Vec<Reviewed>, MineError> {
        let mut done = Vec::new();
        if !flags.reject.is_empty() {
            let ids: Vec<&str> = flags.reject.iter().map(String::as_str).collect();
            done.extend(self.reject(&ids)?.into_iter().map(Reviewed::Rejected));
        }
        let accept: Vec<String> = if flags.accept_all {
            self.pending()?.into_iter().map(|p| p.id).collect()
        } else {
            flags.accept.clone()
        };
        for id in &accept {
            done.push(Reviewed::Accepted {
                accepted: self.accept(id, None)?,
                edited: false,
            });
        }
        Ok(done)
    }
}

/// `R requests, T tokens, $C` for all mining so far.
pub fn cost_line(c: &CostTotals) -> String {
    if c.requests == 0 {
        return "no mining requests yet".to_owned();
    }
    format!(
        "{} request{}, {} tokens ({} in, {} out), {}",
        c.requests,
        if c.requests == 1 { "" } else { "s" },
        c.prompt_tokens + c.completion_tokens,
        c.prompt_tokens,
        c.completion_tokens,
        match c.cost_usd {
            Some(usd) => format_usd(usd),
            None => "cost unknown (no pricing for the mining model)".to_owned(),
        }
    )
}

/// The line above a review: how many wait, and what mining cost so far.
pub fn header(waiting: usize, costs: &CostTotals) -> String {
    match waiting {
        0 => format!(
            "no memories proposed from earlier sessions (mining so far: {})",
            cost_line(costs)
        ),
        n => format!(
            "{n} memor{} proposed from earlier sessions (mining so far: {})",
            if n == 1 { "y" } else { "ies" },
            cost_line(costs)
        ),
    }
}

/// One proposal with its source.
pub fn proposal(p: &Proposal) -> String {
    format!(
        "[{}] ({}) {}\n  from session \"{}\" ({}){}",
        p.id,
        p.scope,
        p.text,
        p.title,
        p.session,
        p.seq
            .map_or_else(String::new, |s| format!(", message #{s}"))
    )
}

/// Where nobody can be asked about each proposal (a batch, ACP): how to
/// answer them.
pub const HOW_TO_ANSWER: &str = "accept or reject them with /memory review --accept ID… | --reject ID… | --accept-all, \
     or one by one with /memory review in the REPL (or `eonyx memory review`)";

/// `/memory review` where nobody is asked: the header, each proposal, and
/// how to answer them.
pub fn listing(pending: &[Proposal], costs: &CostTotals) -> Vec<String> {
    let mut lines = vec![header(pending.len(), costs)];
    lines.extend(pending.iter().map(proposal));
    if !pending.is_empty() {
        lines.push(HOW_TO_ANSWER.to_owned());
    }
    lines
}

/// What an answer or a flag did, in a line.
pub fn reviewed(r: &Reviewed) -> String {
    match r {
        Reviewed::Accepted {
            accepted,
            edited: true,
        } => format!(
            "accepted [{}] as edited, memory [{}] ({}): {} (from session {})",
            accepted.proposal.id,
            accepted.entry.id.as_deref().unwrap_or_default(),
            accepted.entry.scope,
            accepted.entry.text,
            accepted.proposal.session
        ),
        Reviewed::Accepted { accepted, .. } => format!(
            "accepted [{}] as memory [{}] ({}): {} (from session {})",
            accepted.proposal.id,
            accepted.entry.id.as_deref().unwrap_or_default(),
            accepted.entry.scope,
            accepted.entry.text,
            accepted.proposal.session
        ),
        Reviewed::Rejected(p) => format!("rejected [{}]: never proposed again", p.id),
        Reviewed::Skipped(p) => format!("skipped [{}]: it waits", p.id),
    }
}

/// What `memory.max_bytes` now leaves out of the `# Memory` section, in
/// lines (none when nothing is left out).
pub fn left_out(out: &[MemoryEntry]) -> Vec<String> {
    if out.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "memory.max_bytes now leaves {} older entr{} out of the prompt (still kept; `eonyx memory` lists all):",
        out.len(),
        if out.len() == 1 { "y" } else { "ies" }
    )];
    lines.extend(out.iter().map(|e| {
        format!(
            "  [{}] ({}) {}",
            e.id.as_deref().unwrap_or("-"),
            e.scope,
            e.text
        )
    }));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_typed() {
        assert_eq!(ReviewAnswer::parse(" a "), Ok(ReviewAnswer::Accept));
        assert_eq!(ReviewAnswer::parse("Reject"), Ok(ReviewAnswer::Reject));
        assert_eq!(
            ReviewAnswer::parse("e  use pnpm "),
            Ok(ReviewAnswer::Edit("use pnpm".to_owned()))
        );
        assert_eq!(ReviewAnswer::parse(""), Ok(ReviewAnswer::Skip));
        assert!(ReviewAnswer::parse("x").is_err());
    }
}
