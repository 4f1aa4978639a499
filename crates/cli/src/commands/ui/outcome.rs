//! How a declined slash command is reported (a reason of its own: said,
//! and a batch goes on; docs/cli.md#batch-input).

use super::View;
use super::view::Mode;
use crate::event::Event;

/// Report a declined command: on stderr, and as a `notice` event with
/// `--json` too.
pub fn declined(view: &mut View<'_>, why: String) {
    if view.mode == Mode::Json {
        view.json(&Event::Notice { message: &why });
    }
    view.printer.info(&why);
}
