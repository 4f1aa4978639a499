//! `## What the user said` (docs/compaction.md#what-the-user-said): every
//! user message of the compacted part, verbatim, as `[#SEQ] text`, in the
//! conversation's order, within `compaction.user_words_tokens`. Over the
//! budget the oldest messages fill a quarter of it (the task statement),
//! the newest the rest, and one line between names what was left out for
//! `recall`; one message larger than its share keeps its start and its end.
//!
//! Invariant: a pure function of the records and the budget in
//! characters, so the section a compaction records is the same however
//! often it is rebuilt from the same file.

use eonyx_core::said::{HEADING, UserWords, is_eonyx_notice};
use eonyx_core::{CompactionConfig, Content, MessageRecord, Part, Role};

use crate::estimate::Estimator;

/// The default budget: this share of the window…
pub const USER_WORDS_WINDOW_SHARE: u64 = 5;
/// …and at most this many tokens.
pub const USER_WORDS_MAX_TOKENS: u64 = 20_000;

/// Separator between two messages of the section.
const SEP: &str = "\n\n";

/// Room kept for the line naming what was left out.
const GAP_LINE_CHARS: usize = 200;

/// The smallest share a cut message keeps (its start and end).
const MIN_CUT_CHARS: usize = 80;

/// `compaction.user_words_tokens` for a `window`-token model: the
/// configured value (never more than half the window), else a fifth of
/// the window, at most [`USER_WORDS_MAX_TOKENS`]; 0 turns the section off.
pub fn user_words_budget(cfg: &CompactionConfig, window: u64) -> u64 {
    match cfg.user_words_tokens {
        Some(t) => t.min(window / 2),
        None => (window / USER_WORDS_WINDOW_SHARE).min(USER_WORDS_MAX_TOKENS),
    }
}

/// A compaction's section and the line its summarizer is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub words: UserWords,
    /// For the summarizer's instruction: which user messages eonyx keeps
    /// verbatim itself.
    pub note: String,
}

/// The user's own words in a message: the text typed or sent, each
/// `@file` body as `[attached: PATH]`, each image as `[image]`. `None`
/// for what eonyx wrote in the user's place (a notice) and for a message
/// with nothing in it.
pub fn said_text(content: &Content) -> Option<String> {
    let (text, images) = match content {
        Content::Text(t) => (t.clone(), 0),
        Content::Parts(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    Part::Image { .. } => None,
                })
                .collect();
            let images = parts
                .iter()
                .filter(|p| matches!(p, Part::Image { .. }))
                .count();
            (texts.join("\n"), images)
        }
    };
    if is_eonyx_notice(&text) {
        return None;
    }
    let mut out = without_attachments(&text, images > 0);
    for _ in 0..images {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("[image]");
    }
    (!out.trim().is_empty()).then_some(out)
}

const ATTACHED: &str = "\n\nAttached: ";

/// The name an `Attached:` block at `rest` (just after [`ATTACHED`])
/// stands for when `typed` mentions it as `@NAME` or `@"NAME"`, when it is
/// an absolute path or a URI (an ACP client's embedded file), or when it
/// is an image's line (`NAME (image/png, 12 KB)`) and the message has
/// images (`--image` files are not mentioned).
fn attached_name<'a>(rest: &'a str, typed: &str, has_images: bool) -> Option<&'a str> {
    let line = rest.split('\n').next().unwrap_or("");
    let mentioned = |name: &str| {
        !name.is_empty()
            && (typed.contains(&format!("@{name}")) || typed.contains(&format!("@\"{name}\"")))
    };
    let embedded = line.starts_with('/') || line.contains("://");
    if mentioned(line) || (embedded && !line.contains(" (image/")) {
        return Some(line);
    }
    let image = line
        .rsplit_once(" (image/")
        .filter(|(_, tail)| tail.ends_with(')'))
        .map(|(name, _)| name);
    match image {
        Some(name) if has_images || mentioned(name) => Some(name),
        _ => None,
    }
}

/// `text` with each attached file's block (`\n\nAttached: PATH\n…`) shown
/// as `[attached: PATH]`: the typed text ends at the first block whose
/// name it mentions.
fn without_attachments(text: &str, has_images: bool) -> String {
    let starts: Vec<usize> = text.match_indices(ATTACHED).map(|(i, _)| i).collect();
    let Some(first) = starts.iter().position(|&i| {
        attached_name(&text[i + ATTACHED.len()..], &text[..i], has_images).is_some()
    }) else {
        return text.to_owned();
    };
    let typed = &text[..starts[first]];
    let mut out = typed.to_owned();
    for &i in &starts[first..] {
        if let Some(name) = attached_name(&text[i + ATTACHED.len()..], typed, has_images) {
            out.push_str(&format!("\n[attached: {name}]"));
        }
    }
    out
}

