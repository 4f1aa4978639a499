//! What a mining request shows of a session (docs/memory.md#the-request):
//! user and assistant text, each tool call by name and arguments, each
//! result cut to [`RESULT_CHARS`], keys redacted; hook context, goal
//! continuations, summaries and anything else eonyx wrote itself left out,
//! and so is what a rewind took back; cut to the budget keeping the start
//! and the end.

use std::collections::{BTreeSet, VecDeque};

use eonyx_core::timeline::Timeline;
use eonyx_core::{Record, Role};

use crate::secrets::Redactor;

/// A tool result is cut to this many characters.
pub const RESULT_CHARS: usize = 300;

/// A session read for mining: the head and the tail of its lines within
/// the budget, the user messages counted, the seqs that exist.
pub struct Transcript {
    head: Vec<String>,
    head_chars: usize,
    tail: VecDeque<String>,
    tail_chars: usize,
    /// Lines between head and tail that did not fit.
    left_out: usize,
    budget_chars: usize,
    /// Records with a `seq` at or below this are a fork's copy: skipped.
    skip_through: u64,
    pub user_messages: u64,
    pub seqs: BTreeSet<u64>,
    redactor: Redactor,
}

impl Transcript {
    /// An empty transcript of at most `budget_chars`. A fork's header
    /// makes it skip the records the fork copied.
    pub fn new(budget_chars: usize, redactor: Redactor) -> Self {
        Self {
            head: Vec::new(),
            head_chars: 0,
            tail: VecDeque::new(),
            tail_chars: 0,
            left_out: 0,
            budget_chars,
            skip_through: 0,
            user_messages: 0,
            seqs: BTreeSet::new(),
            redactor,
        }
    }

    /// Take one record, in file order; a message `timeline` calls rewound
    /// is left out.
    pub fn push(&mut self, record: Record, timeline: &Timeline) {
        let m = match record {
            Record::Message(m) => m,
            Record::Session(h) => {
                if let Some(f) = &h.forked_from {
                    self.skip_through = f.seq;
                }
                return;
            }
            _ => return,
        };
        if m.seq <= self.skip_through || timeline.is_rewound(m.seq) {
            return;
        }
        self.seqs.insert(m.seq);
        let seq = m.seq;
        let msg = m.message;
        // One message never takes more than half the budget.
        let cap = (self.budget_chars / 2).max(200);
        match msg.role {
            Role::User => {
                let text = msg.content.text();
                // User messages eonyx wrote itself, not the user: left out.
                if eonyx_core::said::is_eonyx_notice(&text) {
                    return;
                }
                self.user_messages += 1;
                let text = self.redactor.scrub(text);
                self.line(format!("#{seq} user: {}", cut(text.trim(), cap)));
            }
            Role::Assistant => {
                let text = msg.content.text();
                if !text.trim().is_empty() {
                    let text = self.redactor.scrub(text);
                    self.line(format!("#{seq} assistant: {}", cut(text.trim(), cap)));
                }
                for call in &msg.tool_calls {
                    let args = self.redactor.scrub(call.arguments_json());
                    self.line(format!(
                        "#{seq} tool call {}: {}",
                        call.name,
                        cut(&args, cap.min(2000))
                    ));
                }
            }
            Role::Tool => {
                let text = self.redactor.scrub(msg.content.text());
                let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
                self.line(format!(
                    "#{seq} tool result: {}",
                    cut(&one_line, RESULT_CHARS)
                ));
            }
        }
    }

    /// The first half of the budget fills with the first lines; the rest
    /// keeps the latest lines, dropping the oldest of them as new ones come.
    fn line(&mut self, line: String) {
        let half = self.budget_chars / 2;
        let n = line.chars().count() + 1;
        if self.left_out == 0 && self.tail.is_empty() && self.head_chars + n <= half {
            self.head_chars += n;
            self.head.push(line);
            return;
        }
        self.tail_chars += n;
        self.tail.push_back(line);
        while self.tail_chars > self.budget_chars.saturating_sub(self.head_chars) {
            match self.tail.pop_front() {
                Some(old) => {
                    self.tail_chars -= old.chars().count() + 1;
                    self.left_out += 1;
                }
                None => break,
            }
        }
    }

    /// The transcript text.
    pub fn render(&self) -> String {
        let mut out = self.head.join("\n");
        if self.left_out > 0 {
            out.push_str(&format!(
                "\n[… {} line(s) of the middle of the session left out to fit the budget …]",
                self.left_out
            ));
        }
        for line in &self.tail {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(line);
        }
        out
    }
}

/// `text`'s first `max` characters, marked with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(max).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eonyx_core::{Message, MessageRecord};

    fn rec(seq: u64, message: Message) -> Record {
        Record::Message(MessageRecord {
            seq,
            ts: String::new(),
            message,
        })
    }

    #[test]
    fn results_are_cut_injected_messages_skipped_and_the_middle_dropped_first() {
        let mut t = Transcript::new(1200, Redactor::default());
        t.skip_through = 1;
        let timeline = Timeline::default();
        t.push(
            rec(1, Message::user("copied from the forked session")),
            &timeline,
        );
        t.push(rec(2, Message::user("we use pnpm, never npm")), &timeline);
        t.push(
            rec(3, Message::tool_result("c1", "x".repeat(5000))),
            &timeline,
        );
        t.push(
            rec(4, Message::user("[context from the SessionStart hook]\nhi")),
            &timeline,
        );
        for i in 5..40 {
            t.push(
                rec(i, Message::assistant(format!("filler number {i}"))),
                &timeline,
            );
        }
        t.push(rec(40, Message::user("do not touch generated/")), &timeline);
        let text = t.render();
        assert!(!text.contains("copied from"), "{text}");
        assert!(
            text.starts_with("#2 user: we use pnpm, never npm"),
            "{text}"
        );
        assert!(
            text.ends_with("#40 user: do not touch generated/"),
            "{text}"
        );
        assert!(text.contains("left out to fit the budget"), "{text}");
        assert!(!text.contains("SessionStart"), "{text}");
        assert!(text.chars().count() <= 1300, "{}", text.chars().count());
        let result_line = text.lines().find(|l| l.contains("tool result")).unwrap();
        assert!(result_line.chars().count() < RESULT_CHARS + 30);
        assert_eq!(t.user_messages, 2);
        assert!(t.seqs.contains(&40) && !t.seqs.contains(&1));
    }

    #[test]
    fn what_a_rewind_took_back_is_left_out() {
        let rewind = eonyx_core::record::RewindRecord {
            seq: 4,
            ts: String::new(),
            to_seq: 1,
        };
        let timeline = Timeline::from_rewinds([&rewind]);
        let mut t = Transcript::new(10_000, Redactor::default());
        t.push(rec(1, Message::user("we use pnpm")), &timeline);
        t.push(rec(2, Message::user("we use npm after all")), &timeline);
        t.push(rec(3, Message::assistant("noted: npm")), &timeline);
        t.push(Record::Rewind(rewind.clone()), &timeline);
        t.push(rec(5, Message::user("and yarn never")), &timeline);
        let text = t.render();
        assert_eq!(text, "#1 user: we use pnpm\n#5 user: and yarn never");
        assert_eq!(t.user_messages, 2);
        assert!(!t.seqs.contains(&2));
    }
}
