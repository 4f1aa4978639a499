//! Choosing what to compact: the boundary.

use eonyx_core::{CompactionConfig, MessageRecord, Role};

use crate::estimate::{Estimator, RequestSize};
use crate::view::ContextView;

/// What a compaction will fold into the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The first record kept verbatim; every retained record before it is
    /// summarized. Past the last record when the whole view is compacted.
    pub first_kept_seq: u64,
    /// How many of the view's records (from the start) are compacted.
    pub compacted_len: usize,
    /// The boundary lies inside the current user turn, after a complete
    /// tool exchange (the turn alone was over the budget).
    pub mid_turn: bool,
}

impl Plan {
    /// The compacted records (`view` must be the view the plan was made for).
    pub fn compacted<'a>(&self, view: &'a ContextView) -> &'a [MessageRecord] {
        let r = view.records();
        &r[..self.compacted_len.min(r.len())]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The summary already covers every message that may go (the retained
    /// turns are all that is left).
    #[error(
        "nothing to compact: the summary already covers every message except the turns kept verbatim"
    )]
    NothingToCompact,
}

/// Choose the boundary.
///
/// Boundaries lie only at user messages, so a tool call and its results
/// stay together. The last `keep_turns` user turns stay verbatim unless
/// `keep_tokens` (when > 0) or `target_tokens` (the budget for the retained
/// messages, see [`crate::tail_budget`]) forces a later boundary, never
/// dropping below one turn; when the current turn alone is over
/// `target_tokens`, the boundary goes inside it, after a complete tool
/// exchange (`mid_turn`). Looks only at the retained tail: cost grows with
/// the turns kept, not with the history.
pub fn plan(
    view: &ContextView,
    cfg: &CompactionConfig,
    estimator: &Estimator,
    target_tokens: u64,
) -> Result<Plan, PlanError> {
    let recs = view.records();
    let n = recs.len();
    let k = (cfg.keep_turns as usize).max(1);
    let tokens = |s: RequestSize| estimator.tokens_for(s);

    // Scan back from the end: tail sizes at the last k user messages, and
    // the cut points inside the last turn.
    let mut tail = RequestSize::default();
    let mut starts: Vec<(usize, u64)> = Vec::with_capacity(k);
    let mut cuts: Vec<(usize, u64)> = Vec::new();
    if n > 0 && is_cut(recs, n) {
        cuts.push((n, 0));
    }
    for i in (0..n).rev() {
        tail += view.sent_size(i);
        if recs[i].message.role == Role::User {
            starts.push((i, tokens(tail)));
            if starts.len() == k {
                break;
            }
        } else if starts.is_empty() {
            let t = tokens(tail);
            if t > target_tokens && !cuts.is_empty() {
                // The last turn is over the budget and every earlier cut
                // keeps even more: the answer is among the cuts found.
                break;
            }
            if i > 0 && is_cut(recs, i) {
                cuts.push((i, t));
            }
        }
    }
    starts.reverse();
    cuts.reverse();

    let seq_at = |j: usize| {
        recs.get(j)
            .map(|r| r.seq)
            .unwrap_or_else(|| view.last_seq() + 1)
    };
    let last = starts.len().saturating_sub(1);
    for (pos, &(b, t)) in starts.iter().enumerate() {
        let fits_cap = cfg.keep_tokens == 0 || t <= cfg.keep_tokens || pos == last;
        if fits_cap && t <= target_tokens {
            if b == 0 {
                return Err(PlanError::NothingToCompact);
            }
            return Ok(Plan {
                first_kept_seq: seq_at(b),
                compacted_len: b,
                mid_turn: false,
            });
        }
    }
    // The last turn alone is over the budget: cut inside it.
    if let Some(&(j, _)) = cuts
        .iter()
        .find(|(_, t)| *t <= target_tokens)
        .or_else(|| cuts.last())
    {
        return Ok(Plan {
            first_kept_seq: seq_at(j),
            compacted_len: j,
            mid_turn: true,
        });
    }
    match starts.last() {
        Some(&(b, _)) if b > 0 => Ok(Plan {
            first_kept_seq: seq_at(b),
            compacted_len: b,
            mid_turn: false,
        }),
        _ => Err(PlanError::NothingToCompact),
    }
}

/// Whether a boundary before index `j` follows a complete tool exchange:
/// `recs[j-1]` is a tool result, `recs[j]` (if any) is not, and the
/// assistant message before the results got a result for every call.
fn is_cut(recs: &[MessageRecord], j: usize) -> bool {
    if j == 0 || recs[j - 1].message.role != Role::Tool {
        return false;
    }
    if recs.get(j).is_some_and(|r| r.message.role == Role::Tool) {
        return false;
    }
    let mut i = j - 1;
    while recs[i].message.role == Role::Tool {
        if i == 0 {
            return false;
        }
        i -= 1;
    }
    let results = &recs[i + 1..j];
    let a = &recs[i].message;
    a.role == Role::Assistant
        && !a.tool_calls.is_empty()
        && a.tool_calls.iter().all(|c| {
            results
                .iter()
                .any(|r| r.message.tool_call_id.as_deref() == Some(c.id.as_str()))
        })
}