/// One message as the section shows it.
struct Entry {
    seq: u64,
    text: String,
    chars: usize,
}

impl Entry {
    fn line(&self) -> String {
        format!("[#{}] {}", self.seq, self.text)
    }

    /// The line cut to about `max` characters: its start and its end, and
    /// a line between saying how much was cut.
    fn cut(&self, max: usize) -> String {
        let keep = max.max(MIN_CUT_CHARS);
        let n = self.text.chars().count();
        if n <= keep {
            return self.line();
        }
        let head = keep / 2;
        let tail = keep - head;
        let start: String = self.text.chars().take(head).collect();
        let end: String = self.text.chars().skip(n - tail).collect();
        format!(
            "[#{}] {start}\n[… {} of {n} characters of this message cut here; `recall` returns it whole …]\n{end}",
            self.seq,
            n - keep
        )
    }
}

/// The section for the user messages among `records` (oldest first),
/// within `budget_tokens` counted with `estimator`'s ratio; `None` when
/// the budget is 0 or the user said nothing there.
pub fn user_words(
    records: &[MessageRecord],
    budget_tokens: u64,
    estimator: &Estimator,
) -> Option<Said> {
    if budget_tokens == 0 {
        return None;
    }
    let entries: Vec<Entry> = records
        .iter()
        .filter(|r| r.message.role == Role::User)
        .filter_map(|r| {
            let text = said_text(&r.message.content)?;
            let chars = format!("[#{}] ", r.seq).len() + text.chars().count() + SEP.len();
            Some(Entry {
                seq: r.seq,
                text,
                chars,
            })
        })
        .collect();
    let (first, last) = (entries.first()?.seq, entries.last()?.seq);
    let budget = (budget_tokens as f64 * estimator.ratio()) as usize;
    let total: usize = entries.iter().map(|e| e.chars).sum();
    let mut lines = Vec::new();
    let mut left_out: Vec<u64> = Vec::new();
    if total <= budget {
        lines.extend(entries.iter().map(Entry::line));
    } else {
        // The oldest up to a quarter of the budget (all of it for a
        // message that is alone).
        let head_share = if entries.len() == 1 {
            budget
        } else {
            budget / 4
        };
        let mut used = 0;
        let mut head = 0;
        while head < entries.len() {
            let e = &entries[head];
            if used + e.chars <= head_share {
                lines.push(e.line());
                used += e.chars;
            } else if head == 0 {
                lines.push(e.cut(head_share));
                used += head_share;
            } else {
                break;
            }
            head += 1;
            if used >= head_share {
                break;
            }
        }
        // The newest up to the rest.
        let tail_share = budget.saturating_sub(used + GAP_LINE_CHARS);
        let mut tail: Vec<String> = Vec::new();
        let mut used = 0;
        let mut from = entries.len();
        while from > head {
            let e = &entries[from - 1];
            if used + e.chars <= tail_share {
                tail.push(e.line());
                used += e.chars;
            } else if tail.is_empty() {
                tail.push(e.cut(tail_share));
                used = tail_share;
            } else {
                break;
            }
            from -= 1;
            if used >= tail_share {
                break;
            }
        }
        tail.reverse();
        left_out = entries[head..from].iter().map(|e| e.seq).collect();
        if let (Some(a), Some(b)) = (left_out.first(), left_out.last()) {
            lines.push(format!(
                "[… {} user message(s) left out here (#{a}–#{b}) to keep this section within compaction.user_words_tokens; `recall` returns them verbatim …]",
                left_out.len()
            ));
        }
        lines.extend(tail);
    }
    let kept = (entries.len() - left_out.len()) as u64;
    let text = format!("{HEADING}\n\n{}", lines.join(SEP));
    let note = match (left_out.first(), left_out.last()) {
        (Some(a), Some(b)) => format!(
            "eonyx keeps the user's own messages from #{first} to #{last} verbatim after your summary (\"{HEADING}\") except #{a}–#{b}: do not copy the kept ones; keep what still matters of #{a}–#{b}."
        ),
        _ => format!(
            "eonyx keeps every user message from #{first} to #{last} verbatim after your summary (\"{HEADING}\"): do not copy them; summarize what came of them."
        ),
    };
    Some(Said {
        words: UserWords {
            text,
            kept,
            left_out: left_out.len() as u64,
        },
        note,
    })
}

#[cfg(test)]
mod tests;
