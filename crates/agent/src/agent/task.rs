//! The `task` tool (docs/tools.md#task): a child agent in a child session.
//!
//! A child is an ordinary [`Agent`] built from its parent without opening
//! anything again (`child`): the same store, providers and window when the
//! profile keeps the parent's model, the parent's stable prefix (context
//! files, memory, skills listing) byte for byte with its profile's
//! `# Task` section after it, and the parent's permissions, narrowed by the
//! profile. `group` runs the `task` calls of one step concurrently (at
//! most `tasks.max_parallel` at once), forwards each child's events
//! labelled with its call, and returns the results in call order, each
//! headed by a [`eonyx_core::tool::TaskHeader`] line.
//!
//! Invariants:
//! - A child never has a tool or permission its parent lacks: its tools are
//!   the parent's narrowed by the profile, its approvals the parent's
//!   policy and flags, and the user it asks the parent's (labelled).
//! - Nothing of a child's tool output reaches the parent: the parent's
//!   session gets only the tool result (header and final answer).
//! - Every child session file stays consistent when cancelled: a child is
//!   an ordinary turn loop with its own writer.

mod child;
mod group;
