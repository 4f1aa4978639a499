//! The one interactive review loop (docs/memory.md#review): each proposal
//! shown, an answer asked (`a`, `r`, `e TEXT`, `s`), applied to the
//! [`Inbox`], and what it did said, until the proposals or the answers
//! end. `eonyx memory review` asks on stdin, the REPL's `/memory review`
//! in its line editor; both through a [`Reviewer`].

use eonyx_core::provider::BoxFuture;
use eonyx_store::mining::Proposal;

use super::review::{self, QUESTION, ReviewAnswer, Reviewed};
use super::{Inbox, MineError};

/// Who answers a review and sees what it does.
pub trait Reviewer: Send {
    /// A line of the review (the header, a proposal, the end).
    fn info(&mut self, line: String);
    /// Something to correct before answering again.
    fn warn(&mut self, line: String);
    /// What an answer did.
    fn reviewed(&mut self, r: Reviewed);
    /// The answer to `question`; `None` at the end of input (Ctrl-C or
    /// Ctrl-D in the REPL): the rest wait.
    fn ask<'a>(&'a mut self, question: &'a str) -> BoxFuture<'a, Option<String>>;
}

/// Ask about each of `pending` in turn; `Ok(true)` when one was accepted
/// (the caller then says what `memory.max_bytes` leaves out).
pub async fn review_each(
    inbox: &Inbox,
    pending: &[Proposal],
    r: &mut dyn Reviewer,
) -> Result<bool, MineError> {
    let costs = inbox.costs()?;
    r.info(review::header(pending.len(), &costs));
    let mut accepted = false;
    'proposals: for p in pending {
        r.info(review::proposal(p));
        loop {
            let Some(answer) = answer(r).await else {
                r.info("the rest wait for a later review".to_owned());
                break 'proposals;
            };
            match inbox.answer(p, &answer) {
                Ok(done) => {
                    accepted |= matches!(done, Reviewed::Accepted { .. });
                    r.reviewed(done);
                    break;
                }
                // An edit refused (empty, a secret): asked again.
                Err(e) if e.class().is_users() => r.warn(format!("{e}; answer again")),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(accepted)
}

/// The next answer that reads (`e` alone asks for the text); `None` at
/// the end of input.
async fn answer(r: &mut dyn Reviewer) -> Option<ReviewAnswer> {
    loop {
        match ReviewAnswer::parse(&r.ask(QUESTION).await?) {
            Ok(ReviewAnswer::Edit(text)) if text.is_empty() => {
                return Some(ReviewAnswer::Edit(r.ask("new text: ").await?));
            }
            Ok(answer) => return Some(answer),
            Err(why) => r.warn(why),
        }
    }
}
