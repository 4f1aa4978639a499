//! Shows agent events: streamed text, tool calls, progress, JSON events.

use std::sync::Mutex;
use std::time::Duration;

use eonyx_core::provider::BoxFuture;

use super::text::{child_line, debug_enabled, hook_note, preview};
use crate::event::Event;
use crate::printer::Printer;
use eonyx_agent::tools::ToolEvent;
use eonyx_agent::{Agent, AgentEvent};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

mod turn;

/// How answers are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Stream text to stdout as it arrives (REPL).
    Stream,
    /// Print each turn's final answer (batch, `run`).
    Final,
    /// JSONL events on stdout.
    Json,
}

/// Shows agent events.
pub struct View<'p> {
    pub printer: &'p mut Printer,
    pub mode: Mode,
    spinner: Option<ProgressBar>,
    streamed_any: bool,
    pub last_error: Option<std::io::Error>,
    /// The user to ask before a slash command acts (the REPL); `None` in
    /// batch runs, which just act.
    pub asker: Option<Box<dyn Ask>>,
    /// While a task's child event is shown: the task's call id (JSON
    /// events get it as `task`).
    task: Option<String>,
    /// Each running task's description, by call id.
    tasks: std::collections::HashMap<String, String>,
    /// The model's reasoning on stderr (`ui.reasoning`).
    pub reasoning: super::reasoning::ReasoningView,
}

impl<'p> View<'p> {
    pub fn new(printer: &'p mut Printer, mode: Mode) -> Self {
        Self {
            printer,
            mode,
            spinner: None,
            streamed_any: false,
            last_error: None,
            asker: None,
            task: None,
            tasks: Default::default(),
            reasoning: Default::default(),
        }
    }

    fn out(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r
            && self.last_error.is_none()
        {
            self.last_error = Some(e);
        }
    }

