//! How a slash command ends: go on, exit, decline (a reason of its own,
//! reported and the batch goes on) or fail (the machinery under it).

use eonyx_agent::AgentError;

use super::View;
use super::view::Mode;
use crate::event::Event;

/// What a slash command asks the loop to do next.
pub enum Slash {
    Continue,
    Exit,
    /// The command did nothing for a reason of its own (a bad argument,
    /// nothing to do): the loop reports it with [`declined`] and goes on,
    /// the exit status untouched (docs/cli.md#batch-input).
    Declined(String),
    /// The machinery under it failed (disk, provider): a batch stops.
    Failed(anyhow::Error),
}

/// Whether `e` is a command's own reason not to act rather than a failure
/// of what runs it: nothing to compact, a bad argument (usage, an
/// attachment, a memory entry refused), a session that does not exist or
/// is in use. Disk, provider and compaction failures are not.
pub fn own_reason(e: &AgentError) -> bool {
    match e {
        AgentError::NothingToCompact | AgentError::Usage(_) | AgentError::Attach(_) => true,
        AgentError::Memory(m) => !matches!(m, eonyx_store::memory::MemoryError::Io { .. }),
        AgentError::Store(s) => s.is_usage() || s.is_not_found() || s.is_in_use(),
        _ => false,
    }
}

/// How an agent error ends a slash command (see [`Slash`]).
pub fn ended(e: AgentError) -> Slash {
    if own_reason(&e) {
        Slash::Declined(e.to_string())
    } else {
        Slash::Failed(e.into())
    }
}

/// Report a declined command: on stderr, and as a `notice` event with
/// `--json` too.
pub fn declined(view: &mut View<'_>, why: String) {
    if view.mode == Mode::Json {
        view.json(&Event::Notice { message: &why });
    }
    view.printer.info(&why);
}
