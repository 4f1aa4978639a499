//! Texts every frontend shows alike (a rewind's and a fork's report, the
//! context estimate).

use eonyx_core::SessionId;
use eonyx_store::Forked;

use crate::Agent;
use crate::rewind::RewindReport;

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
