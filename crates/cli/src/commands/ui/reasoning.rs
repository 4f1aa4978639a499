//! A model's reasoning on stderr, never on stdout (docs/models.md, section
//! "Reasoning models and the Responses API"): dimmed, streamed as it comes, and with
//! `ui.reasoning = "fold"` folded to one line once the answer starts.
//!
//! On a terminal, `fold` streams the reasoning on one line that is
//! rewritten in place (its latest words) and replaced by a one-line
//! summary when the answer starts; off a terminal it writes only that one
//! line. `show` streams it all; `hide` shows nothing.

use eonyx_config::ReasoningDisplay;

use crate::printer::Printer;

/// Characters of the folded line.
const FOLD_WIDTH: usize = 100;

/// The reasoning of the current step, as shown so far.
#[derive(Debug, Default)]
pub struct ReasoningView {
    pub display: ReasoningDisplay,
    /// The reasoning streamed in this step (emptied when it is folded).
    text: String,
}

fn dim(printer: &Printer, s: &str) -> String {
    if printer.color() {
        format!("\x1b[2m{s}\x1b[0m")
    } else {
        s.to_owned()
    }
}

/// `s` on one line: whitespace runs become one space.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl ReasoningView {
    pub fn new(display: ReasoningDisplay) -> Self {
        Self {
            display,
            text: String::new(),
        }
    }

    /// A piece of reasoning arrived.
    pub fn delta(&mut self, printer: &Printer, delta: &str) {
        if self.display == ReasoningDisplay::Hide {
            return;
        }
        self.text.push_str(delta);
        match self.display {
            ReasoningDisplay::Show => printer.err_raw(&dim(printer, delta)),
            ReasoningDisplay::Fold if printer.stderr_is_terminal() => {
                // The latest words, on the line rewritten in place.
                let line = one_line(&self.text);
                let chars: Vec<char> = line.chars().collect();
                let tail: String = chars[chars.len().saturating_sub(FOLD_WIDTH)..]
                    .iter()
                    .collect();
                printer.err_raw(&format!(
                    "\r\x1b[2K{}",
                    dim(printer, &format!("thinking: {tail}"))
                ));
            }
            _ => {}
        }
    }

    /// The answer (or a tool call, or the end of the step) starts: end the
    /// reasoning's line, folded to one line with `fold`.
    pub fn close(&mut self, printer: &Printer) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        match self.display {
            ReasoningDisplay::Show => printer.err_raw("\n"),
            ReasoningDisplay::Fold => {
                let words = text.split_whitespace().count();
                let line = eonyx_core::text::ellipsize(&one_line(&text), FOLD_WIDTH);
                let clear = if printer.stderr_is_terminal() {
                    "\r\x1b[2K"
                } else {
                    ""
                };
                printer.err_raw(&format!(
                    "{clear}{}\n",
                    dim(printer, &format!("thought ({words} words): {line}"))
                ));
            }
            ReasoningDisplay::Hide => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_line_is_one_line() {
        assert_eq!(one_line("a\n\n  b\tc "), "a b c");
    }
}