    fn spin(&mut self, msg: &str) {
        if self.mode == Mode::Json || !self.printer.stderr_is_terminal() {
            return;
        }
        self.stop_spinner();
        let pb = ProgressBar::new_spinner();
        pb.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            pb.set_style(style);
        }
        pb.set_message(msg.to_owned());
        pb.enable_steady_tick(Duration::from_millis(100));
        self.spinner = Some(pb);
    }

    fn stop_spinner(&mut self) {
        if let Some(pb) = self.spinner.take() {
            pb.finish_and_clear();
        }
    }

    /// Write one JSON event (`--json`); a task child's carries `task`.
    pub fn json(&mut self, ev: &Event<'_>) {
        let r = match &self.task {
            Some(task) => self.printer.child_event(ev, task),
            None => self.printer.event(ev),
        };
        self.out(r);
    }

    pub fn session(&mut self, agent: &Agent) {
        if self.mode == Mode::Json {
            let (id, title) = (agent.session_id().to_string(), agent.title().to_owned());
            self.json(&Event::Session {
                id: &id,
                title: &title,
                resumed: agent.resumed(),
                messages: agent.message_count(),
            });
        } else {
            self.printer
                .info(&eonyx_agent::commands::text::session(agent));
        }
    }

    pub fn event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::StepStarted { .. } => self.spin("waiting for the model"),
            AgentEvent::ReasoningDelta(t) => {
                self.stop_spinner();
                match self.mode {
                    Mode::Json => self.json(&Event::Reasoning { delta: &t }),
                    _ if self.task.is_some() => {}
                    _ => {
                        self.end_stream_line();
                        self.reasoning.delta(self.printer, &t);
                    }
                }
            }
            AgentEvent::TextDelta(t) => {
                self.stop_spinner();
                self.reasoning.close(self.printer);
                match self.mode {
                    Mode::Stream => {
                        self.streamed_any = true;
                        let r = self.printer.out(&t).and_then(|_| self.printer.flush());
                        self.out(r);
                    }
                    Mode::Json => self.json(&Event::Text { delta: &t }),
                    Mode::Final => {}
                }
            }
            AgentEvent::ToolCall(call) => {
                self.stop_spinner();
                self.reasoning.close(self.printer);
                if self.mode == Mode::Json {
                    self.json(&Event::ToolCall {
                        id: &call.id,
                        name: &call.name,
                        arguments: &call.arguments,
                    });
                } else {
                    self.end_stream_line();
                    self.printer.info(&format!(
                        "→ {} {}",
                        call.name,
                        preview(&call.arguments_json(), 120)
                    ));
                }
            }
            AgentEvent::ToolResult {
                call_id,
                name,
                output,
                is_error,
            } => {
                if self.mode == Mode::Json {
                    self.json(&Event::ToolResult {
                        id: &call_id,
                        name: &name,
                        is_error,
                        bytes: output.len(),
                        preview: preview(&output, 200),
                    });
                } else {
                    let first = output.lines().next().unwrap_or("");
                    self.printer.info(&format!(
                        "  {} ({} bytes){}",
                        preview(first, 100),
                        output.len(),
                        if is_error { " [error]" } else { "" }
                    ));
                }
            }
            AgentEvent::FileChanged(change) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(&Event::FileChanged {
                        path: &change.path,
                        added: change.added,
                        removed: change.removed,
                    });
                } else if !take_shown(&change.diff) {
                    self.end_stream_line();
                    self.printer.diff(&change.diff);
                }
            }
            AgentEvent::CompactionStarted { trigger } => {
                self.end_stream_line();
                self.spin(&format!("compacting ({})", trigger.as_str()));
            }
            AgentEvent::Compacted(rec) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(&Event::compaction(&rec));
                } else {
                    let ahead = if rec.mode == Some(eonyx_core::CompactionMode::Ahead) {
                        ", with the summary written ahead"
                    } else if rec.native.is_some() {
                        ", written by the provider"
                    } else {
                        ""
                    };
                    self.end_stream_line();
                    self.printer.info(&format!(
                        "compacted ({}{ahead}): ~{} → ~{} tokens; see `eonyx sessions show --effective`",
                        rec.trigger.as_str(),
                        rec.tokens_before,
                        rec.tokens_after
                    ));
                }
            }
            // The REPL's prompt shows it (docs/repl.md, section "The REPL"); a JSON event
            // otherwise.
            AgentEvent::SummaryDraft(d) => {
                if self.mode == Mode::Json {
                    self.json(&Event::SummaryDraft {
                        seq: d.seq,
                        first_kept_seq: d.first_kept_seq,
                        tokens: d.tokens,
                    });
                }
            }
            AgentEvent::StepUsage(_) => self.reasoning.close(self.printer),
            AgentEvent::Notice(m) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(&Event::Notice { message: &m });
                } else {
                    self.end_stream_line();
                    self.printer.info(&m);
                }
            }
            AgentEvent::Hook {
                event,
                command,
                exit_code,
                decision,
                millis,
                reason,
            } => {
                if self.mode == Mode::Json {
                    self.json(&Event::Hook {
                        event: event.as_str(),
                        command: &command,
                        exit_code,
                        decision,
                        ms: millis,
                        reason: reason.as_deref(),
                    });
                } else if let Some(note) = hook_note(event, &command, decision, reason.as_deref()) {
                    self.stop_spinner();
                    self.end_stream_line();
                    self.printer.info(&note);
                }
            }
            AgentEvent::Debug(m) => {
                if debug_enabled() {
                    self.stop_spinner();
                    if self.mode == Mode::Json {
                        self.json(&Event::Debug { message: &m });
                    } else {
                        self.end_stream_line();
                        self.printer.info(&format!("debug: {m}"));
                    }
                }
            }
            AgentEvent::Warning(m) => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(&Event::Warning { message: &m });
                } else {
                    self.end_stream_line();
                    self.printer.warn(&m);
                }
            }
            AgentEvent::Tool(ToolEvent::Recall {
                query,
                scope,
                matches,
                returned,
            }) => {
                self.stop_spinner();
                self.end_stream_line();
                let noun = if matches == 1 { "match" } else { "matches" };
                self.printer.info(&format!("recall: {matches} {noun}"));
                if self.mode == Mode::Json {
                    self.json(&Event::Recall {
                        query: &query,
                        scope,
                        matches,
                        returned,
                    });
                }
            }
            AgentEvent::Tool(ToolEvent::WebFetch {
                url,
                status,
                bytes,
                cached,
            }) => {
                self.stop_spinner();
                self.end_stream_line();
                let from = if cached { " (cached)" } else { "" };
                self.printer.info(&format!(
                    "web_fetch: {url} · {status} · {bytes} bytes{from}"
                ));
                if self.mode == Mode::Json {
                    self.json(&Event::WebFetch {
                        url: &url,
                        status,
                        bytes,
                        cached,
                    });
                }
            }
            // The agent turns tool warnings into `AgentEvent::Warning`.
            AgentEvent::Tool(ToolEvent::Warning(m)) => {
                self.stop_spinner();
                self.end_stream_line();
                self.printer.warn(&m);
            }
            AgentEvent::MemoryChanged { action, entry } => self.memory_changed(action, &entry),
            AgentEvent::Plan(plan) => {
                self.stop_spinner();
                self.plan_changed(&plan);
            }
            AgentEvent::Goal(goal) => {
                self.stop_spinner();
                self.goal_changed(&goal);
            }
            AgentEvent::GoalContinue {
                turns_used,
                max_turns,
            } => {
                self.stop_spinner();
                self.goal_continues(turns_used, max_turns);
            }
            AgentEvent::TaskStarted {
                call_id,
                session,
                profile,
                description,
            } => {
                self.stop_spinner();
                if self.mode == Mode::Json {
                    self.json(&Event::TaskStarted {
                        id: &call_id,
                        session: session.as_str(),
                        profile: &profile,
                        description: &description,
                    });
                } else {
                    self.end_stream_line();
                    self.printer.info(&format!(
                        "task ({profile}): {description} · session {session}"
                    ));
                }
                self.tasks.insert(call_id, description);
            }
            AgentEvent::TaskCompleted {
                call_id,
                session,
                steps,
                is_error,
            } => {
                self.tasks.remove(&call_id);
                if self.mode == Mode::Json {
                    self.json(&Event::TaskCompleted {
                        id: &call_id,
                        session: session.as_str(),
                        steps,
                        is_error,
                    });
                }
            }
            AgentEvent::Task { call_id, event } => self.child_event(call_id, *event),
            AgentEvent::JobStarted {
                id, command, log, ..
            } => {
                if self.mode == Mode::Json {
                    self.json(&Event::JobStarted {
                        job: id,
                        command: &command,
                        log: &log,
                    });
                } else {
                    self.end_stream_line();
                    self.printer
                        .info(&format!("job {id} started: {command} (log {log})"));
                }
            }
            AgentEvent::JobExited {
                id,
                command,
                status,
                secs,
                ..
            } => {
                if self.mode == Mode::Json {
                    self.json(&Event::JobExited {
                        job: id,
                        command: &command,
                        status: &status,
                        secs,
                    });
                } else {
                    self.stop_spinner();
                    self.end_stream_line();
                    self.printer
                        .info(&format!("job {id} {status} after {secs} s: {command}"));
                }
            }
        }
    }

    /// An event of a task's child. With `--json` it is the event itself,
    /// with `task` set; otherwise one indented line for each tool call
    /// and notice of the child, never its text or tool output.
    fn child_event(&mut self, call_id: String, event: AgentEvent) {
        // A child's own task: shown under the innermost task.
        if let AgentEvent::Task { call_id, event } = event {
            return self.child_event(call_id, *event);
        }
        if self.mode == Mode::Json {
            let outer = self.task.replace(call_id);
            self.event(event);
            self.task = outer;
            return;
        }
        if let AgentEvent::TaskStarted {
            call_id: inner,
            description,
            ..
        } = &event
        {
            self.tasks.insert(inner.clone(), description.clone());
        }
        let Some(line) = child_line(&event) else {
            return;
        };
        self.stop_spinner();
        self.end_stream_line();
        let label = self
            .tasks
            .get(&call_id)
            .map_or(call_id.as_str(), String::as_str);
        // No spinner while tasks run: a child's approval question may be
        // drawn at any moment, and a spinner would draw over it.
        self.printer
            .info(&format!("  │ {}: {line}", preview(label, 40)));
    }

    /// One stderr line per memory change (JSON mode too) and a
    /// `memory_changed` event in JSON mode.
    pub fn memory_changed(&mut self, action: &str, entry: &eonyx_core::memory::MemoryEntry) {
        self.settle_line();
        self.printer
            .info(&eonyx_agent::commands::text::memory_changed(action, entry));
        if self.mode == Mode::Json {
            self.memory_json(action, entry);
        }
    }

    /// The `memory_changed` event (`--json`).
    pub fn memory_json(&mut self, action: &str, entry: &eonyx_core::memory::MemoryEntry) {
        self.json(&Event::MemoryChanged {
            action,
            id: entry.id.as_deref().unwrap_or_default(),
            scope: entry.scope,
            text: &entry.text,
            session: entry.session.as_deref(),
        });
    }

    /// No spinner, and a streamed line ended, before a line of its own.
    pub(super) fn settle_line(&mut self) {
        self.stop_spinner();
        self.end_stream_line();
    }

    pub(super) fn end_stream_line(&mut self) {
        if self.mode == Mode::Stream && self.streamed_any {
            let r = self.printer.out("\n").and_then(|_| self.printer.flush());
            self.out(r);
            self.streamed_any = false;
        }
    }
}

static SHOWN: Mutex<Option<String>> = Mutex::new(None);

/// Asks the user one question while a command runs (the REPL's line
/// editor); `None` (no answer, Ctrl-C, end of input) counts as "no".
pub trait Ask: Send + Sync {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Option<String>>;
}

/// Note that the approval question just showed `diff` (see [`take_shown`]).
pub fn remember_shown(diff: &str) {
    if let Ok(mut s) = SHOWN.lock() {
        *s = Some(diff.to_owned());
    }
}

/// Whether `diff` was just shown by the approval question (so the view need not repeat
/// it); forgets it either way.
pub fn take_shown(diff: &str) -> bool {
    SHOWN
        .lock()
        .ok()
        .and_then(|mut s| s.take())
        .is_some_and(|d| d == diff)
}
