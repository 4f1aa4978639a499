//! What the user said (docs/compaction.md#what-the-user-said): the section
//! a compaction record keeps, and which user-role messages are the user's
//! own words rather than something eonyx wrote in the user's place (hook
//! context, a goal's continuation, a job's exit, a pin, a `!command`'s
//! output). Building the section is `eonyx-compact`'s.

use serde::{Deserialize, Serialize};

/// The heading the section starts with.
pub const HEADING: &str = "## What the user said";

/// How a `!command` the user ran starts the message that carries it.
pub const COMMAND_HEADER: &str = "The user ran a shell command and saw its output:";

/// The section a compaction keeps (`user_words` in its record): the
/// rendered text, heading included, and how many user messages it holds
/// and left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserWords {
    pub text: String,
    /// Messages in the section, whole or with their middle cut.
    pub kept: u64,
    /// Messages left out for the budget (`recall` returns them).
    pub left_out: u64,
}

/// How the user messages eonyx writes itself start. `[job N … — a notice
/// from eonyx, not user input]` is told by its end as well.
const NOTICE_PREFIXES: &[&str] = &[
    "[context from the ",
    "[eonyx: goal continuation",
    crate::provider::SUMMARIZER_INSTRUCTION_PREFIX,
    COMMAND_HEADER,
    "[Stop hook] ",
    "[SubagentStop hook] ",
];

/// How a job's exit notice ends ([`crate::job::exit_notice`]).
const JOB_NOTICE_END: &str = "— a notice from eonyx, not user input]";

/// Whether a user-role message with this text was written by eonyx (a
/// notice) rather than typed, piped or sent by the user.
pub fn is_eonyx_notice(text: &str) -> bool {
    let t = text.trim_start();
    NOTICE_PREFIXES.iter().any(|p| t.starts_with(p))
        || crate::pin::NOTICE_PREFIXES.iter().any(|p| t.starts_with(p))
        || (t.starts_with("[job ") && t.trim_end().ends_with(JOB_NOTICE_END))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_told_from_the_users_words() {
        for notice in [
            crate::job::exit_notice(3, crate::job::JobState::Exited(0), 41, "npm run dev"),
            crate::pin::pin_notice("keep it"),
            crate::pin::unpin_notice("keep it"),
            "[context from the SessionStart hook]\nhi".to_owned(),
            format!("{COMMAND_HEADER}\n$ ls\nexit status: 0\n"),
            "[eonyx: goal continuation 1 of 20] go on".to_owned(),
            "[Stop hook] not yet".to_owned(),
        ] {
            assert!(is_eonyx_notice(&notice), "{notice}");
        }
        for said in [
            "never touch migrations/",
            "[job 3] is mine, Grace owns it",
            "actually, use SQLite",
        ] {
            assert!(!is_eonyx_notice(said), "{said}");
        }
    }
}
