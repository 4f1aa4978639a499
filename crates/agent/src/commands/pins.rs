//! `/pin TEXT`, `/pins` and `/unpin N` (docs/compaction.md#pins): the
//! handlers, over the agent's pins room.

use super::frontend::{Frontend, Outcome, Shown};
use crate::Agent;
use crate::pins::PinChange;

pub const PIN_USAGE: &str =
    "usage: /pin TEXT (a note eonyx keeps verbatim through every compaction)";

/// `/pin TEXT`: pinned now (a notice tells the model at once).
pub(super) fn pin(agent: &mut Agent, fe: &mut dyn Frontend, text: Option<&str>) -> Outcome {
    let Some(text) = text else {
        return Outcome::Declined(PIN_USAGE.to_owned());
    };
    let said = agent.pin_change(PinChange::Add(text)).map(|p| {
        format!(
            "pinned {}: {} (kept verbatim through every compaction; /unpin {} removes it)",
            p.id, p.text, p.id
        )
    });
    note(agent, fe, said)
}

/// `/unpin N`: a notice now; the pin leaves at the next compaction.
pub(super) fn unpin(agent: &mut Agent, fe: &mut dyn Frontend, line: &str) -> Outcome {
    let n = match super::args::unpin(line) {
        Ok(n) => n,
        Err(why) => return Outcome::Declined(why),
    };
    let said = agent.pin_change(PinChange::Remove(&n)).map(|p| {
        format!(
            "unpinned {}: {} (it leaves the pinned section at the next compaction)",
            p.id, p.text
        )
    });
    note(agent, fe, said)
}

/// `/pins`: the pins in force, numbered as `/unpin` takes them.
pub(super) fn list(agent: &mut Agent, fe: &mut dyn Frontend) -> Outcome {
    let text = if agent.pins().is_empty() {
        "no pins in this session; /pin TEXT pins a note eonyx keeps verbatim through every compaction"
            .to_owned()
    } else {
        agent
            .pins()
            .iter()
            .map(|p| format!("{}. {}", p.id, p.text))
            .collect::<Vec<_>>()
            .join("\n")
    };
    fe.show(agent, Shown::Note(text));
    Outcome::Done
}

fn note(agent: &Agent, fe: &mut dyn Frontend, said: Result<String, crate::AgentError>) -> Outcome {
    match said {
        Ok(text) => {
            fe.show(agent, Shown::Note(text));
            Outcome::Done
        }
        Err(e) => Outcome::of_error(e),
    }
}
