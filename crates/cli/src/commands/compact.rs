//! `eonyx compact [-s ID] [--focus TEXT]`: compact a session now.

use eonyx_agent::SessionChoice;
use eonyx_core::SessionId;

use super::ui::{self, Mode};
use crate::cli::{CompactArgs, GlobalArgs};
use crate::event::Event;
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &CompactArgs,
) -> anyhow::Result<Status> {
    let choice = match &args.session {
        Some(id) => SessionChoice::Id(SessionId::parse(id)?),
        None => SessionChoice::Continue,
    };
    ui::with_session(printer, global, choice, false, |mut s| async move {
        let cancel = s.interrupts.begin();
        let events = s.agent.events();
        let compact = s.agent.compact_now(args.focus.as_deref(), &cancel);
        let result = events.deliver(compact, |ev| s.view.event(ev)).await;
        s.interrupts.end();
        match result {
            Ok(rec) => {
                if s.view.mode == Mode::Json {
                    s.view.json(&Event::CompactedSession {
                        session: &s.agent.session_id().to_string(),
                        record: &rec,
                    });
                } else {
                    s.view.printer.outln(&rec.summary)?;
                }
                Ok(Status::Success)
            }
            Err(e) => {
                s.view.failed(&e);
                Err(e.into())
            }
        }
    })
}
