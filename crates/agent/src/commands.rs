//! The command layer (ARCHITECTURE.md, "The command layer"): every slash
//! command and the goal loop, once, for every frontend. The REPL, batch
//! runs and ACP sessions only render: they ask [`table`] what exists (help,
//! Tab completion, ACP's `available_commands_update`), hand a line to
//! [`parse`] and an [`Invocation`] to [`run`], show what it reports through
//! their [`Frontend`], and act on the [`Outcome`].
//!
//! - A command that fails for a reason of its own (a bad argument, nothing
//!   to do, an unknown id, no goal) ends [`Outcome::Declined`]: a notice,
//!   and a batch goes on. Only a failure of the machinery under it
//!   ([`Outcome::Failed`]) stops a batch (docs/cli.md#batch-input).
//! - The goal loop ([`continue_goal`], [`run_goal`]) writes each
//!   continuation, runs its turn, counts the budget and stops on achieved,
//!   blocked, budget or a cancel; frontends render its events and pass the
//!   cancel through [`Frontend::interruptible`].
//!
//! Adding a command: one row in [`table::COMMANDS`] (name, synopsis, help
//! line, ACP hint, where it is offered, a new [`Kind`]) and one arm in
//! [`run`] calling its handler, which reports through [`Frontend::show`]
//! (a new [`Shown`] variant when it shows something new, rendered by each
//! frontend) and ends with an [`Outcome`]. Help, Tab completion and ACP's
//! command list follow from the row; no frontend names the command.

mod frontend;
mod goal;
mod pins;
mod run;
pub mod table;
pub mod text;

pub use frontend::{Answer, Exported, Frontend, GoalEnd, Outcome, Shown, TurnKind, own_reason};
pub use goal::{continue_goal, pause_after, run_goal, turn};
pub use run::{fork_turns, rewind_options, run};
pub use table::{
    ArgCompletion, COMMANDS, Command, Drafting, Invocation, Kind, Offer, Parsed, Surface, find,
    help, offered, parse,
};
