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
//! - What the user sends is one call, [`user_turn`] (or [`turn`] then
//!   [`after_turn`], for a frontend with idle work between): the turn, then
//!   the goal loop, which writes each continuation, runs its turn, counts
//!   the budget and stops on achieved, blocked, budget or a cancel, or
//!   pauses the goal when a turn fails. Frontends render its events, pass
//!   the cancel through [`Frontend::interruptible`] and show the
//!   [`GoalEnd`]; none of them continues or pauses a goal.
//!
//! Adding a command: one row in [`table::COMMANDS`] (name, synopsis, help
//! line, ACP hint, where it is offered, a new [`Kind`]) and one arm in
//! [`run`] calling its handler, which reports through [`Frontend::show`]
//! (a new [`Shown`] variant when it shows something new, with its text in
//! [`render()`]) and ends with an [`Outcome`]. Help, Tab completion and ACP's
//! command list follow from the row; no frontend names the command.

pub mod args;
mod frontend;
mod goal;
mod pins;
pub mod render;
mod run;
mod session;
mod skill;
pub mod table;
pub mod text;

pub use frontend::{Answer, Exported, Frontend, GoalEnd, Outcome, Shown, TurnKind};
pub use goal::{after_turn, turn, user_turn};
pub use render::{Line, Tone, render};
pub use run::run;
pub use session::{GoalStart, RunEnd, close_session, end_session, run_prompt, start_session};
pub use skill::{Offered, Prompt, offered_with_skills, parse_prompt, skill_request};
pub use table::{
    ArgCompletion, COMMANDS, Command, Drafting, Invocation, Kind, Offer, Parsed, Surface, find,
    help, offered, parse,
};
