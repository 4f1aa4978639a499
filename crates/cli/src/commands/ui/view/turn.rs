//! The view's side of a turn's edges: it starts (what was attached), a
//! `!command` runs and finishes, the turn finishes or fails, a summary
//! starts being written ahead.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eonyx_agent::tools::Tee;
use eonyx_agent::{AgentError, AgentEvent, CommandRun, TurnOutcome, UserInput};

use super::{Mode, View};
use crate::event::{Event, EventUsage, finish_reason};
use crate::printer::Printer;

impl View<'_> {
    /// A summary started being written ahead (a JSON event only: the REPL's
    /// prompt shows it).
    pub fn draft_started(&mut self, first_kept_seq: u64) {
        if self.mode == Mode::Json {
            self.json(&Event::SummaryDraftStarted { first_kept_seq });
        }
    }

    /// A turn starts: what was attached (stderr), the `turn_started` event.
    pub fn turn_started(&mut self, input: &UserInput) {
        for a in &input.attached {
            self.printer.info(&format!("attached {a}"));
        }
        if self.mode == Mode::Json {
            self.json(&Event::TurnStarted { input: &input.text });
        }
    }

    /// Where a `!command`'s output goes as it arrives: stdout (it is what
    /// the user asked to see), stderr with `--json` (stdout holds only
    /// events). The flag says whether the output so far ends a line.
    pub fn command_tee(&mut self) -> (Tee, Arc<AtomicBool>) {
        let ended = Arc::new(AtomicBool::new(true));
        let seen = ended.clone();
        let json = self.mode == Mode::Json;
        let mut printer = Printer::new();
        let tee: Tee = Box::new(move |bytes: &[u8]| {
            if let Some(last) = bytes.last() {
                seen.store(*last == b'\n', Ordering::Relaxed);
            }
            if json {
                printer.err_bytes(bytes);
            } else {
                let _ = printer.out_bytes(bytes).and_then(|()| printer.flush());
            }
        });
        (tee, ended)
    }

    /// After a `!command`: its outcome on stderr (and a `command` event).
    pub fn command_finished(&mut self, command: &str, run: &CommandRun, ended: &AtomicBool) {
        if !ended.load(Ordering::Relaxed) {
            if self.mode == Mode::Json {
                self.printer.err_raw("\n");
            } else {
                let r = self.printer.out("\n").and_then(|()| self.printer.flush());
                self.out(r);
            }
        }
        if let Some(w) = &run.warning {
            self.event(AgentEvent::Warning(w.clone()));
        }
        let cut = if run.cut > 0 {
            format!(
                " ({} of its {} bytes, past tools.output_cap_bytes)",
                run.bytes - run.cut,
                run.bytes
            )
        } else {
            String::new()
        };
        self.printer.info(&format!(
            "{}; the model gets the command and its output{cut} with your next message",
            run.outcome
        ));
        if self.mode == Mode::Json {
            self.json(&Event::Command {
                command,
                outcome: &run.outcome,
                is_error: run.is_error,
                bytes: run.bytes,
                cut: run.cut,
            });
        }
    }

    pub fn turn_finished(&mut self, outcome: &TurnOutcome) {
        self.stop_spinner();
        self.reasoning.close(self.printer);
        if outcome.blocked.is_some() && self.mode != Mode::Json {
            // The hook's note said why; nothing was sent.
            return;
        }
        match self.mode {
            Mode::Json => self.json(&Event::TurnCompleted {
                text: &outcome.text,
                steps: outcome.steps,
                max_steps_reached: outcome.max_steps_reached,
                finish_reason: outcome.finish_reason.as_ref().map(finish_reason),
                usage: EventUsage::new(&outcome.usage, outcome.cost_usd),
            }),
            Mode::Stream => {
                if self.streamed_any {
                    self.end_stream_line();
                } else if !outcome.text.is_empty() {
                    let r = self.printer.outln(&outcome.text);
                    self.out(r);
                }
            }
            Mode::Final => {
                if !outcome.text.is_empty() {
                    let r = self.printer.outln(&outcome.text);
                    self.out(r);
                }
            }
        }
    }

    pub fn failed(&mut self, err: &AgentError) {
        self.stop_spinner();
        self.reasoning.close(self.printer);
        self.end_stream_line();
        if self.mode == Mode::Json {
            let r = self
                .printer
                .json_error(err.class().name(), &err.to_string());
            self.out(r);
        }
    }
}
