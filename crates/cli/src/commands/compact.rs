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
    let opts = ui::options(global, None)?;
    let mode = ui::mode(global, Mode::Final);
    ui::runtime()?.block_on(async move {
        let ui::Session {
            mut agent,
            mut view,
            interrupts,
        } = ui::start(printer, opts, choice, mode, false).await?;
        let cancel = interrupts.begin();
        let result = {
            let mut sink = |ev| view.event(ev);
            agent
                .compact_now(args.focus.as_deref(), &mut sink, &cancel)
                .await
        };
        interrupts.end();
        match result {
            Ok(rec) => {
                if mode == Mode::Json {
                    view.json(&Event::CompactedSession {
                        session: &agent.session_id().to_string(),
                        record: &rec,
                    });
                } else {
                    view.printer.outln(&rec.summary)?;
                }
                Ok(Status::Success)
            }
            Err(e) => {
                view.failed(&e);
                Err(ui::agent_error(e))
            }
        }
    })
}
